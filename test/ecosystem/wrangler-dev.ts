/**
 * @module `npm start`'s command — `wrangler dev` with the guard and the simulator — on loopback, for the
 * Node tests and the load bench that need the real thing over a socket.
 */
import type { ChildLike, NodeHost } from './node-host'

/** A running `wrangler dev` and how to reach and read it. */
export interface WranglerDev {
  base: string
  child: ChildLike
  dir: string
  log: () => string
}

/**
 * Starts `wrangler dev` on a snapshot of the tree in a temporary directory (edits elsewhere cannot
 * reload the Worker mid-run), with its own dev registry (another `npm start` on this machine is never
 * bound instead), its local D1 migrated, free ports, and its own process group so that `host.stop`
 * ends wrangler and the workerd it started. Resolves once `/health` answers.
 *
 * @example
 * const dev = await startWranglerDev(host, { vars: { GUARD_MODELS: profileJson } })
 */
export async function startWranglerDev(
  host: NodeHost,
  options: { vars?: Record<string, string>; timeoutMs?: number } = {},
): Promise<WranglerDev> {
  const root = host.cwd
  const dir = host.tempDir('guard-wrangler-')
  for (const path of [
    'src',
    'sim',
    'migrations',
    'wrangler.toml',
    'wrangler.dev.toml',
    'package.json',
  ]) {
    host.copy(host.join(root, path), host.join(dir, path))
  }
  host.link(host.join(root, 'node_modules'), host.join(dir, 'node_modules'))
  const wrangler = host.join(root, 'node_modules/.bin/wrangler')
  const env = {
    ...host.env,
    WRANGLER_REGISTRY_PATH: host.join(dir, 'registry'),
    WRANGLER_SEND_METRICS: 'false',
    CI: '1',
  }
  const persist = ['--persist-to', host.join(dir, 'state')]
  await host.run(
    wrangler,
    [
      'd1',
      'migrations',
      'apply',
      'workers-ai-guard-quarantine-dev',
      '--local',
      '-c',
      'wrangler.dev.toml',
      ...persist,
    ],
    { cwd: dir, env },
  )
  const [port, inspector] = [await host.freePort(), await host.freePort()]
  const vars = Object.entries(options.vars ?? {}).flatMap(([k, v]) => ['--var', `${k}:${v}`])
  const child = host.spawn(
    wrangler,
    [
      'dev',
      ...['-c', 'wrangler.dev.toml', '-c', 'sim/wrangler.toml'],
      ...['--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector)],
      ...persist,
      '--show-interactive-dev-session=false',
      ...vars,
    ],
    { cwd: dir, env, detached: true },
  )
  let log = ''
  const collect = (d: { toString(): string }) => {
    log = (log + d.toString()).slice(-20_000)
  }
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`wrangler dev exited:\n${log}`)
      try {
        if ((await fetch(`${base}/health`)).ok) break
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error(`wrangler dev did not come up:\n${log}`)
      await new Promise((r) => setTimeout(r, 250))
    }
  } catch (error) {
    // Never leave wrangler (and its workerd) running behind a failed start.
    await host.stop(child)
    host.remove(dir)
    throw error
  }
  return { base, child, dir, log: () => log }
}
