/**
 * @module The report's summary parts: time windows, flows of data between senders, the verdict and its
 * exit code, the checks each format turns off, and the content index's figures.
 */

import type { ModelProfile } from '../../core'
import { FINGERPRINT_DEFAULTS } from '../../plugins/foreign-content'
import { guaranteedSpan } from './content'
import type { ContentIndex } from './content-index'
import type {
  AuditOptions,
  AuditReport,
  CheckCoverage,
  DataFlow,
  FileReport,
  Finding,
  TimeWindow,
} from './findings'
import { type CheckName, FORMAT_LIMITS, type LogFormat } from './record'
import type { SignalSettings } from './signals'

/** What the passes gathered. */
interface BuildInput {
  files: FileReport[]
  records: number
  findings: Finding[]
  omitted: number
  outsidePeriod: number
  coverage: Record<CheckName, CheckCoverage>
  models: Map<string, number>
  profileOf: (model: string | undefined) => ModelProfile | undefined
  index: ContentIndex
  settings: SignalSettings
  options: AuditOptions
}

/** Findings by time window of `windowMs` (findings without a time in one window at −1). */
function windowsOf(findings: readonly Finding[], windowMs: number): TimeWindow[] {
  const windows = new Map<number, TimeWindow>()
  for (const f of findings) {
    const start = f.startMs === undefined ? -1 : Math.floor(f.startMs / windowMs) * windowMs
    let w = windows.get(start)
    if (w === undefined) {
      w = {
        startMs: start,
        endMs: start < 0 ? -1 : start + windowMs,
        findings: 0,
        certain: 0,
        ids: [],
      }
      windows.set(start, w)
    }
    w.findings++
    if (f.certain) w.certain++
    if (w.ids.length < 50) w.ids.push(f.id)
  }
  return [...windows.values()].sort((a, b) => a.startMs - b.startMs)
}

/** Whose data appeared where: sender of the prompt → receiver of the answer, with their requests. */
function flowsOf(findings: readonly Finding[]): DataFlow[] {
  const flows = new Map<string, DataFlow>()
  for (const f of findings) {
    const to = f.tenant ?? `request ${f.id}`
    const fromVerdict = (f.sourceTenants ?? []).map((principal) => ({ principal, requests: [] }))
    for (const source of [...f.foreign, ...fromVerdict]) {
      const key = `${source.principal}\u0000${to}`
      let flow = flows.get(key)
      if (flow === undefined) {
        flow = { from: source.principal, to, answers: 0, sourceRequests: [], answerRequests: [] }
        flows.set(key, flow)
      }
      flow.answers++
      if (flow.answerRequests.length < 50) flow.answerRequests.push(f.id)
      for (const r of source.requests) {
        if (!flow.sourceRequests.includes(r.id) && flow.sourceRequests.length < 50) {
          flow.sourceRequests.push(r.id)
        }
      }
    }
  }
  return [...flows.values()].sort((a, b) => b.answers - a.answers)
}

/** The checks each format present turns off. */
function disabledOf(files: readonly FileReport[]): AuditReport['disabledByFormat'] {
  const out: AuditReport['disabledByFormat'] = []
  const formats = new Set(files.flatMap((f) => Object.keys(f.formats) as LogFormat[]))
  for (const format of formats) {
    for (const [check, why] of Object.entries(FORMAT_LIMITS[format].disabled)) {
      out.push({ format, check: check as CheckName, why })
    }
  }
  return out
}

/** The index's figures, with the quote length the current sample still always finds. */
function indexFigures(index: ContentIndex): AuditReport['index'] {
  const stats = index.stats()
  const span = guaranteedSpan(FINGERPRINT_DEFAULTS)
  const needed = span * 2 ** stats.sampleLevel
  return {
    ...stats,
    guaranteedSpanUnits: needed,
    note:
      stats.sampleLevel === 0
        ? `every prompt fingerprint kept; a single quote of ${span} units is always found`
        : `memory bound reached: 1 in ${2 ** stats.sampleLevel} fingerprints kept, quotes need about ${needed} units (raise --index-mb)`,
  }
}

/**
 * The report from what the passes gathered.
 *
 * @example
 * const report = buildReport({ files, records, findings, omitted, coverage, models, profileOf, index, settings, options })
 */
export function buildReport(input: BuildInput): AuditReport {
  const { files, findings, settings, options } = input
  findings.sort(
    (a, b) => (a.startMs ?? Number.POSITIVE_INFINITY) - (b.startMs ?? Number.POSITIVE_INFINITY),
  )
  const windowMs = options.windowMs ?? 3_600_000
  const flows = flowsOf(findings)
  const certain = findings.filter((f) => f.certain).length
  const suspicious = findings.length + input.omitted
  const verdict = certain > 0 ? 'signature' : suspicious > 0 ? 'suspicious' : 'clean'
  const leaks = findings.filter((f) => f.foreign.length > 0).length
  const records = input.records.toLocaleString('en-US')
  return {
    verdict,
    exitCode: verdict === 'signature' ? 1 : 0,
    summary:
      verdict === 'clean'
        ? `No request of ${records} carries the incident's signature.`
        : `${suspicious} of ${records} requests are suspicious, ${certain} with proof; ${leaks} answer(s) carried another request's prompt text (${flows.length} flow(s) of data).`,
    files,
    records: input.records,
    findings,
    findingsOmitted: input.omitted,
    windows: windowsOf(findings, windowMs),
    flows,
    coverage: input.coverage,
    disabledByFormat: disabledOf(files),
    models: [...input.models.entries()].map(([model, requests]) => {
      const profile = input.profileOf(model === '(none)' ? undefined : model)
      if (profile === undefined) return { model, requests }
      const pool = Math.min(profile.kvPoolTokens, profile.contextWindow)
      return { model, requests, pool, maxPrefillTokensPerSecond: profile.maxPrefillTokensPerSecond }
    }),
    index: indexFigures(input.index),
    settings: {
      windowMs,
      sourceWindowMs: options.sourceWindowMs ?? Number.POSITIVE_INFINITY,
      ...(options.sinceMs === undefined ? {} : { sinceMs: options.sinceMs }),
      ...(options.untilMs === undefined ? {} : { untilMs: options.untilMs }),
      ...settings,
    },
    outsidePeriod: input.outsidePeriod,
  }
}
