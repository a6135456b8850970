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
 *
 * Under per-tenant cache isolation no other tenant's prompt can be cached for this one, so a report
 * larger than this tenant's own history that alone excuses the first token is noted
 * (`unexplainedCachedTokens`). It is not proof — the tenant's earlier prompts may have gone through
 * another isolate, whose record this one does not share — so it weighs as corroboration only (see
 * `cache_unexplained` in ./verdict.ts).
 */
export async function timingEvidence(
  ctx: AttemptContext,
  observedMs: number,
  reportedCachedTokens: number,
): Promise<TimingSignal | undefined> {
  const { maxPrefillTokensPerSecond } = ctx.request.profile
  const minEvidenceMs = ctx.services.options.minTimingEvidenceMs
  const boundMs = (ctx.request.admission.estimated / maxPrefillTokensPerSecond) * 1000
  if (boundMs < minEvidenceMs) return undefined
  const estimate = await ctx.request.figures.estimate()
  const recorded = (await ctx.prefix()).cachedTokens
  const judge = (cachedTokens: number) =>
    timingSignal({
      promptTokens: estimate.lower + estimate.overhead,
      cachedTokens,
      observedMs,
      maxPrefillTokensPerSecond,
      minEvidenceMs,
      learnedMinMs: (uncached) =>
        learnedMinimumMs(ctx.request.snapshot.baseline, estimate.dominant, uncached),
    })
  const signal = judge(Math.max(reportedCachedTokens, recorded))
  const isolated = ctx.request.profile.cacheIsolation !== 'off'
  if (
    isolated &&
    !signal.impossible &&
    reportedCachedTokens > recorded &&
    judge(recorded).impossible
  ) {
    signal.unexplainedCachedTokens = reportedCachedTokens - recorded
  }
  return signal
}
