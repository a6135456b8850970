/**
 * @module The audit itself: two streaming passes over the log sources (I/O injected as line
 * iterables). Pass 1 reads every record, counts what each file lacks and its malformed lines, and
 * puts each prompt's fingerprints in the bounded {@link ContentIndex}. Pass 2 reads them again and
 * judges each request: the per-request signals and, against the complete index, foreign content —
 * so a leak is attributed to its source whatever order the logs come in (AI Gateway's list API is
 * newest first). The index is the only state that grows with the logs; findings are kept for
 * suspicious requests only.
 */
import { promptPieces } from '../ceiling/prompt'
import {
  FINGERPRINT_DEFAULTS,
  type FingerprintKey,
  fingerprintKey,
  printPrompt,
} from '../fingerprint'
import { BUILTIN_PROFILES, type ModelProfile } from '../guard/options'
import { promptTexts } from '../plan/prompt-texts'
import {
  type ExactPassage,
  exactPassages,
  type ForeignContentEvidence,
  guaranteedSpan,
  type OwnMask,
  ownMask,
  scanForeign,
} from './content'
import { ContentIndex, type ContentIndexStats } from './content-index'
import { detectFormat, readValue } from './formats'
import { type AuditRecord, type CheckName, FORMAT_LIMITS, type LogFormat } from './record'
import {
  recordSignals,
  SIGNAL_DEFAULTS,
  type Signal,
  type SignalSettings,
  verdictSignals,
} from './signals'

/** A log file (or any line source): read twice, once per pass. */
export interface LogSource {
  /** Its name in the report (the path as given). */
  name: string
  /** Its size in bytes, for progress. */
  size?: number
  /** Its lines, without line ends. Called once per pass. */
  lines(): AsyncIterable<string>
}

/** Options of {@link runAudit}. */
export interface AuditOptions {
  /** Per-model profile overrides, merged over the guard's built-in profiles (as `GuardOptions.models`). */
  models?: Record<string, Partial<ModelProfile>>
  /** Memory of the content index, bytes. @default 268435456 (256 MiB) */
  indexBudgetBytes?: number
  /** A source request must be at most this much older than the answer, ms. @default Infinity */
  sourceWindowMs?: number
  /** Width of the report's time windows, ms. @default 3600000 (1 hour) */
  windowMs?: number
  /** Signal thresholds. */
  signals?: Partial<SignalSettings>
  /** Quote the matched text in the report (it is the logs' own text). @default true */
  excerpts?: boolean
  /** Findings kept in full; beyond it they are counted only. @default 10000 */
  maxFindings?: number
  /** Called as the passes advance (drives the CLI's progress bar). */
  onProgress?: (progress: AuditProgress) => void
  /** 32 bytes for the fingerprint key. @default random */
  seed?: Uint8Array
}

/** Progress of a run. */
export interface AuditProgress {
  pass: 1 | 2
  file: string
  /** Characters read in this pass over all files (≈ bytes for ASCII logs). */
  read: number
  /** Bytes of all files (0 when unknown). */
  total: number
  records: number
  findings: number
}

/** A malformed line (or page item). */
export interface Malformed {
  line: number
  item?: number
  why: string
}

/** What one input file held and lacked. */
export interface FileReport {
  name: string
  lines: number
  characters: number
  /** Records per format (a file may mix formats). */
  formats: Partial<Record<LogFormat, number>>
  records: number
  malformed: { count: number; first: Malformed[] }
  /** Records lacking what some checks need. */
  gaps: {
    noPrompt: number
    noAnswer: number
    noTiming: number
    noTenant: number
    noProfile: number
    encrypted: number
  }
  /** A whole-file JSON document (a list API page) rather than JSON lines. */
  document: boolean
  /** Why the file could not be read at all, if it could not. */
  error?: string
}

/** Whose data appeared where. */
export interface SourceRequest {
  id: string
  where: string
  startMs?: number
  tenant?: string
  metadata?: Record<string, string | number | boolean | null>
  /** Fingerprints of this request matched in the answer. */
  matches: number
}

/** Foreign content in one answer, from one other principal. */
export interface ForeignSource {
  /** The tenant (or `request <id>` when the log names none). */
  principal: string
  requests: SourceRequest[]
  run: number
  passages: number
  matches: number
  channel: string
  /** Units of the longest passage found verbatim in the source request's prompt (exact pass). */
  span?: number
  /** The answer's text of that passage, or of the longest run (absent with `excerpts: false`). */
  excerpt?: string
}

/** One suspicious request. */
export interface Finding {
  id: string
  format: LogFormat
  where: string
  startMs?: number
  tenant?: string
  model?: string
  status?: number
  metadata?: Record<string, string | number | boolean | null>
  /** Strongest first. */
  signals: Signal[]
  foreign: ForeignSource[]
  /** At least one signal is proof. */
  certain: boolean
  /** The guard withheld this answer (verdict logs): the client never received it. */
  withheld: boolean
  /** Verdict logs: the tenants whose data the guard found in the answer (its canaries). */
  sourceTenants?: string[]
}

/** A window of the report's timeline. */
export interface TimeWindow {
  startMs: number
  endMs: number
  findings: number
  certain: number
  ids: string[]
}

/** One flow of data: answers of `to` carried prompts of `from`. */
export interface DataFlow {
  from: string
  to: string
  answers: number
  sourceRequests: string[]
  answerRequests: string[]
}

/** Per check: how many requests it could judge, and why not the others. */
export interface CheckCoverage {
  judged: number
  skipped: Record<string, number>
}

/** The audit's report (rendered by report.ts as text, JSON or CSV). */
export interface AuditReport {
  /** `signature`: at least one proof; `suspicious`: indications only; `clean`: nothing. */
  verdict: 'signature' | 'suspicious' | 'clean'
  /** 0 nothing found (or indications only), 1 signature found. */
  exitCode: 0 | 1
  summary: string
  files: FileReport[]
  records: number
  findings: Finding[]
  /** Findings beyond `maxFindings`, counted only. */
  findingsOmitted: number
  windows: TimeWindow[]
  flows: DataFlow[]
  coverage: Record<CheckName, CheckCoverage>
  disabledByFormat: { format: LogFormat; check: CheckName; why: string }[]
  models: { model: string; requests: number; pool?: number; maxPrefillTokensPerSecond?: number }[]
  index: ContentIndexStats & { guaranteedSpanUnits: number; note: string }
  settings: { windowMs: number; sourceWindowMs: number } & SignalSettings
}

const WEIGHT: Record<CheckName, number> = {
  foreign_content: 4,
  prefill_speed: 3,
  usage_undercount: 2,
  over_pool: 1,
}

/** Characters of a multi-line JSON document read whole (a list API page is far smaller). */
const MAX_DOCUMENT_CHARS = 256 * 1024 * 1024
/** Malformed lines listed per file (the rest are counted). */
const MALFORMED_LISTED = 20
/** Characters of a quoted excerpt. */
const EXCERPT_CHARS = 240

/** Profile lookup: exact name, then a name that ends with a known one (`workers-ai/@cf/…`). */
function profileResolver(
  models: AuditOptions['models'],
): (model: string | undefined) => ModelProfile | undefined {
  const profiles = new Map<string, ModelProfile>()
  for (const [model, profile] of Object.entries(BUILTIN_PROFILES))
    profiles.set(model, { ...profile })
  for (const [model, override] of Object.entries(models ?? {})) {
    const base = profiles.get(model)
    const merged = { ...base, ...override } as Partial<ModelProfile>
    for (const field of ['contextWindow', 'kvPoolTokens', 'maxPrefillTokensPerSecond'] as const) {
      const value = merged[field]
      if (typeof value !== 'number' || !(value > 0)) {
        throw new Error(`model profile "${model}": ${field} must be a positive number`)
      }
    }
    profiles.set(model, {
      tokenizerDrift: 0.03,
      defaultOutputReserve: 4096,
      echo: 'require',
      cacheIsolation: 'prefix',
      ...merged,
    } as ModelProfile)
  }
  const cache = new Map<string, ModelProfile | undefined>()
  return (model) => {
    if (model === undefined) return undefined
    if (cache.has(model)) return cache.get(model)
    let found = profiles.get(model)
    if (found === undefined) {
      for (const [name, profile] of profiles) {
        if (model.endsWith(name) || model.endsWith(name.replace(/^@cf\//, ''))) found = profile
      }
    }
    if (cache.size < 1024) cache.set(model, found)
    return found
  }
}

/**
 * Audits log sources: every request that carries the incident's signature, with its evidence.
 *
 * @example
 * const report = await runAudit([{ name: 'gw.jsonl', lines: () => readLines('gw.jsonl') }], {})
 * report.exitCode // 1 when a signature was found
 */
export async function runAudit(
  sources: readonly LogSource[],
  options: AuditOptions = {},
): Promise<AuditReport> {
  const settings: SignalSettings = { ...SIGNAL_DEFAULTS, ...options.signals }
  const params = FINGERPRINT_DEFAULTS
  const key = fingerprintKey(options.seed ?? crypto.getRandomValues(new Uint8Array(32)))
  const index = new ContentIndex(options.indexBudgetBytes ?? 256 * 1024 * 1024)
  const profileOf = profileResolver(options.models)
  const total = sources.reduce((sum, s) => sum + (s.size ?? 0), 0)
  const files: FileReport[] = []
  const refs = new Map<string, number>()
  const models = new Map<string, number>()
  let records = 0

  // Pass 1: read, count gaps, index prompts.
  let read = 0
  for (const source of sources) {
    const file = emptyFile(source.name)
    files.push(file)
    for await (const { record, chars } of readSource(source, file)) {
      read += chars
      if (record === undefined) continue
      records++
      countGaps(file, record, profileOf(record.model))
      models.set(record.model ?? '(none)', (models.get(record.model ?? '(none)') ?? 0) + 1)
      if (record.inputs) {
        const texts = promptTexts(record.inputs)
        const ref = index.addRequest({
          id: record.id,
          principal: principalOf(record),
          startMs: record.startMs ?? Number.NaN,
          where: whereOf(record),
          ...(record.tenant ? { tenant: record.tenant } : {}),
          ...(record.metadata ? { metadata: record.metadata } : {}),
        })
        if (ref >= 0) {
          refs.set(placeKey(record), ref)
          for (const fp of printPrompt(key, texts, params).selected) index.add(fp, ref)
        }
      }
      if (records % 256 === 0) progress(options, 1, source.name, read, total, records, 0)
    }
  }

  // Pass 2: judge each request; answers quoting other principals' prompts become candidates.
  const findings: Finding[] = []
  const candidates: Candidate[] = []
  let omitted = 0
  let found = 0
  const coverage = emptyCoverage()
  const ctx: JudgeContext = {
    settings,
    coverage,
    index,
    key,
    refs,
    sourceWindowMs: options.sourceWindowMs ?? Number.POSITIVE_INFINITY,
    candidateChars: 0,
  }
  read = 0
  let seen = 0
  for (const source of sources) {
    for await (const { record, chars } of readSource(source, undefined)) {
      read += chars
      if (record === undefined) continue
      seen++
      const judged = await judge(record, profileOf(record.model), ctx)
      if (judged.candidate) candidates.push(judged.candidate)
      else if (judged.finding) {
        found++
        if (findings.length < (options.maxFindings ?? 10_000)) findings.push(judged.finding)
        else omitted++
      }
      if (seen % 64 === 0) progress(options, 2, source.name, read, total, seen, found)
    }
  }

  // Pass 3 (only the candidates' source lines are parsed): exact passages of each source prompt.
  await verifyCandidates(sources, candidates, index, key)
  for (const candidate of candidates) {
    const finding = concludeCandidate(candidate, index, options.excerpts !== false)
    if (finding === undefined) continue
    found++
    if (findings.length < (options.maxFindings ?? 10_000)) findings.push(finding)
    else omitted++
  }
  progress(options, 2, sources.at(-1)?.name ?? '', read, total, seen, found)
  return buildReport({
    files,
    records,
    findings,
    omitted,
    coverage,
    models,
    profileOf,
    index,
    settings,
    options,
  })
}

function progress(
  options: AuditOptions,
  pass: 1 | 2,
  file: string,
  read: number,
  total: number,
  records: number,
  findings: number,
): void {
  options.onProgress?.({ pass, file, read, total, records, findings })
}

function emptyFile(name: string): FileReport {
  return {
    name,
    lines: 0,
    characters: 0,
    formats: {},
    records: 0,
    malformed: { count: 0, first: [] },
    gaps: { noPrompt: 0, noAnswer: 0, noTiming: 0, noTenant: 0, noProfile: 0, encrypted: 0 },
    document: false,
  }
}

function emptyCoverage(): Record<CheckName, CheckCoverage> {
  return {
    over_pool: { judged: 0, skipped: {} },
    prefill_speed: { judged: 0, skipped: {} },
    usage_undercount: { judged: 0, skipped: {} },
    foreign_content: { judged: 0, skipped: {} },
  }
}

const principalOf = (record: AuditRecord): string => record.tenant ?? `request ${record.id}`
const placeKey = (r: AuditRecord): string =>
  `${r.place.file}\u0000${r.place.line}\u0000${r.place.item ?? -1}`
const whereOf = (r: AuditRecord): string =>
  `${r.place.file}:${r.place.line}${r.place.item === undefined ? '' : `#${r.place.item}`}`

function countGaps(file: FileReport, record: AuditRecord, profile: ModelProfile | undefined): void {
  file.records++
  file.formats[record.format] = (file.formats[record.format] ?? 0) + 1
  if (record.format === 'guard-verdict') return
  if (!record.inputs) file.gaps.noPrompt++
  if (!record.answer) file.gaps.noAnswer++
  if (record.ttftMs === undefined && record.durationMs === undefined) file.gaps.noTiming++
  if (record.tenant === undefined) file.gaps.noTenant++
  if (profile === undefined) file.gaps.noProfile++
  if (record.bodyNote?.includes('encrypted')) file.gaps.encrypted++
}

function skip(coverage: CheckCoverage, why: string): void {
  coverage.skipped[why] = (coverage.skipped[why] ?? 0) + 1
}

/** What judging one record needs beside the record. */
interface JudgeContext {
  settings: SignalSettings
  coverage: Record<CheckName, CheckCoverage>
  index: ContentIndex
  key: FingerprintKey
  refs: Map<string, number>
  sourceWindowMs: number
  /** Answer characters held by candidates so far (bounded by {@link CANDIDATE_CHARS}). */
  candidateChars: number
}

/** An answer that quotes other principals' prompts, waiting for the exact pass. */
interface Candidate {
  finding: Finding
  answer: Record<string, string>
  mask: OwnMask
  evidence: ForeignContentEvidence[]
  /** Best exact passage per source request (filled by the exact pass). */
  exact: Map<number, ExactPassage>
  /** Whether the exact pass may judge it (false once the candidate budget is spent). */
  verify: boolean
}

/** Answer characters the exact pass may hold (beyond, candidates are judged by the run rule only). */
const CANDIDATE_CHARS = 32 * 1024 * 1024
/** An exact passage of at least this many units from one other request is evidence. */
export const MIN_PASSAGE_UNITS = 10

/** One record's finding (undefined when nothing is suspicious), or a candidate for the exact pass. */
async function judge(
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
  if (scanForeign(index, key, params, self, answer).length === 0) return undefined
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
  const evidence = scanForeign(index, key, params, self, answer, own)
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
async function verifyCandidates(
  sources: readonly LogSource[],
  candidates: readonly Candidate[],
  index: ContentIndex,
  key: FingerprintKey,
): Promise<void> {
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
        const [best] = exactPassages(
          index,
          key,
          FINGERPRINT_DEFAULTS,
          candidate.answer,
          candidate.mask,
          entry.ref,
          print,
          MIN_PASSAGE_UNITS,
        )
        if (best) candidate.exact.set(entry.ref, best)
      }
    }
  }
}

/** A candidate's finding: its foreign sources that meet either rule, with the other signals. */
function concludeCandidate(
  candidate: Candidate,
  index: ContentIndex,
  excerpts: boolean,
): Finding | undefined {
  const { finding } = candidate
  for (const evidence of candidate.evidence) {
    let best: { ref: number; passage: ExactPassage } | undefined
    for (const { ref } of evidence.sources) {
      const passage = candidate.exact.get(ref)
      if (passage && (best === undefined || passage.units > best.passage.units))
        best = { ref, passage }
    }
    if (!evidence.guardRule && best === undefined) continue
    const source = describe(evidence, best, index, candidate.answer, excerpts)
    finding.foreign.push(source)
    finding.signals.push(foreignSignal(source))
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
  index: ContentIndex,
  answer: Record<string, string>,
  excerpts: boolean,
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
  if (best) out.span = best.passage.units
  if (excerpts) {
    const text = (answer[place.channel] ?? '').slice(place.start, place.end)
    out.excerpt = text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text
  }
  return out
}

function foreignSignal(source: ForeignSource): Signal {
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
    certain: true,
    evidence: `the ${source.channel} quotes ${quote}, text its own prompt does not contain`,
    figures: {
      source: first?.id ?? '',
      sourcePrincipal: source.principal,
      ...(source.span !== undefined ? { spanUnits: source.span } : {}),
      run: source.run,
      matches: source.matches,
    },
  }
}

interface Parsed {
  record: AuditRecord | undefined
  chars: number
}

/** Whether a first line opens a multi-line JSON document (a pretty-printed list API page). */
function opensDocument(line: string): boolean {
  const t = line.trim()
  return t === '{' || t === '[' || (/^[{[]/.test(t) && /[[{,]$/.test(t))
}

/**
 * The records of one source. With a `file` report (pass 1), counts lines and malformed ones there;
 * without (pass 2), malformed lines are skipped silently (already counted).
 */
async function* readSource(
  source: LogSource,
  file: FileReport | undefined,
  wanted?: (line: number) => boolean,
): AsyncGenerator<Parsed> {
  let lineNo = 0
  let document: string[] | undefined
  let documentChars = 0
  let documentStart = 0
  let first = true
  try {
    for await (const raw of source.lines()) {
      lineNo++
      const chars = raw.length + 1
      if (file) {
        file.lines++
        file.characters += chars
      }
      if (document) {
        documentChars += chars
        if (documentChars > MAX_DOCUMENT_CHARS) {
          throw new Error(
            `a multi-line JSON document over ${MAX_DOCUMENT_CHARS / 1024 / 1024} MiB: export JSON lines instead`,
          )
        }
        document.push(raw)
        yield { record: undefined, chars }
        continue
      }
      const line = raw.trim()
      if (line === '') {
        yield { record: undefined, chars }
        continue
      }
      if (first) {
        first = false
        if (opensDocument(line)) {
          document = [raw]
          documentChars = chars
          documentStart = lineNo
          if (file) file.document = true
          yield { record: undefined, chars }
          continue
        }
      }
      // The exact pass parses only the lines it wants (a page is parsed whole below).
      if (wanted && !wanted(lineNo)) {
        yield { record: undefined, chars }
        continue
      }
      yield* readLine(line, { file: source.name, line: lineNo }, file, chars)
    }
  } catch (error) {
    if (file) file.error = error instanceof Error ? error.message : String(error)
    return
  }
  if (document) {
    let value: unknown
    try {
      value = JSON.parse(document.join('\n'))
    } catch (error) {
      if (file) {
        malformed(file, {
          line: documentStart,
          why: `not a valid JSON document (${error instanceof Error ? error.message : 'parse error'}): truncated?`,
        })
      }
      return
    }
    yield* readParsed(value, { file: source.name, line: documentStart }, file, 0)
  }
}

function* readLine(
  line: string,
  place: { file: string; line: number },
  file: FileReport | undefined,
  chars: number,
): Generator<Parsed> {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    if (file)
      malformed(file, {
        line: place.line,
        why:
          line.startsWith('{') || line.startsWith('[') ? 'invalid or truncated JSON' : 'not JSON',
      })
    yield { record: undefined, chars }
    return
  }
  yield* readParsed(value, place, file, chars)
}

function* readParsed(
  value: unknown,
  place: { file: string; line: number },
  file: FileReport | undefined,
  chars: number,
): Generator<Parsed> {
  if (detectFormat(value) === undefined) {
    if (file) malformed(file, { line: place.line, why: 'JSON of no known log format' })
    yield { record: undefined, chars }
    return
  }
  const { records, rejected } = readValue(value, place)
  if (file)
    for (const r of rejected)
      malformed(file, { line: place.line, ...(r.item >= 0 ? { item: r.item } : {}), why: r.why })
  if (records.length === 0) yield { record: undefined, chars }
  // The line's characters count once, with its first record.
  let firstRecord = true
  for (const record of records) {
    yield { record, chars: firstRecord ? chars : 0 }
    firstRecord = false
  }
}

function malformed(file: FileReport, entry: Malformed): void {
  file.malformed.count++
  if (file.malformed.first.length < MALFORMED_LISTED) file.malformed.first.push(entry)
}

interface BuildInput {
  files: FileReport[]
  records: number
  findings: Finding[]
  omitted: number
  coverage: Record<CheckName, CheckCoverage>
  models: Map<string, number>
  profileOf: (model: string | undefined) => ModelProfile | undefined
  index: ContentIndex
  settings: SignalSettings
  options: AuditOptions
}

function buildReport(input: BuildInput): AuditReport {
  const { files, findings, index, settings, options } = input
  findings.sort(
    (a, b) => (a.startMs ?? Number.POSITIVE_INFINITY) - (b.startMs ?? Number.POSITIVE_INFINITY),
  )
  const windowMs = options.windowMs ?? 3_600_000
  const windows = new Map<number, TimeWindow>()
  for (const f of findings) {
    const start = f.startMs === undefined ? Number.NaN : Math.floor(f.startMs / windowMs) * windowMs
    const keyMs = Number.isNaN(start) ? -1 : start
    let w = windows.get(keyMs)
    if (w === undefined) {
      w = {
        startMs: keyMs,
        endMs: keyMs < 0 ? -1 : keyMs + windowMs,
        findings: 0,
        certain: 0,
        ids: [],
      }
      windows.set(keyMs, w)
    }
    w.findings++
    if (f.certain) w.certain++
    if (w.ids.length < 50) w.ids.push(f.id)
  }
  const flows = new Map<string, DataFlow>()
  for (const f of findings) {
    const to = f.tenant ?? `request ${f.id}`
    const fromVerdict = (f.sourceTenants ?? []).map((principal) => ({ principal, requests: [] }))
    for (const source of [...f.foreign, ...fromVerdict]) {
      const keyFlow = `${source.principal}\u0000${to}`
      let flow = flows.get(keyFlow)
      if (flow === undefined) {
        flow = { from: source.principal, to, answers: 0, sourceRequests: [], answerRequests: [] }
        flows.set(keyFlow, flow)
      }
      flow.answers++
      if (flow.answerRequests.length < 50) flow.answerRequests.push(f.id)
      for (const r of source.requests) {
        if (!flow.sourceRequests.includes(r.id) && flow.sourceRequests.length < 50)
          flow.sourceRequests.push(r.id)
      }
    }
  }
  const certain = findings.filter((f) => f.certain).length
  const verdict =
    certain > 0 ? 'signature' : findings.length + input.omitted > 0 ? 'suspicious' : 'clean'
  const disabledByFormat: AuditReport['disabledByFormat'] = []
  const formats = new Set(files.flatMap((f) => Object.keys(f.formats) as LogFormat[]))
  for (const format of formats) {
    for (const [check, why] of Object.entries(FORMAT_LIMITS[format].disabled)) {
      disabledByFormat.push({ format, check: check as CheckName, why })
    }
  }
  const stats = index.stats()
  const span = guaranteedSpan(FINGERPRINT_DEFAULTS)
  const leaks = findings.filter((f) => f.foreign.length > 0).length
  const summary =
    verdict === 'clean'
      ? `No request of ${input.records.toLocaleString('en-US')} carries the incident's signature.`
      : `${findings.length + input.omitted} of ${input.records.toLocaleString('en-US')} requests are suspicious, ${certain} with proof; ${leaks} answer(s) carried another request's prompt text (${flows.size} flow(s) of data).`
  return {
    verdict,
    exitCode: verdict === 'signature' ? 1 : 0,
    summary,
    files,
    records: input.records,
    findings,
    findingsOmitted: input.omitted,
    windows: [...windows.values()].sort((a, b) => a.startMs - b.startMs),
    flows: [...flows.values()].sort((a, b) => b.answers - a.answers),
    coverage: input.coverage,
    disabledByFormat,
    models: [...input.models.entries()].map(([model, requests]) => {
      const profile = input.profileOf(model === '(none)' ? undefined : model)
      return {
        model,
        requests,
        ...(profile
          ? {
              pool: Math.min(profile.kvPoolTokens, profile.contextWindow),
              maxPrefillTokensPerSecond: profile.maxPrefillTokensPerSecond,
            }
          : {}),
      }
    }),
    index: {
      ...stats,
      guaranteedSpanUnits: stats.sampleLevel === 0 ? span : span * 2 ** stats.sampleLevel,
      note:
        stats.sampleLevel === 0
          ? `every prompt fingerprint kept; a single quote of ${span} units is always found`
          : `memory bound reached: 1 in ${2 ** stats.sampleLevel} fingerprints kept, quotes need about ${span * 2 ** stats.sampleLevel} units (raise --index-mb)`,
    },
    settings: {
      windowMs,
      sourceWindowMs: options.sourceWindowMs ?? Number.POSITIVE_INFINITY,
      ...settings,
    },
  }
}
