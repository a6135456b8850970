/**
 * @module `npm run build:sim` (part of `npm run build`, so of `npm pack`): the simulator as a
 * ready Worker in the package, `dist/sim/worker.js` with its `dist/sim/wrangler.toml`, so a consumer
 * runs their Worker against it with `-c node_modules/workers-ai-guard/dist/sim/wrangler.toml` and no
 * clone of this repository. One bundle with the default tokenizer only (see sim/bundle.ts); wrangler
 * takes it as it is (`no_bundle`).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { build } from 'esbuild'
import { defaultTokenizerOnly, WORKER_BUNDLE } from '../sim/bundle'

const OUT = 'dist/sim'

await mkdir(OUT, { recursive: true })
await build({
  ...WORKER_BUNDLE,
  entryPoints: ['sim/worker.ts'],
  outfile: `${OUT}/worker.js`,
  minify: true,
  legalComments: 'none',
  plugins: [defaultTokenizerOnly('workers-ai-guard/dist/sim')],
})
await writeFile(
  `${OUT}/wrangler.toml`,
  `# The leaky Workers AI simulator of workers-ai-guard, a local stand-in for env.AI (never deploy it).
# Run beside your Worker: npx wrangler dev -c wrangler.dev.toml -c node_modules/workers-ai-guard/dist/sim/wrangler.toml
# and bind it in wrangler.dev.toml as [[services]] binding = "AI", service = "workers-ai-sim",
# entrypoint = "SimulatedAi". Control routes: POST /sim/config, GET /sim/stats, POST /sim/reset.
name = "workers-ai-sim"
main = "worker.js"
compatibility_date = "2026-11-01"
no_bundle = true
`,
)
