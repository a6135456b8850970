/**
 * @module `npm run bundle-size`: each package entry bundled alone as a user's bundler would take it —
 * minified, dependencies external (`--packages=external`), nothing written — and its size in bytes.
 * The lean entry is the core without the evidence plug-ins and their data.
 */
import { build } from 'esbuild'

/** The package entries measured, by the name a user imports. */
export const ENTRIES = { default: 'src/index.ts', lean: 'src/lean.ts' } as const

/**
 * The minified size of one entry's bundle, in bytes.
 *
 * @example
 * const bytes = await bundleBytes('src/lean.ts')
 */
export async function bundleBytes(entry: string): Promise<number> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2023',
    packages: 'external',
    external: ['cloudflare:*'],
    logLevel: 'silent',
  })
  return result.outputFiles.reduce((sum, file) => sum + file.contents.byteLength, 0)
}

/**
 * Both entries' sizes, and the lean one's share of the default.
 *
 * @example
 * const { lean, default: full, share } = await bundleSizes()
 */
export async function bundleSizes(): Promise<{ default: number; lean: number; share: number }> {
  const full = await bundleBytes(ENTRIES.default)
  const lean = await bundleBytes(ENTRIES.lean)
  return { default: full, lean, share: lean / full }
}

const argv = (globalThis as { process?: { argv: string[] } }).process?.argv
if (argv && /(^|[\\/])bundle-size\.ts$/.test(argv[1] ?? '')) {
  const sizes = await bundleSizes()
  const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`
  console.log(`default (src/index.ts): ${kb(sizes.default)} minified, dependencies external`)
  console.log(
    `lean (src/lean.ts): ${kb(sizes.lean)} (${(sizes.share * 100).toFixed(1)}% of default)`,
  )
}
