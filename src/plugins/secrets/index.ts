/**
 * @module Secrets never reach the engine: detectors with checks, stand-ins under the guard's key, the
 * per-request book that substitutes and restores them, and the policy per kind and model. The guard
 * uses them in src/plugins/secrets/prompt-secrets.ts, src/plugins/secrets/stand-in-evidence.ts and
 * src/release/stand-in-release.ts; see docs/secrets.md.
 */
export { BASE62, crc32, githubChecksum, ibanRemainder, luhnValid } from './checksums'
export {
  type CandidateCheck,
  findSecrets,
  keywordDetector,
  regexDetector,
  type SecretConfidence,
  type SecretDetector,
  type SecretSpan,
} from './detector'
export { builtInDetectors } from './detectors'
export {
  identifierDetectors,
  knownIssuer,
  validFodselsnummer,
  validPersonnummer,
} from './identifiers'
export {
  OPERATOR_PATTERN_LIMITS,
  type OperatorPattern,
  operatorDetector,
  patternProblem,
} from './operator-pattern'
export {
  type ModelSecrets,
  type ResolvedSecrets,
  resolveSecrets,
  type SecretPolicy,
  type SecretRules,
  type SecretsOptions,
  WORKER_SECRETS_DEFAULT,
} from './policy'
export { providerKeyDetectors } from './provider-keys'
export { secretsPlugin } from './secrets-plugin'
export {
  type ForeignStandIn,
  type KindCount,
  type Located,
  MAX_STAND_INS,
  type Replacement,
  type Restoration,
  StandInBook,
  type StandInRequest,
  type Substitution,
  withLineBreaks,
} from './stand-in-book'
export {
  importStandInKey,
  inspectStandIn,
  MIN_PAYLOAD_BITS,
  mintStandIn,
  type StandInKey,
  type StandInPayload,
} from './stand-in-codec'
export { classShape, MAX_STAND_IN_LENGTH, SHAPES, type StandInShape } from './stand-in-shapes'
export { decodeBase64Url, structuredDetectors } from './structured'
