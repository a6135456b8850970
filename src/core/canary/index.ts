/**
 * @module Canaries: mint / verify (token), inject the echo directive (inject), check the echo (echo),
 * scan and strip output (scan). WebCrypto only; runs unchanged in workerd and Node 22.
 */
export { cutOff, type EchoMatch, type EchoOptions, matchEcho } from './echo'
export { buildEchoDirective, injectCanary } from './inject'
export {
  buildJsonEchoDirective,
  type EchoSpan,
  JSON_ECHO_MEMBER,
  matchEchoSpan,
  matchJsonEcho,
} from './json-echo'
export { type BookEntry, FOREIGN_ANCHOR, MarkerBook } from './marker-book'
export { PIECE_LENGTH, type PieceCut, PieceCutter, type PieceScan } from './pieces'
export { prependMarker } from './prefix'
export {
  type Classification,
  classify,
  cutRanges,
  type Finding,
  type OwnTokens,
  quickHold,
  scanText,
} from './scan'
export { redactSecretPieces, redactTokenPieces } from './seal-redaction'
export {
  CANARY_ALPHABET,
  CANARY_BODY_LENGTH,
  CANARY_LENGTH,
  CANARY_PATTERN,
  CANARY_PREFIX,
  type CanaryInspection,
  type CanaryKey,
  cacheSalt,
  contentSeed,
  importCanaryKey,
  inspectCanary,
  markerBook,
  mintCanary,
  prefixMarker,
  tenantTag,
} from './token'
