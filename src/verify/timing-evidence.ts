/**
 * @module Timing evidence: an observed time to first token against what a real prefill of the uncached
 * prompt must take.
 */
import type { AttemptContext } from '../attempt/context'
import { learnedMinimumMs } from '../calibration/baseline'
import { type TimingSignal, timingSignal } from '../timing/prefill'

/**
 * Judges an observed time (to the first token, or to the whole answer) against the prefill bound.
 * Counts the prompt only when the bound could matter: a short prompt's prefill is below the clock's
 * noise and is never judged. The prompt's size is the *lower* estimate of the engine's count (an
 * honest answer is never accused for tokens the engine may not have), and cached tokens are the larger
 * of what the upstream reported and what this tenant's own verified prompts suggest.
 */
export async function timingEvidence(
  ctx: AttemptContext,
  observedMs: number,
  reportedCachedTokens: number,
): Promise<TimingSignal | undefined> {
  const { maxPrefillTokensPerSecond } = ctx.profile
  const minEvidenceMs = ctx.services.options.minTimingEvidenceMs
  const boundMs = (ctx.boundTokens / maxPrefillTokensPerSecond) * 1000
  if (boundMs < minEvidenceMs) return undefined
  const estimate = await ctx.estimate()
  const recorded = (await ctx.prefix()).cachedTokens
  return timingSignal({
    promptTokens: estimate.lower + estimate.overhead,
    cachedTokens: Math.max(reportedCachedTokens, recorded),
    observedMs,
    maxPrefillTokensPerSecond,
    minEvidenceMs,
    learnedMinMs: (uncached) => learnedMinimumMs(ctx.baseline, estimate.dominant, uncached),
  })
}
