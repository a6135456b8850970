/**
 * @module workers-ai-guard: a safety layer for the Workers AI binding — token ceiling below the real KV
 * pool, per-request canaries, and time-to-first-token evidence, so no answer built from another
 * request's memory ever reaches a client. This entry's guards carry both evidence plug-ins (foreign
 * content, secrets); `workers-ai-guard/lean` (./lean.ts) is the same surface without them.
 */

import { guardSurface } from './core'
import { DEFAULT_PLUGINS } from './default-plugins'

// Everything of the core; the three ways in below are this entry's own (they shadow the lean ones).
export * from './lean'
export { WORKER_SECRETS_DEFAULT } from './plugins/secrets'

/** The guard with both evidence plug-ins: `createGuard`, `guardAi` and the Hono middleware `aiGuard`. */
export const { createGuard, guardAi, aiGuard } = guardSurface(DEFAULT_PLUGINS)
