import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin'
import { buildSync } from 'esbuild'
import { defineConfig } from 'vitest/config'

// The simulator runs as its own Worker beside the guard, exactly as under `npm start`. Miniflare's
// auxiliary Workers take plain JavaScript, so bundle it once here when the config loads.
const SIM_BUNDLE = 'node_modules/.cache/workers-ai-guard/sim.js'
buildSync({
  entryPoints: ['sim/worker.ts'],
  outfile: SIM_BUNDLE,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  mainFields: ['module', 'main'],
  target: 'es2023',
  external: ['cloudflare:*'],
  logLevel: 'warning',
})

// Tests use the real local D1 with the real migrations, applied by test/setup/d1.ts.
const migrations = await readD1Migrations('./migrations')

export default defineConfig({
  test: {
    // CI is a 2-core machine running both projects at once, and the first o200k load in workerd takes
    // seconds: per-test limits are generous; speed limits live in bench/, not here.
    testTimeout: 30_000,
    projects: [
      {
        // Everything that touches Workers: the guard, the Worker, the simulator, inside workerd.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: './wrangler.toml', environment: 'dev' },
            miniflare: {
              bindings: { TEST_MIGRATIONS: migrations },
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
        ],
        test: {
          name: 'workerd',
          include: ['test/**/*.test.ts'],
          exclude: ['test/node/**'],
          setupFiles: ['./test/setup/d1.ts'],
        },
      },
      {
        // Node-only entry points (CLI scripts, demo) and proof that the core runs unchanged on Node 22.
        test: { name: 'node', include: ['test/node/**/*.test.ts'], environment: 'node' },
      },
    ],
  },
})
