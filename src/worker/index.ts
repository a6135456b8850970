/**
 * @module Entry of the deployable guard Worker (`wrangler deploy`; `npm start` runs it against the simulator).
 */
import { createApp } from './app'
import type { Env } from './env'

export { FingerprintLog } from './fingerprint-log'
export { GuardState } from './state'

// Pure, as the package's modules are (package.json `sideEffects`): an entry that takes only the
// Worker's helpers leaves the app out of its bundle.
const app = /* @__PURE__ */ createApp()

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>
export {
  deriveTenantSecret,
  SIGNATURE_HEADER,
  type SignatureCheck,
  verifySignature,
} from './alerts/webhook-signature'
