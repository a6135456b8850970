/**
 * @module A learned TTFT baseline per model and prompt-size bucket: what honest prefills here really take.
 *
 * The profile's `maxPrefillTokensPerSecond` is a loose physical bound, chosen so that no honest answer
 * ever beats it. Real prefills are slower, and how much slower is learned from verified answers: the
 * expected minimum becomes the larger of the physical bound and a safety fraction of the lowest honest
 * times seen for prompts of that size. Only verified, released answers teach it (a leaked answer must not
 * lower the bar), and every bucket keeps a small fixed-size window, so memory stays bounded.
 */

/** Serializable learned state for one model. */
export interface BaselineState {
  /** Bucket index → recent honest ms-per-1k-uncached-tokens samples (newest last). */
  buckets: Record<string, number[]>
}

/** Samples kept per bucket. */
export const SAMPLES_PER_BUCKET = 32
/** A bucket is trusted only after this many samples. */
export const MIN_SAMPLES = 8
/** The expected minimum is this fraction of the lowest quantile seen: honest variance never reaches it. */
export const SAFETY_FRACTION = 0.5
/** Smallest prompt (uncached tokens) learned from: below it, per-token rates are dominated by overhead. */
export const MIN_LEARN_TOKENS = 4_096

/**
 * Log-spaced bucket of an uncached prompt size: 4k–8k, 8k–16k, … (doubling).
 *
 * @example
 * bucketOf(300_000) // 6 (262,144–524,287)
 */
export function bucketOf(uncachedTokens: number): number {
  return Math.max(0, Math.floor(Math.log2(Math.max(1, uncachedTokens) / MIN_LEARN_TOKENS)))
}

/**
 * Adds one honest observation. Returns a new state; the input is not modified.
 *
 * @example
 * state = learn(state, { uncachedTokens: 300_000, ttftMs: 1_800 })
 */
export function learn(
  state: BaselineState,
  sample: { uncachedTokens: number; ttftMs: number },
): BaselineState {
  if (!(sample.uncachedTokens >= MIN_LEARN_TOKENS) || !(sample.ttftMs > 0)) return state
  if (!Number.isFinite(sample.ttftMs)) return state
  const key = String(bucketOf(sample.uncachedTokens))
  const perK = (sample.ttftMs / sample.uncachedTokens) * 1000
  const window = [...(state.buckets[key] ?? []), perK].slice(-SAMPLES_PER_BUCKET)
  return { buckets: { ...state.buckets, [key]: window } }
}

/**
 * The learned minimum for a prompt, ms, or 0 when the bucket has too few samples.
 *
 * @example
 * learnedMinimumMs(state, 300_000) // e.g. 900
 */
export function learnedMinimumMs(state: BaselineState, uncachedTokens: number): number {
  const window = state.buckets[String(bucketOf(uncachedTokens))]
  if (!window || window.length < MIN_SAMPLES) return 0
  const sorted = [...window].sort((a, b) => a - b)
  // The second-lowest of a full window: one outlier (a cache hit the guard missed) cannot raise the bar.
  const low = sorted[Math.min(1, sorted.length - 1)]!
  return (low * uncachedTokens * SAFETY_FRACTION) / 1000
}

/** An empty state. */
export function emptyBaseline(): BaselineState {
  return { buckets: {} }
}
