/**
 * @module The audit report for people (text) and tools (JSON, CSV).
 */
import type { AuditReport, Finding } from './findings'
import { FORMAT_LIMITS, type LogFormat } from './record'

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')

/** ISO time to the second, UTC (`2026-09-01 10:14:03`), or `time unknown`. */
function time(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return 'time unknown'
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19)
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

const VERDICT_TITLE: Record<AuditReport['verdict'], string> = {
  signature: 'SIGNATURE FOUND',
  suspicious: 'indications only (no proof)',
  clean: 'clean',
}

/**
 * The report as text: inputs and what they lack, suspicious requests by time window with their
 * strongest evidence first, whose data appeared where, and the memory bound.
 *
 * @example
 * io.stdout(renderAuditText(report))
 */
export function renderAuditText(report: AuditReport): string {
  const out = [`workers-ai-guard audit — ${VERDICT_TITLE[report.verdict]}`, report.summary, '']
  out.push(...inputLines(report), '', ...checkLines(report))
  if (report.findings.length > 0) out.push('', ...findingSections(report))
  if (report.flows.length > 0) {
    out.push('', 'Whose data appeared where (prompt of → answer to)')
    for (const flow of report.flows) {
      out.push(
        `  ${flow.from} → ${flow.to}: ${fmt(flow.answers)} answer(s); source requests ${flow.sourceRequests.join(', ')}; answers ${flow.answerRequests.join(', ')}`,
      )
    }
  }
  const ix = report.index
  out.push(
    '',
    `Content index: ${fmt(ix.fingerprints)} fingerprints of ${fmt(ix.requests)} prompts, ${mib(ix.bytes)} of the ${mib(ix.budgetBytes)} bound; ${ix.note}.` +
      (ix.unindexed > 0 ? ` ${fmt(ix.unindexed)} prompts not indexed (request table full).` : ''),
  )
  out.push(
    report.exitCode === 1
      ? 'Exit 1: the incident’s signature is in these logs.'
      : report.verdict === 'suspicious'
        ? 'Exit 0: indications only — read them; none is proof on its own.'
        : 'Exit 0: nothing found.',
  )
  return `${out.join('\n')}\n`
}

/** The files read, and the requests outside the period. */
function inputLines(report: AuditReport): string[] {
  const out = ['Inputs']
  for (const file of report.files) out.push(...fileLines(file))
  if (report.outsidePeriod > 0) {
    out.push(
      `  ${fmt(report.outsidePeriod)} requests outside --since/--until: read as possible sources, not judged`,
    )
  }
  return out
}

/** Each check's judged and skipped requests, the checks a format turns off, the model profiles. */
function checkLines(report: AuditReport): string[] {
  const out = ['Checks (requests judged / skipped, and why)']
  for (const [check, c] of Object.entries(report.coverage)) {
    const skipped = Object.entries(c.skipped)
      .map(([why, n]) => `${fmt(n)} ${why}`)
      .join('; ')
    out.push(
      `  ${check.padEnd(17)} judged ${fmt(c.judged)}${skipped ? ` · skipped ${skipped}` : ''}`,
    )
  }
  for (const d of report.disabledByFormat) {
    out.push(`  off for ${FORMAT_LIMITS[d.format].name}: ${d.check} (${d.why})`)
  }
  const unprofiled = report.models.filter((m) => m.pool === undefined)
  for (const m of report.models.filter((m) => m.pool !== undefined)) {
    out.push(
      `  model ${m.model}: pool ${fmt(m.pool ?? 0)} tokens, prefill ≤ ${fmt(m.maxPrefillTokensPerSecond ?? 0)} tokens/s (${fmt(m.requests)} requests)`,
    )
  }
  if (unprofiled.length > 0) {
    out.push(
      `  no profile (pool and speed checks off; give --model-profile): ${unprofiled.map((m) => `${m.model} (${fmt(m.requests)})`).join(', ')}`,
    )
  }
  return out
}

/** The findings under a heading per time window, strongest first. */
function findingSections(report: AuditReport): string[] {
  const out = ['Suspicious requests by time window (UTC), strongest evidence first']
  let window = Number.NaN
  for (const f of report.findings) {
    const w = report.windows.find((x) =>
      f.startMs !== undefined ? f.startMs >= x.startMs && f.startMs < x.endMs : x.startMs < 0,
    )
    if (w && w.startMs !== window) {
      window = w.startMs
      const span =
        w.startMs < 0 ? 'time unknown' : `${time(w.startMs)} – ${time(w.endMs).slice(11)}`
      out.push(`  ${span}: ${fmt(w.findings)} suspicious, ${fmt(w.certain)} with proof`)
    }
    out.push(...findingLines(f))
  }
  if (report.findingsOmitted > 0)
    out.push(`  … and ${fmt(report.findingsOmitted)} more (raise --max-findings or use --json)`)
  return out
}

function fileLines(file: AuditReport['files'][number]): string[] {
  const formats = Object.entries(file.formats)
    .map(([f, n]) => `${FORMAT_LIMITS[f as LogFormat].name} ×${fmt(n)}`)
    .join(' + ')
  const lines = [
    `  ${file.name}: ${formats || 'no records'}${file.document ? ' (one JSON page)' : ''}, ${fmt(file.lines)} lines`,
  ]
  if (file.error) lines.push(`    could not be read to the end: ${file.error}`)
  if (Object.keys(file.formats).length > 1)
    lines.push('    mixed formats: each line was read by its own format')
  if (file.malformed.count > 0) {
    const listed = file.malformed.first
      .map((m) => `${m.line}${m.item === undefined ? '' : `#${m.item}`} (${m.why})`)
      .join(', ')
    lines.push(
      `    ${fmt(file.malformed.count)} malformed line(s), skipped: ${listed}${file.malformed.count > file.malformed.first.length ? ', …' : ''}`,
    )
  }
  const g = file.gaps
  const gaps: string[] = []
  if (g.encrypted)
    gaps.push(`${fmt(g.encrypted)} with encrypted bodies (decrypt them: content checks off)`)
  if (g.noPrompt)
    gaps.push(`${fmt(g.noPrompt)} without prompt text (content and estimate checks off for them)`)
  if (g.noAnswer) gaps.push(`${fmt(g.noAnswer)} without answer text`)
  if (g.noTiming) gaps.push(`${fmt(g.noTiming)} without timing`)
  if (g.noTenant) gaps.push(`${fmt(g.noTenant)} without a tenant (each counts as its own sender)`)
  if (g.noProfile) gaps.push(`${fmt(g.noProfile)} of models without a profile`)
  if (gaps.length > 0) lines.push(`    records ${gaps.join('; ')}`)
  for (const f of Object.keys(file.formats) as LogFormat[]) {
    if (FORMAT_LIMITS[f].lacks.length > 0)
      lines.push(`    ${FORMAT_LIMITS[f].name} never carry: ${FORMAT_LIMITS[f].lacks.join(', ')}`)
    for (const [check, why] of Object.entries(FORMAT_LIMITS[f].weaker))
      lines.push(`    weaker: ${check} — ${why}`)
  }
  return lines
}

function findingLines(f: Finding): string[] {
  const who = [
    f.tenant ? `tenant ${f.tenant}` : undefined,
    f.model,
    f.status === undefined ? undefined : `status ${f.status}`,
  ]
    .filter(Boolean)
    .join(' · ')
  const tag = f.withheld ? 'WITHHELD BY THE GUARD' : f.certain ? 'PROOF' : 'indication'
  const lines = [
    `    ${time(f.startMs).slice(11) || time(f.startMs)}  ${f.id}  ${who}  (${f.where})  [${tag}]`,
  ]
  const [strongest, ...rest] = f.signals
  if (strongest) lines.push(`      ▸ ${strongest.check}: ${strongest.evidence}`)
  for (const source of f.foreign) {
    if (source.excerpt !== undefined) lines.push(`        “${source.excerpt.replace(/\s+/g, ' ')}”`)
    for (const r of source.requests.slice(1)) {
      lines.push(
        `        also from ${r.id} (${r.where}${r.tenant ? `, tenant ${r.tenant}` : ''}, ${r.matches} matched)`,
      )
    }
  }
  for (const s of rest) {
    if (s.check === 'foreign_content') continue
    lines.push(`      · ${s.check}${s.certain ? '' : ' (indication)'}: ${s.evidence}`)
  }
  for (const s of rest.filter((x) => x.check === 'foreign_content'))
    lines.push(`      · ${s.check}: ${s.evidence}`)
  return lines
}

/** JSON has no Infinity: an unbounded window is written as the string "Infinity". */
function jsonNumbers(_key: string, value: unknown): unknown {
  return value === Number.POSITIVE_INFINITY ? 'Infinity' : value
}

/**
 * The report as one JSON document (every field of {@link AuditReport}).
 *
 * @example
 * JSON.parse(renderAuditJson(report)).findings[0].foreign[0].requests[0].id
 */
export function renderAuditJson(report: AuditReport): string {
  return `${JSON.stringify(report, jsonNumbers, 2)}\n`
}

/** The CSV columns, one row per suspicious request. */
export const CSV_COLUMNS = [
  'time',
  'request_id',
  'tenant',
  'model',
  'status',
  'format',
  'where',
  'proof',
  'withheld',
  'checks',
  'strongest_check',
  'strongest_evidence',
  'source_tenants',
  'source_requests',
  'excerpt',
] as const

function cell(value: string | number | boolean | undefined): string {
  const text = value === undefined ? '' : String(value)
  // Formula injection: a cell a spreadsheet would evaluate is quoted with a leading apostrophe.
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

/**
 * The findings as CSV (RFC 4180, header row {@link CSV_COLUMNS}).
 *
 * @example
 * io.stdout(renderAuditCsv(report))
 */
export function renderAuditCsv(report: AuditReport): string {
  const rows = [CSV_COLUMNS.join(',')]
  for (const f of report.findings) {
    const strongest = f.signals[0]
    rows.push(
      [
        f.startMs === undefined ? '' : new Date(f.startMs).toISOString(),
        f.id,
        f.tenant,
        f.model,
        f.status,
        f.format,
        f.where,
        f.certain,
        f.withheld,
        [...new Set(f.signals.map((s) => s.check))].join(';'),
        strongest?.check,
        strongest?.evidence,
        f.foreign.map((s) => s.principal).join(';'),
        f.foreign.flatMap((s) => s.requests.map((r) => r.id)).join(';'),
        f.foreign[0]?.excerpt,
      ]
        .map(cell)
        .join(','),
    )
  }
  return `${rows.join('\r\n')}\r\n`
}
