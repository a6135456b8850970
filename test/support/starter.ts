/**
 * What `workers-ai-guard init` promises a consumer's project (README, "Use it in your code"), stated
 * here as the contract the tests hold src/tools/init/ to.
 */

/** The starter's files, relative to `examples/consumer/` and to the project. */
export const STARTER_FILES = [
  'wrangler.toml',
  'wrangler.dev.toml',
  'tsconfig.json',
  'src/index.ts',
  'src/auth.ts',
]

/** The simulator's Worker config in an installed package, which the dev script binds. */
export const INSTALLED_SIM_CONFIG = 'node_modules/workers-ai-guard/dist/sim/wrangler.toml'

/** The npm scripts the starter adds where the name is free. */
export const STARTER_SCRIPTS: Readonly<Record<string, string>> = {
  dev: `wrangler dev -c wrangler.dev.toml -c ${INSTALLED_SIM_CONFIG}`,
  types: 'wrangler types --include-runtime=false',
  check: 'tsc --noEmit -p .',
  deploy: 'wrangler deploy',
}
