/**
 * @module Foreign-content fingerprints: keyed, winnowed shingles of each tenant's recent prompts, and
 * a scanner that finds another tenant's prompt text in an answer. Pure code (no Hono, no env); the
 * design, parameters and measurements are in docs/fingerprints.md.
 */
export {
  answersOf,
  ContentWatch,
  type ContentWatchOptions,
  type FingerprintParams,
  type ForeignContent,
  holdBackUnits,
  minimumSpan,
  quietHoldBackUnits,
  scanAnswer,
  spanFloor,
} from './content-watch'
export type { FingerprintBatch, FingerprintStore, StoreGap, StoreRead } from './fingerprint-store'
export { type FingerprintKey, fingerprintKey, fingerprintOf } from './hash'
export {
  type KnownPrints,
  type PrintParams,
  type PromptPrint,
  printPrompt,
  type TextPrint,
} from './prompt-print'
export { PUBLIC_BACKGROUND } from './public-background'
export { type Shingle, Shingler, type ShinglerOptions } from './shingler'
export {
  type FingerprintLookup,
  type FingerprintOwners,
  FingerprintTable,
  type FingerprintTableOptions,
  type FingerprintTableStats,
} from './table'
export { type Unit, UnitReader, units, unitWeight, WORD_WEIGHT } from './units'

/**
 * The defaults, chosen by scripts/measure-fingerprints.ts (figures in
 * bench/results/fingerprint-params.json and docs/fingerprints.md).
 *
 * @example
 * const print = printPrompt(key, texts, FINGERPRINT_DEFAULTS)
 * const table = new FingerprintTable(FINGERPRINT_DEFAULTS)
 */
export const FINGERPRINT_DEFAULTS = {
  /** Units per shingle. */
  n: 7,
  /** Winnowing window, in shingles: 2/(w + 1) = 40% of shingles are stored. */
  w: 4,
  /**
   * Distinct foreign fingerprints in a run that make evidence: spans of 30 units always do, and
   * shorter text that models write by themselves (stock phrases, code preambles) mostly does not.
   */
  k: 6,
  budgetBytes: 16 * 1024 * 1024,
  ttlMs: 3_600_000,
  commonAt: 2,
  /** A 256k-token prompt (~91k fingerprints) fits in one tenant's third of a generation (115k). */
  tenantShare: 1 / 3,
} as const
export { foreignContentPlugin } from './content-plugin'
export { Winnower } from './winnow'
