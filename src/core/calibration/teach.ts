/**
 * @module What a released answer (or an engine refusal) teaches learned state: tokenizer margins from
 * the engine's counts, and — only when the echo proved the prompt was read — timing and prefixes.
 */
import type { AttemptContext, Lesson } from '../attempt/context'
import type { ClassFigures } from '../ceiling/estimate'
import type { ScriptClass } from '../ceiling/script'
import { prefixKey } from '../plan/plan'
import type { PlanEstimate } from '../vocabulary/request-facts'
import { tenantKey } from './learned'

/**
 * Teaches calibration from a RELEASED answer or an engine refusal (the orchestrator's call,
 * src/core/guard/attempts.ts). The engine's own prompt count calibrates the ceiling (any released answer: it
 * is the engine's statement; a refusal states exactly the prompt that did not fit); honest timing and
 * the tenant's prefix record are taught only by echo-verified answers, in the engine's own tokens. Runs
 * in the background where the host allows; failed, retried and quarantined attempts never reach it.
 */
export function teach(ctx: AttemptContext, lesson: Lesson): void {
  // An uncounted prompt was admitted by its bytes, which no byte-level BPE exceeds: nothing to learn
  // from a release. A refusal is always worth the count.
  if (!ctx.request.counted && !lesson.refusal) return
  const work = (async () => {
    const store = ctx.services.calibration
    const estimate = await ctx.request.figures.estimate()
    const tenant = tenantKey(ctx.request.tenant)
    if (lesson.reported !== undefined) {
      await store.observeTokens(ctx.request.model, {
        classes: boundsOf(estimate),
        overhead: estimate.overhead,
        actual: lesson.reported,
        tenant,
      })
    }
    if (!lesson.verified) return
    // Only a timed prompt's prefix can excuse a later first token (and it was hashed during the call).
    if (ctx.request.timed) {
      ctx.services.prefixes.remember(
        prefixKey(ctx.request.tenant, ctx.request.model),
        (await ctx.prefix()).digest,
      )
    }
    if (lesson.firstTokenMs !== undefined && lesson.reported !== undefined) {
      await store.observeTiming(ctx.request.model, {
        scriptClass: estimate.dominant,
        uncachedTokens: lesson.reported - (lesson.reportedCached ?? 0),
        ttftMs: lesson.firstTokenMs,
        tenant,
      })
    }
  })().catch((error: unknown) => {
    // Losing one calibration sample is harmless: the family bound and the profile's floors still apply.
    console.error(
      JSON.stringify({ event: 'ai_guard_calibration_failed', error: String(error).slice(0, 200) }),
    )
  })
  if (ctx.waitUntil) ctx.waitUntil(work)
}

function boundsOf(estimate: PlanEstimate): Partial<Record<ScriptClass, number>> {
  const out: Partial<Record<ScriptClass, number>> = {}
  for (const [cls, figures] of Object.entries(estimate.classes) as [ScriptClass, ClassFigures][]) {
    out[cls] = figures.bound
  }
  return out
}
