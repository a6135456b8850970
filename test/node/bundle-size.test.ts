import { describe, expect, it } from 'vitest'
import { bundleBytes, bundleSizes } from '../../scripts/bundle-size'

/**
 * The lean entry is the core without the evidence plug-ins: bundled as a user's bundler would take it
 * (minified, dependencies external) it is at most 35% of the default entry, which keeps them.
 */
describe('package entries: bundle size', () => {
  it('should bundle the lean entry to at most 35% of the default entry', async () => {
    const sizes = await bundleSizes()
    // The default still carries the plug-ins' data (the UDHR and public background alone are ~1 MB).
    expect(sizes.default).toBeGreaterThan(900_000)
    expect(sizes.lean).toBeLessThanOrEqual(0.35 * sizes.default)
    // Splitting the plug-ins out cost the default entry nothing: it stays within its size before
    // the split (1,306.1 KB), now 1,250.8 KB with the family table deflated.
    expect(sizes.default).toBeLessThanOrEqual(1_306_100)
  }, 60_000)

  // The measure can fail: an entry that imports a plug-in grows by its data.
  it('should measure a plug-in imported into an entry', async () => {
    const lean = await bundleBytes('src/lean.ts')
    const plugin = await bundleBytes('src/plugins/foreign-content/content-plugin.ts')
    expect(plugin).toBeGreaterThan(lean)
    expect(plugin).toBeGreaterThan(900_000)
  }, 60_000)
})
