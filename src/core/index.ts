/** @module The face of core: what the other wings may use of it. */
export { type OpenAiHttpOptions, openAiHttpUpstream } from './adapters/openai-http'
export { asAiBinding } from './adapters/workers-ai-binding'
export {
  D1TenantDirectory,
  MemoryTenantDirectory,
  type TenantDirectory,
} from './attribution/directory'
export type { TimingSample } from './calibration/baseline'
export { learnedMargins } from './calibration/drift'
export {
  type CalibrationReport,
  type CalibrationSnapshot,
  type CalibrationStore,
  calibrate,
  describeCalibration,
  MemoryCalibration,
  type ModelCalibration,
  readCalibration,
  snapshotOf,
  type TokenObservation,
} from './calibration/learned'
export type { AiRunner, ChatMessage, ContentPart } from './call/upstream'
export { injectCanary } from './canary/inject'
export { JSON_ECHO_MEMBER, matchEchoSpan } from './canary/json-echo'
export {
  CANARY_ALPHABET,
  CANARY_BODY_LENGTH,
  CANARY_PATTERN,
  CANARY_PREFIX,
  type CanaryKey,
  contentSeed,
} from './canary/token'
export { countTokens } from './ceiling/count'
export { estimateTexts, type PromptEstimate } from './ceiling/estimate'
export { promptPieces, templateOverhead } from './ceiling/prompt'
export { nfcForm, SCRIPT_CLASSES } from './ceiling/script'
export { utf8Length } from './ceiling/utf8'
export { constantTimeEqual, toHex } from './crypto/bytes'
export { hmacOf, importHmacSecret } from './crypto/hmac'
export { MIN_SECRET_BYTES } from './crypto/secret'
export {
  DEFAULT_TOLERANCE_SECONDS,
  deriveTenantSecret,
  SIGNATURE_HEADER,
  type SignatureCheck,
  signWebhook,
  type VerifySignatureOptions,
  verifySignature,
  webhookKey,
} from './crypto/webhook-signature'
export {
  type ErrorBody,
  errorBody,
  GuardError,
  type GuardErrorCode,
  responseStatus,
} from './errors'
export { type Channel, type Frame, parseFrame, readTexts, type Usage } from './format/frames'
export {
  DEFAULT_MAX_EVENT_BYTES,
  encodeSseEvent,
  type SseEvent,
  SseParser,
  sseDecoder,
} from './format/sse'
export { type GuardInfo, guardInfo } from './guard/guard-info'
export { type MemoSlot, memoSlot, type RequestMemo, type TextFacts } from './memo/text-memo'
export { promptTexts } from './plan/prompt-texts'
export { IncidentRecorder } from './quarantine/aggregate'
export { type D1QuarantineOptions, D1QuarantineStore } from './quarantine/d1'
export { MemoryQuarantineStore } from './quarantine/memory'
export { UnreadableIncidentError, type UnreadableReason } from './quarantine/unreadable'
export type { AiGuard, GuardRequest } from './surfaces/guard-ai'
export { heldBytes } from './surfaces/guard-ai'
export type { AiGuardOptions, AiGuardVariables } from './surfaces/middleware'
export { type GuardSurface, guardSurface } from './surfaces/surface'
export {
  type AiAnswer,
  type AnswerChoice,
  type AnswerToolCall,
  type AnswerUsage,
  type GuardedAi,
  sseResponse,
} from './surfaces/typed-runner'
export { timingSignal } from './timing/prefill'
export type { AnswerView, Check, FrameReading } from './verify/check'
export type {
  FingerprintBatch,
  FingerprintStore,
  OperatorPattern,
  SecretConfidence,
  SecretPolicy,
  SecretRules,
  SecretsOptions,
  StoreRead,
} from './vocabulary/evidence-options'
export type {
  AnswerContent,
  AnswerStandIns,
  ContentBook,
  ContentPlugin,
  EvidencePlugins,
  PrintedPrompt,
  PromptSecrets,
  Recall,
  SecretsPlugin,
  StandInFinding,
  StoreGap,
} from './vocabulary/evidence-plugins'
export { integerOption } from './vocabulary/option-checks'
export {
  BUILTIN_PROFILES,
  type CacheIsolation,
  defaultCacheIsolation,
  type EchoPolicy,
  type EchoWording,
  type ForeignContentOptions,
  type GuardOptions,
  type ModelProfile,
  type OverflowPolicy,
  type RecallOptions,
  type VerdictContext,
  type VerdictLog,
} from './vocabulary/options'
export type {
  QuarantineQuery,
  QuarantineRecord,
  QuarantineStore,
  QuarantineSummary,
} from './vocabulary/quarantine'
export type { Edit } from './vocabulary/release-judge'
