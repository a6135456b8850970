/**
 * @module The evidence both paths (whole answers and streams) gather: canary findings and timing.
 */
import { CANARY_PATTERN, type Finding, scanText } from './canary'
import type { AttemptContext } from './guard'
import type { QuarantineRecord } from './quarantine/store'
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
  const key = await ctx.guard.key()
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
 * Counts the prompt exactly only when the bound could matter: a short prompt's prefill is below the
 * clock's noise and is never judged. Cached tokens are the larger of what the upstream reported and
 * what this tenant's own recent prompts suggest, so an honest prefix-cache hit is never accused.
 */
export async function timingEvidence(
  ctx: AttemptContext,
  observedMs: number,
  reportedCachedTokens: number,
): Promise<TimingSignal | undefined> {
  const { maxPrefillTokensPerSecond } = ctx.profile
  const minEvidenceMs = ctx.guard.options.minTimingEvidenceMs
  const boundMs = (ctx.boundTokens / maxPrefillTokensPerSecond) * 1000
  if (boundMs < minEvidenceMs) return undefined
  const promptTokens = await ctx.exactTokens()
  const recorded = await ctx.recordedCachedTokens()
  return judgeTiming({
    promptTokens,
    cachedTokens: Math.max(reportedCachedTokens, recorded),
    observedMs,
    maxPrefillTokensPerSecond,
    minEvidenceMs,
    learnedMinMs: (uncached) => learnedMinimumMs(ctx.baseline, uncached),
  })
}

/**
 * Reports a released answer's figures to calibration: exact-vs-reported tokens, and an honest TTFT
 * when the echo proved the prompt's end was read. Runs in the background where the host allows.
 */
export function teach(
  ctx: AttemptContext,
  facts: { estimated?: number; reported?: number; timing?: TimingSignal; echoVerified: boolean },
): void {
  const work = (async () => {
    const store = ctx.guard.calibration
    if (facts.estimated !== undefined && facts.reported !== undefined) {
      await store.observeTokens(ctx.model, facts.estimated, facts.reported)
    }
    if (facts.timing && facts.echoVerified) {
      const uncached = await ctx.exactTokens()
      await store.observeTiming(ctx.model, {
        uncachedTokens: uncached - facts.timing.cachedTokens,
        ttftMs: facts.timing.observedMs,
      })
    }
  })().catch((error: unknown) => {
    // Losing one calibration sample is harmless: the profile's floors still apply.
    console.error(
      JSON.stringify({ event: 'ai_guard_calibration_failed', error: String(error).slice(0, 200) }),
    )
  })
  if (ctx.waitUntil) ctx.waitUntil(work)
}

/** A verdict with the figures behind it, and the usage comparison (when both counts are known). */
export interface Judgement {
  verdict: Verdict
  figures: QuarantineRecord['figures']
  usage: { reported: number; estimated: number } | undefined
}

/**
 * Combines an attempt's evidence into one verdict (see src/verdict.ts). The usage cross-check needs
 * the exact prompt count, which exists when the preflight counted or timing needed it.
 */
export async function judge(
  ctx: AttemptContext,
  evidence: { echo: EchoOutcome; findings: Finding[]; timing?: TimingSignal; reported?: number },
): Promise<Judgement> {
  const { timing, reported } = evidence
  const exact = timing !== undefined || ctx.exactKnown ? await ctx.exactTokens() : undefined
  const usage =
    exact !== undefined && reported !== undefined ? { reported, estimated: exact } : undefined
  const verdict = decide({
    echo: evidence.echo,
    foreignCanaries: evidence.findings.filter((f) => f.kind === 'foreign').length,
    ...(timing ? { timing } : {}),
    ...(usage ? { usage } : {}),
    attempt: ctx.attempt,
    retries: ctx.guard.options.echoRetries,
  })
  const figures = {
    ...timingRecord(timing),
    estimatedTokens: exact ?? ctx.boundTokens,
    ...(reported !== undefined ? { promptTokensReported: reported } : {}),
  }
  return { verdict, figures, usage }
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
