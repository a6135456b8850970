/**
 * @module The per-request signals of an audit: a prompt over the model's real pool, an answer faster
 * than any real prefill of its prompt, and a reported prompt count far below the prompt. Each is
 * measured with the guard's own tools — the ceiling's family estimate (src/core/ceiling/estimate.ts, per
 * script), the prefill bound (src/core/timing/prefill.ts) and the profile's figures — and carries its
 * evidence as figures.
 */

import type { ModelProfile } from '../../core'
import {
  estimateTexts,
  nfcForm,
  type PromptEstimate,
  promptPieces,
  templateOverhead,
  timingSignal,
  utf8Length,
} from '../../core'
import type { AuditRecord, CheckName } from './record'

/** One signal on one request, with its evidence. */
export interface Signal {
  check: CheckName
  /** Proof (true) or an indication another explanation could fit (false: says which). */
  certain: boolean
  /** One line of evidence for people. */
  evidence: string
  /** The figures behind it. */
  figures: Record<string, number | string>
}

/** Thresholds of the signals (docs/audit.md says why each is where it is). */
export interface SignalSettings {
  /** A reported prompt count below this fraction of the lower estimate is an undercount. @default 0.8 */
  usageFloor: number
  /** …and at least this many tokens below it. @default 1000 */
  usageGap: number
  /** The timing check judges only prompts whose honest prefill takes at least this long. @default 200 */
  minEvidenceMs: number
}

/** The defaults: the guard's own (usage floor 0.8, 200 ms of timing evidence). */
export const SIGNAL_DEFAULTS: Readonly<SignalSettings> = Object.freeze({
  usageFloor: 0.8,
  usageGap: 1000,
  minEvidenceMs: 200,
})

/** What the audit learnt of one prompt's size. */
interface PromptSize {
  /** UTF-8 bytes (NFC-lengthened where it grows): an upper bound on any byte-level tokenizer's count. */
  bytes: number
  overhead: number
  /** The family estimate, when it was needed. */
  estimate?: PromptEstimate
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')

/** Bytes of a text as the tokenizers may see it (Qwen3 normalises to NFC, which can lengthen it). */
function boundBytes(text: string): number {
  const bytes = utf8Length(text)
  const nfc = nfcForm(text)
  return nfc === text ? bytes : Math.max(bytes, utf8Length(nfc))
}

/**
 * The per-request signals of a text-carrying record (not guard verdicts: see {@link verdictSignals}).
 * Counts the prompt with the family estimate only when a check could turn on it (the UTF-8 bytes
 * already bound every count from above).
 *
 * @example
 * const signals = await recordSignals(record, profile, SIGNAL_DEFAULTS)
 */
export async function recordSignals(
  record: AuditRecord,
  profile: ModelProfile | undefined,
  settings: SignalSettings,
): Promise<{ signals: Signal[]; size?: PromptSize; note?: string }> {
  const signals: Signal[] = []
  const failed = record.status !== undefined && record.status >= 400
  if (failed) return { signals }
  const { size, note } = await promptSize(record, profile, settings)
  const lower = size?.estimate ? size.estimate.lower + size.overhead : undefined
  const bound = size?.estimate ? size.estimate.bound + size.overhead : undefined
  const reported = record.reportedPromptTokens
  const overPool = overPoolSignal(profile, reported, lower, bound)
  if (overPool) signals.push(overPool)
  const speed = speedSignal(record, profile, settings, lower ?? undefined)
  if (speed) signals.push(speed)
  if (
    reported !== undefined &&
    lower !== undefined &&
    !record.responseCached &&
    reported < settings.usageFloor * lower &&
    lower - reported >= settings.usageGap
  ) {
    signals.push({
      check: 'usage_undercount',
      certain: true,
      evidence: `the engine reported ${fmt(reported)} prompt tokens for a prompt of at least ${fmt(lower)} (${((reported / lower) * 100).toFixed(reported / lower < 0.01 ? 3 : 0)}%): the placeholder or truncation signature`,
      figures: { reportedPromptTokens: reported, lowerTokens: lower },
    })
  }
  return { signals, ...(size ? { size } : {}), ...(note ? { note } : {}) }
}

/** The prompt's bytes and template overhead, and its family estimate when a check could turn on it. */
async function promptSize(
  record: AuditRecord,
  profile: ModelProfile | undefined,
  settings: SignalSettings,
): Promise<{ size?: PromptSize; note?: string }> {
  if (!record.inputs) return {}
  try {
    const pieces = promptPieces(record.inputs)
    let bytes = 0
    for (const text of pieces.texts) bytes += boundBytes(text)
    const size: PromptSize = { bytes, overhead: templateOverhead(pieces) }
    if (needsCount(record, profile, settings, size)) {
      size.estimate = await estimateTexts(pieces.texts)
    }
    return { size }
  } catch {
    return { note: 'request body not a chat request: prompt size unknown' }
  }
}

/** Over the pool, and served (an error status returned before): the incident's precondition. */
function overPoolSignal(
  profile: ModelProfile | undefined,
  reported: number | undefined,
  lower: number | undefined,
  bound: number | undefined,
): Signal | undefined {
  if (profile === undefined) return undefined
  const pool = Math.min(profile.kvPoolTokens, profile.contextWindow)
  if (reported !== undefined && reported > pool) {
    return {
      check: 'over_pool',
      certain: true,
      evidence: `the engine counted ${fmt(reported)} prompt tokens and answered, but the real pool holds ${fmt(pool)}`,
      figures: { reportedPromptTokens: reported, pool },
    }
  }
  if (lower === undefined || bound === undefined || bound <= pool) return undefined
  const certain = lower > pool
  return {
    check: 'over_pool',
    certain,
    evidence: certain
      ? `the prompt is at least ${fmt(lower)} tokens in every tokenizer of the model's family, over the real pool of ${fmt(pool)}, and it was answered`
      : `the prompt may be up to ${fmt(bound)} tokens (at least ${fmt(lower)}), over the real pool of ${fmt(pool)}`,
    figures: { lowerTokens: lower, boundTokens: bound, pool },
  }
}

/** Whether any check could turn on the exact count (the bytes bound every count from above). */
function needsCount(
  record: AuditRecord,
  profile: ModelProfile | undefined,
  settings: SignalSettings,
  size: PromptSize,
): boolean {
  const most = size.bytes + size.overhead
  const pool = profile ? Math.min(profile.kvPoolTokens, profile.contextWindow) : undefined
  const reported = record.reportedPromptTokens
  // The engine's own count already puts it over the pool, and no undercount is possible: the count
  // would only restate it (and a 1M-token prompt costs a few hundred ms to count).
  if (
    pool !== undefined &&
    reported !== undefined &&
    reported > pool &&
    reported * 8 >= size.bytes
  ) {
    return false
  }
  if (pool !== undefined && most > pool) return true
  const observed = record.ttftMs ?? record.durationMs
  if (profile && observed !== undefined && !record.responseCached) {
    const slowest = (most / profile.maxPrefillTokensPerSecond) * 1000
    if (slowest >= settings.minEvidenceMs && observed < slowest) return true
  }
  // An undercount that matters is far below: a byte per token is already generous for any script.
  return reported !== undefined && reported * 8 < size.bytes && size.bytes >= settings.usageGap
}

/** Faster than any real prefill: from the estimate, else from the engine's own count. */
function speedSignal(
  record: AuditRecord,
  profile: ModelProfile | undefined,
  settings: SignalSettings,
  lower: number | undefined,
): Signal | undefined {
  if (profile === undefined || record.responseCached) return undefined
  const observed = record.ttftMs ?? record.durationMs
  const tokens = lower ?? record.reportedPromptTokens
  if (observed === undefined || tokens === undefined) return undefined
  const cachedKnown = record.cachedTokens !== undefined
  const timing = timingSignal({
    promptTokens: tokens,
    cachedTokens: record.cachedTokens ?? 0,
    observedMs: observed,
    maxPrefillTokensPerSecond: profile.maxPrefillTokensPerSecond,
    minEvidenceMs: settings.minEvidenceMs,
  })
  if (!timing.impossible) return undefined
  const what = record.ttftMs !== undefined ? 'first token' : 'whole answer'
  const basis = lower !== undefined ? 'at least' : 'reported as'
  return {
    check: 'prefill_speed',
    // Without the engine's cached-token count, a prefix-cache hit could explain a fast answer.
    certain: cachedKnown,
    evidence:
      `${what} in ${fmt(observed)} ms, but prefilling the ${fmt(tokens - timing.cachedTokens)} uncached tokens (${basis} ${fmt(tokens)} − ${fmt(timing.cachedTokens)} cached) takes at least ${fmt(timing.expectedMinMs)} ms at ${fmt(profile.maxPrefillTokensPerSecond)} tokens/s` +
      (cachedKnown ? '' : ' (the log does not say how much was cached)'),
    figures: {
      observedMs: Math.round(observed),
      expectedMinMs: Math.round(timing.expectedMinMs),
      promptTokens: tokens,
      cachedTokens: timing.cachedTokens,
      measure: record.ttftMs !== undefined ? 'ttft' : 'duration',
    },
  }
}

/** Verdict reasons that are the incident's signature, and the check each stands for. */
const VERDICT_REASONS: Record<string, CheckName> = {
  foreign_canary: 'foreign_content',
  foreign_stand_in: 'foreign_content',
  foreign_content: 'foreign_content',
  ttft_impossible: 'prefill_speed',
  usage_undercount: 'usage_undercount',
}

/**
 * Signals of a guard verdict line: the guard's own reasons (its quarantines), and figures a release
 * should never have had under the given profile (a prompt over the pool, a first token too fast).
 *
 * @example
 * verdictSignals(record, profile, SIGNAL_DEFAULTS)
 */
export function verdictSignals(
  record: AuditRecord,
  profile: ModelProfile | undefined,
  settings: SignalSettings,
): Signal[] {
  const verdict = record.verdict
  if (verdict === undefined) return []
  const signals: Signal[] = []
  const withheld = verdict.action === 'quarantine'
  for (const reason of verdict.reasons) {
    const check = VERDICT_REASONS[reason]
    if (check === undefined || !withheld) continue
    const sources = verdict.sourceTenants?.length ? ` from ${verdict.sourceTenants.join(', ')}` : ''
    signals.push({
      check,
      certain: true,
      evidence: `the guard withheld the answer (${reason}${sources}${verdict.incidentId ? `, incident ${verdict.incidentId}` : ''}): the engine produced it, the client never received it`,
      figures: { reason, ...(verdict.incidentId ? { incidentId: verdict.incidentId } : {}) },
    })
  }
  const tokens = verdict.estimatedTokens
  if (verdict.action !== 'reject' && profile !== undefined && tokens !== undefined) {
    const pool = Math.min(profile.kvPoolTokens, profile.contextWindow)
    if (tokens > pool) {
      // The guard's estimate is its family bound (an upper figure): an indication, not a count.
      signals.push({
        check: 'over_pool',
        certain: false,
        evidence: `sent upstream with an estimate of ${fmt(tokens)} tokens, over the pool of ${fmt(pool)} given here: the guard ran with a larger pool than the real one`,
        figures: { estimatedTokens: tokens, pool },
      })
    }
  }
  if (verdict.action === 'release' && profile !== undefined && tokens !== undefined) {
    const speed = speedSignal(
      { ...record, reportedPromptTokens: tokens },
      profile,
      settings,
      undefined,
    )
    if (speed) signals.push({ ...speed, certain: false })
  }
  return signals
}
