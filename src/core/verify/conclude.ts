/**
 * @module The one conclusion step of an attempt, whole answer or stream: evidence → verdict and the
 * figures behind it, the texts a release may send, and what a withheld answer records.
 */
import type { AttemptContext, AttemptOutcome } from '../attempt/context'
import { type Channel, channelEntries } from '../format/frames'
import type { TimingSignal } from '../timing/prefill'
import type { AnswerContent, AnswerStandIns, StoreGap } from '../vocabulary/evidence-plugins'
import type { QuarantineRecord } from '../vocabulary/quarantine'
import type { PlanEstimate } from '../vocabulary/request-facts'
import { canaryEntries, redactCanaries, scanChannels } from './canary-evidence'
import { kindCounts, standInEntries } from './stand-in-record'
import { decide, type EchoOutcome, type Verdict } from './verdict'

/** Channel texts of one answer. */
type Texts = Partial<Record<Channel, string>>

/** What an attempt's evidence gathered. */
interface Evidence {
  echo: EchoOutcome
  /** The answer's texts, scanned here for canaries. */
  texts: Texts
  timing?: TimingSignal
  /**
   * The time to the first token (a whole answer: to the answer) as measured, judged or not: a prompt
   * too short for the prefill bound to matter is still plotted by the console.
   */
  observedMs?: number
  /** The engine's `usage.prompt_tokens`. */
  reported?: number
  /**
   * A stream's foreign-content watch, fed as the stream was held (see ./streamed-answer.ts); without
   * one, the texts are scanned here as a whole answer.
   */
  watch?: AnswerContent
}

/** What the evidence concluded. */
export interface Conclusion {
  verdict: Verdict
  figures: QuarantineRecord['figures']
  /** The texts with our own canary cut out and this request's secrets back: what a release may send. */
  texts: Texts
  /** Secrets restored in `texts`, per kind. */
  restored: Record<string, number>
  /**
   * The outcome of withholding the answer whose unreleased text is `raw` (under observe: what its
   * observed incident records).
   */
  withheld(raw: Texts): AttemptOutcome<never>
  /**
   * For a whole answer once released with its echo verified: its words become known as the model's
   * (the foreign-content plug-in). Streams learn at their end instead.
   */
  learn(): void
}

/**
 * Scans the texts and combines every piece of evidence into one verdict (see ./verdict.ts). The usage
 * cross-check needs the prompt's lower estimate, which exists when the prompt was counted.
 *
 * @example
 * const { verdict, texts } = await conclude(ctx, { echo: 'echoed', texts: { content } })
 */
export async function conclude(ctx: AttemptContext, evidence: Evidence): Promise<Conclusion> {
  const { timing, reported } = evidence
  const scanned = await scanChannels(ctx, evidence.texts)
  const standIns = await standInEvidence(ctx, scanned.texts)
  const { hold, learn } = await foreignContent(ctx, evidence)
  const estimate = ctx.request.counted ? await ctx.request.figures.estimate() : undefined
  const lower = estimate ? estimate.lower + estimate.overhead : undefined
  const judged = {
    echo: evidence.echo,
    foreignCanaries: scanned.findings.filter((f) => f.kind === 'foreign').length,
    foreignStandIns: standIns.foreign.length,
    ...(timing ? { timing } : {}),
    ...(lower !== undefined && reported !== undefined ? { usage: { reported, lower } } : {}),
    attempt: ctx.attempt,
    retries: ctx.services.options.echoRetries,
  }
  // Content alone (nothing else wrong, the echo not missing): the model is asked before it is withheld.
  const alone =
    hold?.evidence() && decide(judged).action === 'release' && evidence.echo !== 'missing'
  const content = alone ? await hold!.confirmed(ctx.recall) : hold?.evidence()
  const verdict = decide(
    { ...judged, ...(content ? { foreignContent: content } : {}) },
    ctx.services.options.observe,
  )
  const figures = {
    ...(evidence.observedMs !== undefined ? { ttftMs: evidence.observedMs } : {}),
    ...timingRecord(timing),
    ...(await promptFigures(ctx, verdict, estimate)),
    ...(reported !== undefined ? { promptTokensReported: reported } : {}),
    ...(content ? { contentRun: content.run, contentMatches: content.matches } : {}),
    ...gapFigures(await (await ctx.content())?.gap()),
  }
  return {
    verdict,
    figures,
    learn,
    texts: standIns.texts,
    restored: standIns.restored,
    withheld: (raw) => ({
      verdict,
      withheld: redactCanaries(raw),
      figures,
      canaries: [...canaryEntries(scanned.findings), ...standInEntries(standIns.foreign)],
      ...(content ? { contentSources: [content.source] } : {}),
      ...(standIns.foreign.length > 0 ? { foreignStandIns: kindCounts(standIns.foreign) } : {}),
    }),
  }
}

/**
 * Another tenant's prompt text in the answer: from the stream's watch, or a scan of the whole texts.
 * A stream's verdict may come before its end (the rest is watched by the release stage).
 */
async function foreignContent(
  ctx: AttemptContext,
  evidence: Evidence,
): Promise<{ hold: AnswerContent | undefined; learn: () => void }> {
  const none = () => {}
  if (evidence.watch) return { hold: evidence.watch, learn: none }
  const printed = await ctx.content()
  if (!printed) return { hold: undefined, learn: none }
  const hold = await printed.answer()
  for (const [channel, text] of channelEntries(evidence.texts)) hold.push(channel, text)
  hold.end()
  return { hold, learn: () => hold.learn() }
}

/** This request's stand-ins back as values, another request's found; nothing without secrets. */
function standInEvidence(
  ctx: AttemptContext,
  texts: Texts,
): Promise<AnswerStandIns> | AnswerStandIns {
  const secrets = ctx.request.secrets
  if (!secrets) return { texts, foreign: [], restored: {} }
  return secrets.restore(texts, ctx.request.jsonContent)
}

/**
 * What the shared store's read missed, for the record and the verdict line: an answer is judged on
 * what could be read (never held or excused for what could not), and says so.
 */
function gapFigures(gap: StoreGap): QuarantineRecord['figures'] {
  if (!gap) return {}
  return 'down' in gap ? { fingerprintStoreDown: true } : { fingerprintShardsUnread: gap.shards }
}

/**
 * The prompt's size: its estimate when counted. A prompt far under the ceiling is admitted on its byte
 * bound, uncounted (several times its tokens); a withheld answer's record is what a responder compares
 * against the profile's pool, so its prompt is counted then (once, rarely), for the record only.
 */
async function promptFigures(
  ctx: AttemptContext,
  verdict: Verdict,
  estimate: PlanEstimate | undefined,
): Promise<QuarantineRecord['figures']> {
  const counted =
    estimate ??
    (verdict.action === 'release'
      ? undefined
      : await ctx.request.figures.estimate().catch(() => undefined))
  return counted
    ? { estimatedTokens: counted.bound + counted.overhead }
    : { tokenBound: ctx.request.admission.estimated }
}

/** Timing figures for a quarantine record. */
function timingRecord(timing: TimingSignal | undefined): QuarantineRecord['figures'] {
  if (!timing) return {}
  return {
    ttftMs: timing.observedMs,
    expectedMinMs: timing.expectedMinMs,
    cachedTokens: timing.cachedTokens,
  }
}
