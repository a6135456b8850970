/**
 * @module The evidence both paths (whole answers and streams) gather: canary findings and timing.
 */

import type { AttemptContext } from './attempt'
import { tenantKey } from './calibration'
import { CANARY_PATTERN, type Finding, scanText } from './canary'
import type { ClassFigures } from './ceiling/estimate'
import type { ScriptClass } from './ceiling/script'
import type { QuarantineRecord } from './quarantine/store'
import { type PlanEstimate, prefixKey } from './request-plan'
import type { Channel } from './stream/frames'
import { learnedMinimumMs } from './timing/baseline'
import { judgeTiming, type TimingSignal } from './timing/prefill'
import { decide, type EchoOutcome, type Verdict } from './verdict'

/** Scans every channel for canaries; returns the texts with our own canary removed, and the findings. */
export async function scanChannels(
  ctx: AttemptContext,
  texts: Partial<Record<Channel, string>>,
): Promise<{ texts: Partial<Record<Channel, string>>; findings: Finding[] }> {
  if (ctx.canary === undefined) return { texts, findings: [] }
  const key = await ctx.services.key()
  const out: Partial<Record<Channel, string>> = {}
  const findings: Finding[] = []
  for (const [channel, text] of Object.entries(texts) as [Channel, string][]) {
    const scanned = await scanText(key, ctx.canary, channel, text)
    out[channel] = scanned.text
    findings.push(...scanned.findings)
  }
  return { texts: out, findings }
}

/** Findings as quarantine-record entries (tenant tags only, never canary text). */
export function canaryEntries(findings: Finding[]): QuarantineRecord['canaries'] {
  return findings
    .filter((f) => f.kind === 'foreign')
    .map((f) => {
      const entry: QuarantineRecord['canaries'][number] = { kind: 'foreign', channel: f.channel }
      if (f.tenantTag !== undefined) entry.tenantTag = f.tenantTag
      return entry
    })
}

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
  return judgeTiming({
    promptTokens: estimate.lower + estimate.overhead,
    cachedTokens: Math.max(reportedCachedTokens, recorded),
    observedMs,
    maxPrefillTokensPerSecond,
    minEvidenceMs,
    learnedMinMs: (uncached) => learnedMinimumMs(ctx.baseline, estimate.dominant, uncached),
  })
}

/** What a released answer can teach, and whether its provenance was proven. */
export interface Lesson {
  /** The engine's `usage.prompt_tokens`. */
  reported?: number
  /** The engine's `usage.prompt_tokens_details.cached_tokens`. */
  reportedCached?: number
  /** Time to the first token, when the answer was streamed (or fetched as a stream). */
  firstTokenMs?: number
  /** The echo verified: the prompt's end was read, so timing and prefixes may be learned. */
  verified: boolean
  /** The count comes from an engine refusal (rare, and the most valuable observation). */
  refusal?: boolean
}

/**
 * Teaches learned state from a RELEASED answer. The engine's own prompt count calibrates the ceiling
 * (any released answer: it is the engine's statement); honest timing and the tenant's prefix record
 * are taught only by echo-verified answers, in the engine's own tokens. Runs in the background where
 * the host allows; refused, failed, retried and quarantined attempts never reach it.
 */
export function teach(ctx: AttemptContext, lesson: Lesson): void {
  // An uncounted prompt was admitted by its bytes, which no byte-level BPE exceeds: nothing to learn
  // from a release. A refusal is always worth the count (see teachRefusal).
  if (!ctx.counted && !lesson.refusal) return
  const work = (async () => {
    const store = ctx.services.calibration
    const estimate = await ctx.estimate()
    const tenant = tenantKey(ctx.tenant)
    if (lesson.reported !== undefined) {
      await store.observeTokens(ctx.model, {
        classes: boundsOf(estimate),
        overhead: estimate.overhead,
        actual: lesson.reported,
        tenant,
      })
    }
    if (!lesson.verified) return
    // Only a timed prompt's prefix can excuse a later first token (and it was hashed during the call).
    if (ctx.timed) {
      ctx.services.prefixes.remember(prefixKey(ctx.tenant, ctx.model), (await ctx.prefix()).digest)
    }
    if (lesson.firstTokenMs !== undefined && lesson.reported !== undefined) {
      await store.observeTiming(ctx.model, {
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

/**
 * Teaches the ceiling from an engine refusal that states the engine's own count of the prompt — the
 * most valuable observation there is: exactly the prompt that did not fit.
 */
export function teachRefusal(ctx: AttemptContext, statedTokens: number): void {
  teach(ctx, { reported: statedTokens, verified: false, refusal: true })
}

function boundsOf(estimate: PlanEstimate): Partial<Record<ScriptClass, number>> {
  const out: Partial<Record<ScriptClass, number>> = {}
  for (const [cls, figures] of Object.entries(estimate.classes) as [ScriptClass, ClassFigures][]) {
    out[cls] = figures.bound
  }
  return out
}

/** A verdict with the figures behind it. */
export interface Judgement {
  verdict: Verdict
  figures: QuarantineRecord['figures']
}

/**
 * Combines an attempt's evidence into one verdict (see src/verdict.ts). The usage cross-check needs
 * the prompt's lower estimate, which exists when the prompt was counted.
 */
export async function judge(
  ctx: AttemptContext,
  evidence: { echo: EchoOutcome; findings: Finding[]; timing?: TimingSignal; reported?: number },
): Promise<Judgement> {
  const { timing, reported } = evidence
  const estimate = ctx.counted ? await ctx.estimate() : undefined
  const lower = estimate ? estimate.lower + estimate.overhead : undefined
  const verdict = decide({
    echo: evidence.echo,
    foreignCanaries: evidence.findings.filter((f) => f.kind === 'foreign').length,
    ...(timing ? { timing } : {}),
    ...(lower !== undefined && reported !== undefined ? { usage: { reported, lower } } : {}),
    attempt: ctx.attempt,
    retries: ctx.services.options.echoRetries,
  })
  const figures = {
    ...timingRecord(timing),
    ...(estimate
      ? { estimatedTokens: estimate.bound + estimate.overhead }
      : { tokenBound: ctx.boundTokens }),
    ...(reported !== undefined ? { promptTokensReported: reported } : {}),
  }
  return { verdict, figures }
}

/** Timing figures for a quarantine record. */
export function timingRecord(timing: TimingSignal | undefined): QuarantineRecord['figures'] {
  if (!timing) return {}
  return {
    ttftMs: timing.observedMs,
    expectedMinMs: timing.expectedMinMs,
    cachedTokens: timing.cachedTokens,
  }
}

/** Every canary-shaped token replaced, so withheld text can be stored without live canaries in it. */
export function redactCanaries(texts: Partial<Record<Channel, string>>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [channel, text] of Object.entries(texts)) {
    if (text) out[channel] = text.replace(new RegExp(CANARY_PATTERN.source, 'gi'), '[canary]')
  }
  return out
}
