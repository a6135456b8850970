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
 * Its guards refuse the `content` (other than `false`) and `secrets` options with an error
 * that names the default entry: a check asked for is never silently left out.
 */
import { guardSurface } from './core'

export type {
  AiGuard,
  AiGuardOptions,
  AiGuardVariables,
  AiRunner,
  ChatMessage,
  ContentPart,
  GuardRequest,
  GuardSurface,
  OperatorPattern,
  QuarantineQuery,
  QuarantineRecord,
  QuarantineStore,
  QuarantineSummary,
  SecretPolicy,
  SecretRules,
  SecretsOptions,
  Usage,
} from './core'
export {
  type AiAnswer,
  type AnswerChoice,
  type AnswerToolCall,
  type AnswerUsage,
  asAiBinding,
  BUILTIN_PROFILES,
  CANARY_PATTERN,
  type CacheIsolation,
  type CalibrationSnapshot,
  type CalibrationStore,
  type D1QuarantineOptions,
  D1QuarantineStore,
  D1TenantDirectory,
  defaultCacheIsolation,
  deriveTenantSecret,
  type EchoPolicy,
  type EchoWording,
  type ErrorBody,
  errorBody,
  GuardError,
  type GuardErrorCode,
  type GuardedAi,
  type GuardInfo,
  type GuardOptions,
  guardInfo,
  IncidentRecorder,
  MemoryCalibration,
  MemoryQuarantineStore,
  MemoryTenantDirectory,
  type ModelProfile,
  type OpenAiHttpOptions,
  type OverflowPolicy,
  openAiHttpUpstream,
  responseStatus,
  SIGNATURE_HEADER,
  type SignatureCheck,
  sseResponse,
  type TenantDirectory,
  UnreadableIncidentError,
  type UnreadableReason,
  type VerdictContext,
  type VerdictLog,
  verifySignature,
} from './core'

/** The guard without evidence plug-ins: `createGuard`, `guardAi` and the Hono middleware `aiGuard`. */
export const { createGuard, guardAi, aiGuard } = guardSurface({})
