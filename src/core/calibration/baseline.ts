/**
 * @module A learned TTFT baseline per model, script class and prompt size: what honest prefills here
 * really take — learned so that no tenant's traffic can raise the bar for another.
 *
 * The profile's `maxPrefillTokensPerSecond` is a loose physical bound, chosen so that no honest answer
 * ever beats it. Real prefills are slower, and how much slower is learned from verified answers: the
 * expected minimum becomes the larger of the physical bound and a safety fraction of the lowest honest
 * rate seen for prompts of that class and size. Threats, and the answer to each:
 * - Units: rates are learned per token **the engine reported** (`usage.prompt_tokens − cached`), not
 *   per o200k token, and judged against the guard's *lower* estimate of the engine's count: learned
 *   per o200k token, honest Georgian prompts (slow per o200k token, fast per engine token) would teach
 *   a rate that quarantines every honest English answer.
 * - Buckets: by script class and size, so one script's traffic never sets another's bar.
 * - Weight: each tenant keeps at most {@link SAMPLES_PER_TENANT} samples per bucket, a bucket is trusted
 *   only once {@link QUORUM} tenants have taught it, and the rate is the *lowest* tenant's: a tenant (or
 *   a few) can only lower a bar towards physics, never raise it above what another tenant's honest
 *   answers showed. Only echo-verified, released answers teach (src/core/calibration/teach.ts).
 * Memory is bounded: classes × 10 size buckets × {@link TENANTS_PER_BUCKET} × {@link SAMPLES_PER_TENANT}.
 */
import type { ScriptClass } from '../ceiling/script'

/** Serializable learned state for one model. */
export interface BaselineState {
  /** Format version (older formats are discarded on read). */
  v: 2
  /** `class:bucket` → tenant key (`t…`, least recently taught first) → ms per 1k uncached engine tokens. */
  buckets: Record<string, Record<string, number[]>>
}

/** Samples kept per tenant and bucket (newest last). */
const SAMPLES_PER_TENANT = 4
/** Tenants kept per bucket (least recently taught go first). */
const TENANTS_PER_BUCKET = 16
/** A tenant counts towards the quorum once it has taught a bucket this many times. */
const MIN_SAMPLES_PER_TENANT = 2
/** Different tenants a bucket needs before its rate is used. */
const QUORUM = 3
/** The expected minimum is this fraction of the lowest rate seen: honest variance never reaches it. */
const SAFETY_FRACTION = 0.5
/** Smallest prompt (uncached tokens) learned from: below it, per-token rates are dominated by overhead. */
const MIN_LEARN_TOKENS = 4_096

/**
 * Log-spaced bucket of an uncached prompt size: 4k–8k, 8k–16k, … (doubling).
 *
 * @example
 * bucketOf(300_000) // 6 (262,144–524,287)
 */
function bucketOf(uncachedTokens: number): number {
  return Math.max(0, Math.floor(Math.log2(Math.max(1, uncachedTokens) / MIN_LEARN_TOKENS)))
}

function bucketKey(scriptClass: ScriptClass, uncachedTokens: number): string {
  return `${scriptClass}:${bucketOf(uncachedTokens)}`
}

/** One honest observation: an echo-verified answer's first token, in the engine's own tokens. */
export interface TimingSample {
  /** The prompt's dominant script class. */
  scriptClass: ScriptClass
  /** Engine-reported prompt tokens less engine-reported cached tokens. */
  uncachedTokens: number
  ttftMs: number
  /** Who sent it (an opaque id). */
  tenant: string
}

/**
 * Adds one honest observation. Returns a new state; the input is not modified.
 *
 * @example
 * state = learn(state, { scriptClass: 'latin', uncachedTokens: 300_000, ttftMs: 1_800, tenant: 'a' })
 */
export function learn(state: BaselineState, sample: TimingSample): BaselineState {
  const { uncachedTokens, ttftMs } = sample
  if (!(uncachedTokens >= MIN_LEARN_TOKENS) || !(ttftMs > 0) || !Number.isFinite(ttftMs)) {
    return state
  }
  const key = bucketKey(sample.scriptClass, uncachedTokens)
  const tenantKey = `t${sample.tenant}`
  const bucket = { ...state.buckets[key] }
  const samples = [...(bucket[tenantKey] ?? []), (ttftMs / uncachedTokens) * 1000]
  // Re-inserted last: object keys keep insertion order, so the first key is the least recent tenant.
  delete bucket[tenantKey]
  bucket[tenantKey] = samples.slice(-SAMPLES_PER_TENANT)
  const tenants = Object.keys(bucket)
  for (const stale of tenants.slice(0, Math.max(0, tenants.length - TENANTS_PER_BUCKET))) {
    delete bucket[stale]
  }
  return { v: 2, buckets: { ...state.buckets, [key]: bucket } }
}

/**
 * The learned minimum for a prompt, ms, or 0 while the bucket lacks a quorum of tenants.
 *
 * @example
 * learnedMinimumMs(state, 'latin', 300_000) // e.g. 900
 */
export function learnedMinimumMs(
  state: BaselineState,
  scriptClass: ScriptClass,
  uncachedTokens: number,
): number {
  const bucket = state.buckets[bucketKey(scriptClass, uncachedTokens)]
  if (!bucket) return 0
  let lowest = Number.POSITIVE_INFINITY
  let teachers = 0
  for (const samples of Object.values(bucket)) {
    if (samples.length < MIN_SAMPLES_PER_TENANT) continue
    teachers++
    lowest = Math.min(lowest, ...samples)
  }
  if (teachers < QUORUM) return 0
  return (lowest * uncachedTokens * SAFETY_FRACTION) / 1000
}

/**
 * An empty state.
 *
 * @example
 * let baseline = emptyBaseline()
 */
export function emptyBaseline(): BaselineState {
  return { v: 2, buckets: {} }
}
