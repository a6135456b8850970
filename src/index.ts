/**
 * @module workers-ai-guard: a safety layer for the Workers AI binding — token ceiling below the real KV
 * pool, per-request canaries, and time-to-first-token evidence, so no answer built from another
 * request's memory ever reaches a client.
 */
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
export type { OperatorPattern } from './secrets/operator-pattern'
export {
  type SecretPolicy,
  type SecretRules,
  type SecretsOptions,
  WORKER_SECRETS_DEFAULT,
} from './secrets/policy'
export { type AiGuard, createGuard, type GuardRequest, guardAi } from './surfaces/guard-ai'
export { type AiGuardOptions, type AiGuardVariables, aiGuard } from './surfaces/middleware'
export {
  type AiAnswer,
  type AnswerChoice,
  type AnswerToolCall,
  type AnswerUsage,
  type GuardedAi,
  sseResponse,
} from './surfaces/typed-runner'
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
