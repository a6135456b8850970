/**
 * @module Judging one request (pass 2), the exact pass over candidates' sources (pass 3), and the
 * finding each suspicious request becomes.
 */

import type { ModelProfile } from '../../core'
import { promptPieces, promptTexts } from '../../core'
import {
  FINGERPRINT_DEFAULTS,
  type FingerprintKey,
  printPrompt,
} from '../../plugins/foreign-content'
import {
  type ExactPassage,
  exactPassages,
  type ForeignContentEvidence,
  guaranteedSpan,
  type OwnMask,
  ownMask,
  scanForeign,
} from './content'
import type { ContentIndex } from './content-index'
import type { CheckCoverage, Finding, ForeignSource, LogSource, SourceRequest } from './findings'
import { placeKey, principalOf, readSource, whereOf } from './read-source'
import { type AuditRecord, type CheckName, FORMAT_LIMITS } from './record'
import { recordSignals, type Signal, type SignalSettings, verdictSignals } from './signals'

const WEIGHT: Record<CheckName, number> = {
  foreign_content: 4,
  prefill_speed: 3,
  usage_undercount: 2,
  over_pool: 1,
}

/** Characters of a quoted excerpt. */
const EXCERPT_CHARS = 240

function skip(coverage: CheckCoverage, why: string): void {
  coverage.skipped[why] = (coverage.skipped[why] ?? 0) + 1
}

/** What judging one record needs beside the record. */
export interface JudgeContext {
  settings: SignalSettings
  coverage: Record<CheckName, CheckCoverage>
  index: ContentIndex
  /** Answers' fingerprints (common at three principals): the model's own phrasing. */
  answers: ContentIndex
  key: FingerprintKey
  refs: Map<string, number>
  sourceWindowMs: number
  /** Answer characters held by candidates so far (bounded by {@link CANDIDATE_CHARS}). */
  candidateChars: number
}

/** An answer that quotes other principals' prompts, waiting for the exact pass. */
export interface Candidate {
  finding: Finding
  answer: Record<string, string>
  mask: OwnMask
  evidence: ForeignContentEvidence[]
  /**
   * Per source request (filled by the exact pass): its passage with the most private units, and
   * its longest passage.
   */
  exact: Map<number, { private: ExactPassage; any: ExactPassage }>
  /** Whether the exact pass may judge it (false once the candidate budget is spent). */
  verify: boolean
}

/** Answer characters the exact pass may hold (beyond, candidates are judged by the run rule only). */
const CANDIDATE_CHARS = 32 * 1024 * 1024
/**
 * A passage of one other request with at least this many private units (consecutive units of its
 * prompt, less those of common text) is proof: the span the live guard guarantees to catch
 * (k·w + n − 1 of FINGERPRINT_DEFAULTS), one source of truth.
 * Shorter shared runs are everyday coincidences on real text — stock sign-offs of 10–15 words, code
 * preambles of 17–22 units, 11–13-character runs of legal Japanese and Chinese (docs/audit.md).
 */
export const PROOF_UNITS = guaranteedSpan(FINGERPRINT_DEFAULTS)
/**
 * A passage this long names a source for an answer already proved by another signal (over the pool,
 * an impossible prefill, an undercount): there the leak is known, the passage says whose data it is.
 */
export const SOURCE_UNITS = 10

/** One record's finding (undefined when nothing is suspicious), or a candidate for the exact pass. */
export async function judge(
  record: AuditRecord,
  profile: ModelProfile | undefined,
  ctx: JudgeContext,
): Promise<{ finding?: Finding; candidate?: Candidate }> {
  const { coverage, settings } = ctx
  let signals: Signal[]
  if (record.format === 'guard-verdict') {
    signals = verdictSignals(record, profile, settings)
    coverage.over_pool.judged++
    coverage.prefill_speed.judged++
    skip(coverage.usage_undercount, FORMAT_LIMITS['guard-verdict'].disabled.usage_undercount ?? '')
    skip(coverage.foreign_content, FORMAT_LIMITS['guard-verdict'].disabled.foreign_content ?? '')
    return signals.length > 0 ? { finding: findingOf(record, signals) } : {}
  }
  const result = await recordSignals(record, profile, settings)
  signals = result.signals
  noteCoverage(coverage, record, profile, result.size !== undefined)
  if (!record.answer || (record.status !== undefined && record.status >= 400)) {
    skip(coverage.foreign_content, record.answer ? 'error status' : 'no answer text in the log')
    return signals.length > 0 ? { finding: findingOf(record, signals) } : {}
  }
  coverage.foreign_content.judged++
  const candidate = candidateOf(record, ctx)
  if (candidate) {
    candidate.finding.signals = signals
    return { candidate }
  }
  return signals.length > 0 ? { finding: findingOf(record, signals) } : {}
}

function noteCoverage(
  coverage: Record<CheckName, CheckCoverage>,
  record: AuditRecord,
  profile: ModelProfile | undefined,
  sized: boolean,
): void {
  const failed = record.status !== undefined && record.status >= 400
  if (failed) {
    for (const check of ['over_pool', 'prefill_speed', 'usage_undercount'] as const)
      skip(coverage[check], 'error status')
    return
  }
  if (profile === undefined) skip(coverage.over_pool, 'model without a profile')
  else if (sized || record.reportedPromptTokens !== undefined) coverage.over_pool.judged++
  else skip(coverage.over_pool, 'neither prompt text nor reported tokens')
  if (profile === undefined) skip(coverage.prefill_speed, 'model without a profile')
  else if (record.responseCached)
    skip(coverage.prefill_speed, 'answer served from the response cache')
  else if (record.ttftMs === undefined && record.durationMs === undefined)
    skip(coverage.prefill_speed, 'no timing in the log')
  else coverage.prefill_speed.judged++
  if (!sized) skip(coverage.usage_undercount, 'no prompt text in the log')
  else if (record.reportedPromptTokens === undefined)
    skip(coverage.usage_undercount, 'no reported prompt tokens')
  else coverage.usage_undercount.judged++
}

function findingOf(record: AuditRecord, signals: Signal[]): Finding {
  signals.sort((a, b) => Number(b.certain) - Number(a.certain) || WEIGHT[b.check] - WEIGHT[a.check])
  const finding: Finding = {
    id: record.id,
    format: record.format,
    where: whereOf(record),
    signals,
    foreign: [],
    certain: signals.some((s) => s.certain),
    withheld: record.verdict?.action === 'quarantine',
  }
  if (record.startMs !== undefined) finding.startMs = record.startMs
  if (record.tenant !== undefined) finding.tenant = record.tenant
  if (record.model !== undefined) finding.model = record.model
  if (record.status !== undefined) finding.status = record.status
  if (record.metadata !== undefined) finding.metadata = record.metadata
  if (record.verdict?.sourceTenants?.length) finding.sourceTenants = record.verdict.sourceTenants
  return finding
}

/** The answer as a candidate when any of its selections is another principal's, else undefined. */
function candidateOf(record: AuditRecord, ctx: JudgeContext): Candidate | undefined {
  const answer = record.answer
  if (answer === undefined) return undefined
  const { index, key } = ctx
  const start = record.startMs ?? Number.NaN
  const self = {
    ref: ctx.refs.get(placeKey(record)) ?? -1,
    principal: principalOf(record),
    endMs: start + (record.durationMs ?? 0),
    windowMs: ctx.sourceWindowMs,
  }
  const params = FINGERPRINT_DEFAULTS
  // Cheap first: most answers match nobody, and then the own prompt need not be printed.
  const scan = { index, key, params, self }
  if (scanForeign(scan, answer).length === 0) return undefined
  let own: ReturnType<typeof printPrompt> | undefined
  if (record.inputs) {
    // Every shingle of the request's own prompt (assistant turns included: the model may repeat
    // what it said before), not just its winnowed fingerprints.
    let texts: string[]
    try {
      texts = promptPieces(record.inputs).texts
    } catch {
      texts = promptTexts(record.inputs)
    }
    own = printPrompt(key, texts, params)
  }
  const evidence = scanForeign(scan, answer, own)
  if (evidence.length === 0) return undefined
  const chars = Object.values(answer).reduce((sum, text) => sum + text.length, 0)
  const verify = ctx.candidateChars + chars <= CANDIDATE_CHARS
  if (verify) ctx.candidateChars += chars
  return {
    finding: findingOf(record, []),
    answer: verify ? answer : {},
    mask: verify ? ownMask(key, params, answer, own) : {},
    evidence,
    exact: new Map(),
    verify,
  }
}

/** Pass 3: reads only the lines of candidates' source requests and finds the exact passages. */
export async function verifyCandidates(
  sources: readonly LogSource[],
  candidates: readonly Candidate[],
  { index, answers, key }: { index: ContentIndex; answers: ContentIndex; key: FingerprintKey },
): Promise<void> {
  const ctx = { index, answers, key, params: FINGERPRINT_DEFAULTS }
  const wanted = new Map<string, { ref: number; candidates: Candidate[] }>()
  for (const candidate of candidates) {
    if (!candidate.verify) continue
    for (const evidence of candidate.evidence) {
      for (const { ref } of evidence.sources) {
        const where = index.requests[ref]?.where
        if (where === undefined) continue
        let entry = wanted.get(where)
        if (entry === undefined) {
          entry = { ref, candidates: [] }
          wanted.set(where, entry)
        }
        entry.candidates.push(candidate)
      }
    }
  }
  if (wanted.size === 0) return
  const lines = new Set([...wanted.keys()].map((where) => where.replace(/#\d+$/, '')))
  for (const source of sources) {
    const want = (line: number): boolean => lines.has(`${source.name}:${line}`)
    for await (const { record } of readSource(source, undefined, want)) {
      if (record?.inputs === undefined) continue
      const entry = wanted.get(whereOf(record))
      if (entry === undefined) continue
      const print = printPrompt(key, promptTexts(record.inputs), FINGERPRINT_DEFAULTS)
      for (const candidate of entry.candidates) {
        const passages = exactPassages(ctx, candidate.answer, candidate.mask, {
          ref: entry.ref,
          source: print,
          minUnits: SOURCE_UNITS,
        })
        const [best] = passages
        if (best === undefined) continue
        const any = passages.reduce((a, b) => (b.units > a.units ? b : a))
        candidate.exact.set(entry.ref, { private: best, any })
      }
    }
  }
}

/**
 * A candidate's finding. Proof: a passage of one source request with {@link PROOF_UNITS} private
 * units.
 * Indications: a passage of {@link SOURCE_UNITS} or more (any kind) when another signal already
 * proves the answer was not built from its own prompt (it names whose data it carries), or the
 * guard's run rule for a candidate the exact pass could not verify (its budget was spent). A shorter
 * or common passage alone is nothing: on real traffic it is what models, code and CJK share by chance.
 */
export function concludeCandidate(
  candidate: Candidate,
  index: ContentIndex,
  excerpts: boolean,
): Finding | undefined {
  const { finding } = candidate
  const proved = finding.signals.some((s) => s.certain)
  for (const evidence of candidate.evidence) {
    let proof: { ref: number; passage: ExactPassage } | undefined
    let any: { ref: number; passage: ExactPassage } | undefined
    for (const { ref } of evidence.sources) {
      const found = candidate.exact.get(ref)
      const own = found?.private
      if (
        own &&
        own.privateUnits >= PROOF_UNITS &&
        (proof === undefined || own.privateUnits > proof.passage.privateUnits)
      )
        proof = { ref, passage: own }
      if (found?.any && (any === undefined || found.any.units > any.passage.units))
        any = { ref, passage: found.any }
    }
    let certain: boolean
    let best: { ref: number; passage: ExactPassage } | undefined
    if (proof) {
      certain = true
      best = proof
    } else if (proved && any) {
      certain = false
      best = any
    } else if (!candidate.verify && evidence.guardRule) certain = false
    else continue
    const source = describe(evidence, best, { index, answer: candidate.answer, excerpts })
    finding.foreign.push(source)
    finding.signals.push(foreignSignal(source, certain))
  }
  if (finding.signals.length === 0) return undefined
  finding.signals.sort(
    (a, b) => Number(b.certain) - Number(a.certain) || WEIGHT[b.check] - WEIGHT[a.check],
  )
  finding.certain = finding.signals.some((s) => s.certain)
  return finding
}

function describe(
  evidence: ForeignContentEvidence,
  best: { ref: number; passage: ExactPassage } | undefined,
  {
    index,
    answer,
    excerpts,
  }: { index: ContentIndex; answer: Record<string, string>; excerpts: boolean },
): ForeignSource {
  const requests: SourceRequest[] = []
  // The request the exact passage came from first, then by fingerprints matched.
  const order = [...evidence.sources].sort(
    (a, b) => Number(b.ref === best?.ref) - Number(a.ref === best?.ref) || b.matches - a.matches,
  )
  for (const { ref, matches } of order.slice(0, 8)) {
    const request = index.requests[ref]
    if (request === undefined) continue
    const source: SourceRequest = { id: request.id, where: request.where, matches }
    if (Number.isFinite(request.startMs)) source.startMs = request.startMs
    if (request.tenant) source.tenant = request.tenant
    if (request.metadata) source.metadata = request.metadata
    requests.push(source)
  }
  const place = best?.passage ?? evidence.longest
  const out: ForeignSource = {
    principal: evidence.principal,
    requests,
    run: evidence.run,
    passages: evidence.passages,
    matches: evidence.matches,
    channel: place.channel,
  }
  if (best) {
    out.span = best.passage.units
    out.privateSpan = best.passage.privateUnits
  }
  if (excerpts) {
    const text = (answer[place.channel] ?? '').slice(place.start, place.end)
    out.excerpt = text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text
  }
  return out
}

function foreignSignal(source: ForeignSource, certain: boolean): Signal {
  const first = source.requests[0]
  const named = first
    ? `request ${first.id} (${first.where}${first.tenant ? `, tenant ${first.tenant}` : ''})`
    : 'an unnamed request'
  const more =
    source.requests.length > 1 ? ` (its text is also in ${source.requests.length - 1} more)` : ''
  const quote =
    source.span !== undefined
      ? `${source.span} consecutive words of the prompt of ${named}${more}`
      : `a passage of the prompt of ${named}${more} (a run of ${source.run} fingerprints)`
  return {
    check: 'foreign_content',
    certain,
    evidence: certain
      ? `the ${source.channel} quotes ${quote}, text its own prompt does not contain`
      : `the ${source.channel} shares ${quote}, text its own prompt does not contain (too short or too common to prove a leak alone)`,
    figures: {
      source: first?.id ?? '',
      sourcePrincipal: source.principal,
      ...(source.span !== undefined ? { spanUnits: source.span } : {}),
      ...(source.privateSpan !== undefined ? { privateUnits: source.privateSpan } : {}),
      run: source.run,
      matches: source.matches,
    },
  }
}
