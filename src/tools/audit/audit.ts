/**
 * @module The audit itself: streaming passes over the log sources (I/O injected as line iterables).
 * Pass 1 reads every record, counts what each file lacks and its malformed lines, and puts each
 * prompt's fingerprints in the bounded {@link ContentIndex}. Pass 2 reads them again and judges each
 * request: the per-request signals and, against the complete index, foreign content — so a leak is
 * attributed to its source whatever order the logs come in (AI Gateway's list API is newest first).
 * Pass 3 parses only the lines of the candidates' sources and measures the quoted passages exactly.
 * The index is the only state that grows with the logs; findings are kept for suspicious requests.
 */

import { BUILTIN_PROFILES, type ModelProfile, promptTexts } from '../../core'
import {
  FINGERPRINT_DEFAULTS,
  type FingerprintKey,
  fingerprintKey,
  PUBLIC_BACKGROUND,
  printPrompt,
} from '../../plugins/foreign-content'
import {
  type Candidate,
  concludeCandidate,
  type JudgeContext,
  judge,
  verifyCandidates,
} from './assess'
import { BACKGROUND_TEXTS } from './background'
import { answerSelections } from './content'
import { ContentIndex } from './content-index'
import type {
  AuditOptions,
  AuditProgress,
  AuditReport,
  CheckCoverage,
  FileReport,
  Finding,
  LogSource,
} from './findings'
import { placeKey, principalOf, readSource, whereOf } from './read-source'
import type { AuditRecord, CheckName } from './record'
import { SIGNAL_DEFAULTS, type SignalSettings } from './signals'
import { buildReport } from './summary'

export type * from './findings'

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

/** What the three passes share. */
interface Run {
  options: AuditOptions
  sources: readonly LogSource[]
  key: FingerprintKey
  index: ContentIndex
  /** Fingerprints of the answers (less their own prompts'), common once three answers hold them. */
  answers: ContentIndex
  profileOf: (model: string | undefined) => ModelProfile | undefined
  /** Bytes of all sources, for progress. */
  total: number
  /** Index reference of each indexed record, by place. */
  refs: Map<string, number>
}

/**
 * Audits log sources: every request that carries the incident's signature, with its evidence.
 *
 * @example
 * const report = await runAudit([await nodeLogSource('gw.jsonl')], {})
 * report.exitCode // 1 when a signature was found
 */
export async function runAudit(
  sources: readonly LogSource[],
  options: AuditOptions = {},
): Promise<AuditReport> {
  const settings: SignalSettings = { ...SIGNAL_DEFAULTS, ...options.signals }
  const budget = options.indexBudgetBytes ?? 256 * 1024 * 1024
  const run: Run = {
    options,
    sources,
    key: fingerprintKey(options.seed ?? crypto.getRandomValues(new Uint8Array(32))),
    index: new ContentIndex(budget),
    // Answers are model output, a small share of the logs' text: an eighth of the bound, beside it.
    answers: new ContentIndex(Math.max(1024 * 1024, budget / 8), 'answers'),
    profileOf: profileResolver(options.models),
    total: sources.reduce((sum, s) => sum + (s.size ?? 0), 0),
    refs: new Map(),
  }
  // Public text is common before anyone sends it: a model reciting a licence or a compiler's helper
  // that one other tenant pasted is not that tenant's data.
  const builtIn = options.background === false ? [] : [...PUBLIC_BACKGROUND, ...BACKGROUND_TEXTS]
  const publicTexts = [...builtIn, ...(options.publicTexts ?? [])]
  for (const text of publicTexts) {
    for (const fp of printPrompt(run.key, [text], FINGERPRINT_DEFAULTS).selected)
      run.index.markCommon(fp)
  }
  const indexed = await indexPass(run)
  const judged = await judgePass(run, settings)
  return buildReport({
    ...indexed,
    ...judged,
    profileOf: run.profileOf,
    index: run.index,
    settings,
    options,
  })
}

/** Pass 1: reads every record, counts what each file lacks, indexes every prompt's fingerprints. */
async function indexPass(
  run: Run,
): Promise<{ files: FileReport[]; records: number; models: Map<string, number> }> {
  const { index, answers, key, refs } = run
  const files: FileReport[] = []
  const models = new Map<string, number>()
  let records = 0
  let read = 0
  for (const source of run.sources) {
    const file = emptyFile(source.name)
    files.push(file)
    for await (const { record, chars } of readSource(source, file)) {
      read += chars
      if (record === undefined) continue
      records++
      countGaps(file, record, run.profileOf(record.model))
      models.set(record.model ?? '(none)', (models.get(record.model ?? '(none)') ?? 0) + 1)
      let print: ReturnType<typeof printPrompt> | undefined
      if (record.inputs) {
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
          print = printPrompt(key, promptTexts(record.inputs), FINGERPRINT_DEFAULTS)
          for (const fp of print.selected) index.add(fp, ref)
        }
      }
      if (record.answer && !(record.status !== undefined && record.status >= 400)) {
        // What an answer quotes of its own prompt says nothing about the model's phrasing.
        const endMs = (record.startMs ?? Number.NaN) + (record.durationMs ?? 0)
        const selected = answerSelections(key, FINGERPRINT_DEFAULTS, record.answer, print)
        for (const fp of new Set(selected)) answers.add(fp, -1, endMs)
      }
      if (records % 256 === 0)
        progress(run, { pass: 1, file: source.name, read, records, found: 0 })
    }
  }
  return { files, records, models }
}

/**
 * Pass 2 judges each request (answers quoting other senders' prompts become candidates); pass 3
 * parses only the candidates' source lines and measures the exact passages.
 */
async function judgePass(
  run: Run,
  settings: SignalSettings,
): Promise<{
  findings: Finding[]
  omitted: number
  coverage: Record<CheckName, CheckCoverage>
  outsidePeriod: number
}> {
  const { options, index, answers, key } = run
  const max = options.maxFindings ?? 10_000
  const findings: Finding[] = []
  const candidates: Candidate[] = []
  let omitted = 0
  const keep = (finding: Finding): void => {
    if (findings.length < max) findings.push(finding)
    else omitted++
  }
  const coverage = emptyCoverage()
  const ctx: JudgeContext = {
    settings,
    coverage,
    index,
    answers,
    key,
    refs: run.refs,
    sourceWindowMs: options.sourceWindowMs ?? Number.POSITIVE_INFINITY,
    candidateChars: 0,
  }
  let read = 0
  let seen = 0
  let outsidePeriod = 0
  for (const source of run.sources) {
    for await (const { record, chars } of readSource(source, undefined)) {
      read += chars
      if (record === undefined) continue
      if (outside(record.startMs, options)) {
        outsidePeriod++
        continue
      }
      seen++
      const judged = await judge(record, run.profileOf(record.model), ctx)
      if (judged.candidate) candidates.push(judged.candidate)
      else if (judged.finding) keep(judged.finding)
      const found = findings.length + omitted
      if (seen % 64 === 0) progress(run, { pass: 2, file: source.name, read, records: seen, found })
    }
  }
  await verifyCandidates(run.sources, candidates, { index, answers, key })
  for (const candidate of candidates) {
    const finding = concludeCandidate(candidate, index, options.excerpts !== false)
    if (finding) keep(finding)
  }
  const last = run.sources.at(-1)?.name ?? ''
  progress(run, { pass: 2, file: last, read, records: seen, found: findings.length + omitted })
  return { findings, omitted, coverage, outsidePeriod }
}

/** Whether a start time falls outside `--since` / `--until` (an unknown time never does). */
function outside(startMs: number | undefined, options: AuditOptions): boolean {
  if (startMs === undefined) return false
  return (
    startMs < (options.sinceMs ?? Number.NEGATIVE_INFINITY) ||
    startMs >= (options.untilMs ?? Number.POSITIVE_INFINITY)
  )
}

/** Tells `onProgress` how far a pass has read (`found`: its findings so far). */
function progress(
  run: Pick<Run, 'options' | 'total'>,
  { found, ...at }: Omit<AuditProgress, 'total' | 'findings'> & { found: number },
): void {
  run.options.onProgress?.({ ...at, total: run.total, findings: found })
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
