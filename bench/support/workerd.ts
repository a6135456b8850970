/**
 * @module A bench Worker in workerd: bundled with esbuild, run by Miniflare (the engine `wrangler dev`
 * uses), reached from Node over loopback HTTP — so every figure is timed outside the isolate, where
 * the clock is not frozen between I/O.
 */

import { join } from 'node:path'
import { build } from 'esbuild'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { defaultTokenizerOnly, WORKER_BUNDLE } from '../../sim/bundle'
import { ROOT } from '../lib'

/** Where bundles go: inside the repository, because workerd refuses module paths outside its root. */
const CACHE = join(ROOT, 'node_modules', '.cache', 'workers-ai-guard')

/** A Worker running in workerd. */
export interface RunningWorker {
  url: string
  dispose(): Promise<void>
}

/**
 * Bundles `entry` (a TypeScript module Worker; the simulator with its default tokenizer only) and
 * starts it in workerd with plain-text bindings.
 *
 * @example
 * const worker = await startWorker('bench/support/overhead-worker.ts', { GUARD_SECRET: secret })
 * await fetch(`${worker.url}/direct?chars=4000`)
 * await worker.dispose()
 */
export async function startWorker(
  entry: string,
  bindings: Record<string, string>,
): Promise<RunningWorker> {
  const name = entry.replace(/^.*\//, '').replace(/\.ts$/, '')
  const outfile = await bundleWorker(`bench-${name}`, {
    entryPoints: [join(ROOT, entry)],
    plugins: [defaultTokenizerOnly('bench/support/workerd.ts')],
  })
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      // The Worker logs a verdict line per request; the bench does not print them.
      handleStructuredLogs: () => {},
      workers: [
        {
          name,
          modules: true,
          scriptPath: outfile,
          compatibilityDate: '2026-11-01',
          bindings,
        },
      ],
    }),
  )
  const url = await mf.ready
  return { url: url.href.replace(/\/$/, ''), dispose: () => mf.dispose() }
}

/**
 * Bundles a Worker (or any module) for workerd as the benches run it — ESM, Web platform, the
 * `cloudflare:` modules left to the runtime — into the bench cache as `<name>.js`; returns its path.
 *
 * @example
 * const path = await bundleWorker('bench-guard', { entryPoints: [join(ROOT, 'src/worker/index.ts')] })
 */
export async function bundleWorker(
  name: string,
  options: Parameters<typeof build>[0],
): Promise<string> {
  const outfile = join(CACHE, `${name}.js`)
  await build({
    ...WORKER_BUNDLE,
    ...options,
    outfile,
  })
  return outfile
}
