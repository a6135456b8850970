#!/usr/bin/env bash
# @module The consumer path, end to end, as a user takes it from an empty folder: pack the package (the
# real prepack build), then run the README's consumer blocks verbatim (the ```sh blocks after
# `<!-- consumer:install -->` and `<!-- consumer:dev -->`), with only these changes: the package name
# becomes the tarball (it is not on the registry yet, and this must test the code here); the
# `node@22` line runs only where the system Node is older than 22.12, as its comment says; `npm run dev`
# gets a free port and its own state folder; the curl goes to that port. No file of this repository is
# copied in: the starter comes from the package, through `npx workers-ai-guard init`.
# Then it builds for deploy and asks one guarded request per surface (guard.wrap, guardAi, aiGuard):
# each must answer from its own text with no canary left and no piece of 8 characters of the tenant's
# prefix marker (recomputed here from the example's dev secret, as the guard mints it), and a body that
# is not JSON must answer 400.
#
# The consumer's commands run on the system's PATH (this repository's node_modules/.bin taken off it),
# so on a machine with Node 20 this checks the README's Node 22 route too.
#
# Usage: scripts/check-consumer.sh [--keep]   (--keep leaves the temporary project for inspection)
# Quiet on success (a few lines); on failure, the step that failed and its log.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# The consumer's PATH: the system's, without any node_modules/.bin an npm script may have put first.
user_path=$(tr ':' '\n' <<<"$PATH" | grep -v '/node_modules/\.bin$' | paste -sd: -)
# This repository's own steps (pack, the marker) as npm scripts run them: its Node 22 first on PATH.
repo_path="$root/node_modules/.bin:$user_path"
export PATH=$repo_path
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# Locked versions are in npm's cache already; ask the registry only for what is not.
export npm_config_prefer_offline=true
export WRANGLER_SEND_METRICS=false CI=1

keep=${1:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/guard-consumer-XXXXXX")
app=$work/app
log=$work/log
wrangler_pid=
started=$SECONDS

stop_wrangler() {
  [ -n "$wrangler_pid" ] || return 0
  # wrangler runs in its own process group (setsid), with workerd in it: end the group, by its id.
  kill -TERM -- "-$wrangler_pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 -- "-$wrangler_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$wrangler_pid" 2>/dev/null || true
  wrangler_pid=
}
cleanup() {
  stop_wrangler
  if [ "$keep" = --keep ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# Runs one step with its output in $log; on failure prints the step and the log, and exits. A step
# runs in an `if`, where bash ignores `set -e`: so every command in a step ends in `|| return 1`.
step() {
  local name=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    echo "check-consumer: FAILED at: $name" >&2
    cat "$log" >&2
    if [ -f "$work/wrangler.log" ]; then
      echo "--- wrangler dev log" >&2
      tail -n 80 "$work/wrangler.log" >&2
    fi
    exit 1
  fi
}

pack() {
  mkdir -p "$work/pack" || return 1
  (cd "$root" && npm pack --silent --pack-destination "$work/pack") || return 1
}

# The ```sh block after the marker $1 in README.md.
readme_block() {
  awk -v marker="<!-- $1 -->" '$0 == marker { found = 1; next }
       found && /^```/ { if (inside) exit; inside = 1; next }
       inside { print }' "$root/README.md"
}

# Whether the system Node is older than 22.12 (wrangler's minimum).
old_node() {
  PATH=$user_path node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 12) ? 1 : 0)'
}

install() {
  local tarball block line
  tarball=$(ls "$work"/pack/*.tgz) || return 1
  block=$(readme_block consumer:install) || return 1
  [ -n "$block" ] || { echo 'README.md has no ```sh block after <!-- consumer:install -->'; return 1; }
  grep -Eq '^npm i(nstall)? .*workers-ai-guard( |$)' <<<"$block" ||
    { echo "the install block does not install workers-ai-guard:"; echo "$block"; return 1; }
  grep -q '^npx workers-ai-guard init' <<<"$block" ||
    { echo "the install block does not run npx workers-ai-guard init:"; echo "$block"; return 1; }
  block=$(sed -E "/^npm /s#(^|[[:space:]])workers-ai-guard([[:space:]]|\$)#\1$tarball\2#" <<<"$block")
  if ! old_node; then block=$(grep -v '^npm i -D node@22 ' <<<"$block"); fi
  mkdir -p "$app" || return 1
  echo "system node: $(PATH=$user_path node --version)"
  while IFS= read -r line; do
    echo "\$ $line"
    (cd "$app" && PATH=$user_path bash -euo pipefail -c "$line") || return 1
  done <<<"$block"
  grep -Eq '"workers-ai-guard": ?"file:' "$app/package.json" ||
    { echo "workers-ai-guard was not installed from the tarball"; cat "$app/package.json"; return 1; }
  [ -f "$app/src/index.ts" ] && [ -f "$app/worker-configuration.d.ts" ] ||
    { echo "the starter or its types are missing after the block"; ls -la "$app" "$app/src"; return 1; }
}

# A TCP port nobody listens on now.
free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

start_wrangler() {
  port=$(free_port) || return 1
  local inspector dev
  inspector=$(free_port) || return 1
  base=http://127.0.0.1:$port
  dev=$(readme_block consumer:dev | grep -m1 '^npm run dev') ||
    { echo 'README.md: no `npm run dev` in the block after <!-- consumer:dev -->'; return 1; }
  dev=${dev%%#*}
  (
    cd "$app"
    # Its own dev registry, so another `wrangler dev` on this machine is never bound instead.
    PATH=$user_path WRANGLER_REGISTRY_PATH=$work/registry exec setsid $dev -- \
      --ip 127.0.0.1 --port "$port" --inspector-port "$inspector" \
      --persist-to "$work/state" --show-interactive-dev-session=false
  ) >"$work/wrangler.log" 2>&1 &
  wrangler_pid=$!
  for _ in $(seq 240); do
    kill -0 "$wrangler_pid" 2>/dev/null || { echo "npm run dev exited"; return 1; }
    # 401: the Worker answers (no key), so both Workers are up.
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/ask")" = 401 ] && return 0
    sleep 0.25
  done
  echo "npm run dev did not come up in 60 s"
  return 1
}

# The README's curl lines of the dev block, against this run's port: each must answer from its text.
readme_requests() {
  local line out
  while IFS= read -r line; do
    line=${line//localhost:8788/127.0.0.1:$port}
    echo "\$ $line"
    out=$(cd "$app" && bash -euo pipefail -c "$line") || return 1
    echo "$out"
    grep -qF 'Q3 plan' <<<"$out" || { echo "the answer does not quote the question"; return 1; }
    if grep -qi 'cnry_' <<<"$out"; then echo "a canary reached the client"; return 1; fi
  done < <(readme_block consumer:dev | grep '^curl ')
}

# POSTs $2 to path $1 with alice's key; prints the status line then the body.
ask() {
  curl -s -w '\n%{http_code}' "$base$1" -H 'authorization: Bearer dev-key-alice' \
    -H 'content-type: application/json' --data-binary "$2"
}

# Every 8-character piece of alice's prefix marker, one a line, in $work/marker-pieces: the marker opens
# each of her prompts (glm-5.3 is prefix-isolated) and a quote of the prompt's start must not carry any
# of it, prefix or not. Minted by the repository's own code under the example's dev secret.
marker_pieces() {
  local secret
  secret=$(sed -nE 's/^GUARD_SECRET *= *"(.*)"$/\1/p' "$root/examples/consumer/wrangler.dev.toml") ||
    return 1
  [ -n "$secret" ] || { echo 'no GUARD_SECRET in examples/consumer/wrangler.dev.toml'; return 1; }
  (cd "$root" && GUARD_SECRET=$secret npx tsx -e "
    import('./src/core/canary/token.ts').then(async ({ importCanaryKey, prefixMarker }) => {
      const marker = await prefixMarker(await importCanaryKey(process.env.GUARD_SECRET), 'alice')
      for (let i = 0; i + 8 <= marker.length; i++) console.log(marker.slice(i, i + 8))
    })
  ") >"$work/marker-pieces" || return 1
  [ "$(wc -l <"$work/marker-pieces")" = 22 ] || { echo 'expected 22 pieces of the marker'; return 1; }
}

# One guarded request: 200, the answer quotes the request's own text, and carries no canary and no
# piece of the tenant's marker (in any case).
expect_guarded() {
  local path=$1 body=$2 needle=$3 out status
  out=$(ask "$path" "$body") || return 1
  status=${out##*$'\n'}
  out=${out%$'\n'*}
  echo "$path -> $status $out"
  [ "$status" = 200 ] || { echo "expected 200"; return 1; }
  grep -qF "$needle" <<<"$out" || { echo "the answer does not quote '$needle'"; return 1; }
  if grep -qi 'cnry_' <<<"$out"; then echo "a canary reached the client"; return 1; fi
  if grep -qiF -f "$work/marker-pieces" <<<"$out"; then
    echo "a piece of the tenant's prefix marker reached the client"
    return 1
  fi
}

requests() {
  expect_guarded /ask '{"question":"Summarise the WRAP-7731 ledger."}' 'WRAP-7731 ledger' || return 1
  expect_guarded /ask-once '{"question":"Summarise the ONCE-5512 ledger."}' 'ONCE-5512 ledger' ||
    return 1
  expect_guarded /chat '{"messages":[{"role":"user","content":"Summarise the HONO-2290 ledger."}]}' \
    'HONO-2290 ledger' || return 1
  # A first line longer than a quote: the simulator quotes it from a few characters in, so from
  # inside the marker that opens it (as in `nry_y5np…`).
  expect_guarded /ask "{\"question\":\"$(printf 'Summarise the LONG-4410 ledger of %s.' \
    'the quarter, every account and every entry, with totals by region and by month')\"}" \
    'LONG-4410 ledger' || return 1
  local out status
  out=$(ask /chat '{"messages": [') || return 1
  status=${out##*$'\n'}
  echo "/chat (malformed JSON) -> $out"
  [ "$status" = 400 ] || { echo "expected 400 for a body that is not JSON"; return 1; }
  grep -q invalid_request <<<"$out" || { echo "expected code invalid_request"; return 1; }
}

step "the tenant's marker pieces" marker_pieces
step 'npm pack (prepack build)' pack
step "the README's consumer:install block, from an empty folder" install
installed=$(cd "$app" && node -p "['wrangler','@cloudflare/workers-types','typescript','hono'].map(p=>p+'@'+require('./node_modules/'+p+'/package.json').version).join(' ')")
step 'wrangler deploy --dry-run' bash -c "cd '$app' && PATH='$user_path' npx wrangler deploy --dry-run --outdir '$work/out'"
step "the README's npm run dev (consumer + the package's simulator)" start_wrangler
step "the README's curl" readme_requests
step 'guarded requests' requests
stop_wrangler
echo "check-consumer: ok in $((SECONDS - started)) s (system node $(PATH=$user_path node --version), run on $(cd "$app" && PATH=$user_path npx node --version); $installed)"
echo "  from an empty folder: packed, installed, started and type-checked by the README's blocks,"
echo "  built for deploy, and served by its npm run dev in front of the package's simulator:"
echo "  /ask (guard.wrap), /ask-once (guardAi), /chat (aiGuard) answered from their own text, no canary"
echo "  and no piece of 8 characters of alice's prefix marker;"
echo "  a malformed JSON body to /chat answered 400 invalid_request"
