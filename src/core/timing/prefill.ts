/**
 * @module The physics of prefill: how long reading a prompt must take at the least.
 *
 * When decode reads pages prefill never wrote, the answer comes faster than a real prefill of the
 * whole request could have. A first token sooner than the uncached prompt could be prefilled
 * at the profile's physical upper bound is evidence that the prompt was not read.
 */

/** What the timing guard concluded. */
export interface TimingSignal {
  /** Time to first token (stream) or to the whole answer (non-stream), ms. */
  observedMs: number
  /** The least time an honest prefill of the uncached tokens takes, ms (physical or learned, the larger). */
  expectedMinMs: number
  /** Which bound set `expectedMinMs`. */
  bound: 'physical' | 'learned'
  /** Prompt tokens assumed cached (upstream-reported, or from this tenant's recent prefixes). */
  cachedTokens: number
  /** Whether the evidence is strong enough to judge (expected minimum above clock noise). */
  judged: boolean
  /** Faster than physically possible. */
  impossible: boolean
  /**
   * Under per-tenant cache isolation: the cached tokens the upstream reported beyond what this tenant's
   * own verified prompts explain, when only that report made the first token possible (see
   * src/core/verify/timing-evidence.ts).
   */
  unexplainedCachedTokens?: number
}

/**
 * Judges an observed time against the prefill bound.
 *
 * @example
 * timingSignal({ promptTokens: 700_000, cachedTokens: 0, observedMs: 40,
 *   maxPrefillTokensPerSecond: 200_000, minEvidenceMs: 50 }).impossible // true: 3.5 s expected
 */
export function timingSignal(input: {
  promptTokens: number
  cachedTokens: number
  observedMs: number
  maxPrefillTokensPerSecond: number
  minEvidenceMs: number
  /** A learned minimum for this many uncached tokens (0 when nothing is learned yet). */
  learnedMinMs?: (uncachedTokens: number) => number
}): TimingSignal {
  const cached = Math.min(Math.max(0, input.cachedTokens), input.promptTokens)
  const uncached = input.promptTokens - cached
  const physical = (uncached / input.maxPrefillTokensPerSecond) * 1000
  const learned = input.learnedMinMs?.(uncached) ?? 0
  const expectedMinMs = Math.max(physical, learned)
  const judged = expectedMinMs >= input.minEvidenceMs
  return {
    observedMs: input.observedMs,
    expectedMinMs,
    bound: learned > physical ? 'learned' : 'physical',
    cachedTokens: cached,
    judged,
    impossible: judged && input.observedMs < expectedMinMs,
  }
}
