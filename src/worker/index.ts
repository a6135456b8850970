/**
 * @module Entry of the deployable guard Worker (`wrangler deploy`; `npm start` runs it against the simulator).
 */
import { createApp } from './app'
import type { Env } from './env'

export { FingerprintLog } from './fingerprint-log'
export { GuardState } from './state'

const app = createApp()

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>
