/**
 * @module workers-ai-guard/lean: the guard's core alone — the token ceiling below the real KV pool,
 * per-request canaries (ours echoed, any other request's found), time-to-first-token evidence — with
 * the same surface as the default entry and none of the evidence plug-ins or their data.
 *
 * What it does not catch, that the default entry does:
 * - foreign content: the stale middle of another tenant's prompt in an answer, with no canary in it
 *   (a canary sits at the prompt's end; the pages between carry none);
 * - secrets in prompts: nothing is replaced by a stand-in, so a secret reaches the engine as sent.
 *
 * Its guards refuse the `foreignContent` (other than `false`) and `secrets` options with an error
 * that names the default entry: a check asked for is never silently left out.
 */
import { guardSurface } from './surfaces/surface'

export { asAiBinding, type OpenAiHttpOptions, openAiHttpUpstream } from './adapters'
// For the receivers of the Worker's leak alerts (docs/alerts.md): check a delivery's signature.
export {
  deriveTenantSecret,
  SIGNATURE_HEADER,
  type SignatureCheck,
  verifySignature,
} from './alerts'
export {
  D1TenantDirectory,
  MemoryTenantDirectory,
  type TenantDirectory,
} from './attribution'
export {
  type CalibrationSnapshot,
  type CalibrationStore,
  MemoryCalibration,
} from './calibration/learned'
export type { AiRunner, ChatMessage, ContentPart } from './call/upstream'
export { CANARY_PATTERN } from './canary'
export {
  type ErrorBody,
  errorBody,
  GuardError,
  type GuardErrorCode,
  responseStatus,
} from './errors'
export type { Usage } from './format/frames'
export { type GuardInfo, guardInfo } from './guard'
export { IncidentRecorder } from './quarantine/aggregate'
export { type D1QuarantineOptions, D1QuarantineStore } from './quarantine/d1'
export { MemoryQuarantineStore } from './quarantine/memory'
export type { AiGuard, GuardRequest } from './surfaces/guard-ai'
export type { AiGuardOptions, AiGuardVariables } from './surfaces/middleware'
export type { GuardSurface } from './surfaces/surface'
export {
  type AiAnswer,
  type AnswerChoice,
  type AnswerToolCall,
  type AnswerUsage,
  type GuardedAi,
  sseResponse,
} from './surfaces/typed-runner'
export type {
  OperatorPattern,
  SecretPolicy,
  SecretRules,
  SecretsOptions,
} from './vocabulary/evidence-options'
export {
  BUILTIN_PROFILES,
  type CacheIsolation,
  defaultCacheIsolation,
  type EchoPolicy,
  type EchoWording,
  type GuardOptions,
  type ModelProfile,
  type OverflowPolicy,
  type VerdictContext,
  type VerdictLog,
} from './vocabulary/options'
export type {
  QuarantineQuery,
  QuarantineRecord,
  QuarantineStore,
  QuarantineSummary,
} from './vocabulary/quarantine'

/** The guard without evidence plug-ins: `createGuard`, `guardAi` and the Hono middleware `aiGuard`. */
export const { createGuard, guardAi, aiGuard } = guardSurface({})
