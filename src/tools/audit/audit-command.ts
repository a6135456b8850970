/**
 * @module `workers-ai-guard audit <files…> [options]`: argument parsing, output and exit code, with
 * all I/O injected (files, streams, terminal) so the command runs and is tested anywhere; `src/tools/cli.ts`
 * hands it Node's.
 */

import type { ModelProfile } from '../../core'
import { type ArgKind, parseCommandLine, UsageError } from '../cli-args'
import { runAudit } from './audit'
import type { AuditOptions, AuditProgress, LogSource } from './findings'
import { timeMs } from './formats'
import { renderAuditCsv, renderAuditJson, renderAuditText } from './render-report'

/** What the audit command may touch. */
export interface AuditIo {
  /** Writes to standard output (the report). */
  stdout(text: string): void
  /** Writes to standard error (errors, progress). */
  stderr(text: string): void
  /** Whether standard error is a terminal: the progress bar is drawn only then. */
  isTTY: boolean
  /** Terminal width. */
  columns?: number
  /** Opens a log file; rejects when it cannot be read. */
  open(path: string): Promise<LogSource>
}

/**
 * Usage text of `workers-ai-guard audit`.
 *
 * @example
 * io.stdout(AUDIT_USAGE)
 */
export const AUDIT_USAGE = `Usage: workers-ai-guard audit <file…> [options]

Reads exported request logs and reports the requests that carry the KV-cache incident's signature:
a prompt over the model's real pool that was answered, an answer faster than any real prefill of its
prompt, a reported prompt count far below the prompt, and answers quoting another request's prompt
(naming that request). Formats, detected per line: Cloudflare AI Gateway logs (list API records or
pages, Logpush JSON lines, with request/response bodies when present), OpenAI-format request/response
pairs as JSON lines, and workers-ai-guard verdict logs (ai_guard_verdict). Files ending in .gz are
gunzipped. Details: docs/audit.md.

Output
  --json                      one JSON report on stdout
  --csv                       one CSV row per suspicious request on stdout
  --no-excerpts               do not quote the leaked text in the report
  --max-findings <n>          findings kept in full (default 10000; the rest are counted)

Judgement
  --model-profile <spec>      a model's figures, as in the guard: <model>:<field>=<n>[,<field>=<n>…]
                              (fields contextWindow, kvPoolTokens, maxPrefillTokensPerSecond) or a JSON
                              object {"<model>": {…}} (GUARD_MODELS' shape); repeatable. Built in:
                              @cf/zai-org/glm-5.3 (window 1,048,576, pool 681,280, 200,000 tokens/s)
  --usage-floor <fraction>    reported prompt tokens under this share of the estimate (default 0.8)
  --min-timing-ms <ms>        judge timing only when an honest prefill takes this long (default 200)
  --source-window <duration>  a leaked prompt is at most this much older than the answer (default: any)
  --public-text <file>        a text that is public (your app's documents, licences, templates): never
                              evidence of a leak; repeatable. Beside the built-in background of common
                              public text (licences, compiler helpers, README boilerplate)
  --no-background             without the built-in background

Period
  --since <time>              judge only requests from this time on (ISO, e.g. 2026-08-27); earlier ones
                              are still read as possible sources
  --until <time>              …and before this time (e.g. 2026-09-10)

Report
  --window <duration>         width of the report's time windows, e.g. 15m, 1h, 1d (default 1h)
  --index-mb <n>              memory bound of the content index, MiB (default 256)
  --help                      this text

Exit codes: 0 nothing found (or indications without proof), 1 signature found, 2 could not run (bad
arguments, a file that cannot be opened, or no record of a known format in any file).
`

interface Parsed {
  files: string[]
  /** Files of public text (`--public-text`), read before the audit. */
  publicFiles: string[]
  output: 'text' | 'json' | 'csv'
  options: AuditOptions
  help: boolean
}

const PROFILE_FIELDS = new Set(['contextWindow', 'kvPoolTokens', 'maxPrefillTokensPerSecond'])

/** `15m`, `1h`, `2d`, `90s`, `500ms` or a number of seconds, as ms. */
function duration(name: string, raw: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/.exec(raw.trim())
  if (!match)
    throw new UsageError(
      `--${name} must be a duration like 15m, 1h or 1d (got ${JSON.stringify(raw)})`,
    )
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] ?? 's'] ?? 1000
  const ms = Number(match[1]) * unit
  if (!(ms > 0)) throw new UsageError(`--${name} must be positive`)
  return ms
}

function number(name: string, raw: string, min: number, max = Number.POSITIVE_INFINITY): number {
  const text = raw.trim()
  const n = text.endsWith('%') ? Number(text.slice(0, -1)) / 100 : Number(text.replace(/[_,]/g, ''))
  if (text === '' || !Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(
      `--${name} must be a number from ${min}${Number.isFinite(max) ? ` to ${max}` : ''} (got ${JSON.stringify(raw)})`,
    )
  }
  return n
}

/** One `--model-profile` value into the overrides. */
function addProfile(into: Record<string, Partial<ModelProfile>>, raw: string): void {
  const text = raw.trim()
  if (text.startsWith('{')) {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw new UsageError('--model-profile: not valid JSON')
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new UsageError('--model-profile: a JSON object {"<model>": {…}} is expected')
    }
    for (const [model, profile] of Object.entries(value as Record<string, unknown>)) {
      if (typeof profile !== 'object' || profile === null)
        throw new UsageError(`--model-profile: "${model}" must map to an object`)
      const fields: Partial<ModelProfile> = {}
      for (const [field, v] of Object.entries(profile as Record<string, unknown>)) {
        if (!PROFILE_FIELDS.has(field)) continue
        if (typeof v !== 'number' || !(v > 0))
          throw new UsageError(`--model-profile: ${model}.${field} must be a positive number`)
        ;(fields as Record<string, number>)[field] = v
      }
      into[model] = { ...into[model], ...fields }
    }
    return
  }
  const colon = text.lastIndexOf(':')
  if (colon <= 0)
    throw new UsageError('--model-profile: expected <model>:<field>=<n>[,…] or a JSON object')
  const model = text.slice(0, colon)
  const fields: Record<string, number> = {}
  for (const pair of text.slice(colon + 1).split(',')) {
    const [field, value] = pair.split('=')
    if (field === undefined || value === undefined || !PROFILE_FIELDS.has(field.trim())) {
      throw new UsageError(
        `--model-profile: unknown field in ${JSON.stringify(pair)} (use ${[...PROFILE_FIELDS].join(', ')})`,
      )
    }
    fields[field.trim()] = number('model-profile', value, 1)
  }
  into[model] = { ...into[model], ...fields }
}

/** A `--since`/`--until` time in ms. */
function instant(name: string, text: string): number {
  const ms = timeMs(text)
  if (ms === undefined)
    throw new UsageError(`--${name} must be a time, e.g. 2026-08-27 or 2026-08-27T00:00:00Z`)
  return ms
}

/** One option into the parsed settings (`value` is its value; flags have none). */
function applyOption(
  parsed: Parsed,
  into: {
    models: Record<string, Partial<ModelProfile>>
    signals: NonNullable<AuditOptions['signals']>
  },
  name: string,
  value: () => string,
): void {
  switch (name) {
    case 'json':
    case 'csv':
      if (parsed.output !== 'text' && parsed.output !== name)
        throw new UsageError('--json and --csv exclude each other')
      parsed.output = name
      break
    case 'help':
      parsed.help = true
      break
    case 'no-excerpts':
      parsed.options.excerpts = false
      break
    case 'max-findings':
      parsed.options.maxFindings = Math.floor(number(name, value(), 1))
      break
    case 'model-profile':
      addProfile(into.models, value())
      break
    case 'usage-floor':
      into.signals.usageFloor = number(name, value(), 0, 1)
      break
    case 'min-timing-ms':
      into.signals.minEvidenceMs = number(name, value(), 0)
      break
    case 'source-window':
      parsed.options.sourceWindowMs = duration(name, value())
      break
    case 'window':
      parsed.options.windowMs = duration(name, value())
      break
    case 'since':
      parsed.options.sinceMs = instant(name, value())
      break
    case 'until':
      parsed.options.untilMs = instant(name, value())
      break
    case 'public-text':
      parsed.publicFiles.push(value())
      break
    case 'no-background':
      parsed.options.background = false
      break
    case 'index-mb':
      parsed.options.indexBudgetBytes = Math.floor(number(name, value(), 1, 1 << 20) * 1024 * 1024)
      break
    default:
      // parseCommandLine knows only AUDIT_OPTIONS: one listed there and missing here.
      throw new Error(`audit option --${name} has no handler`)
  }
}

/** Every option of the audit and whether it takes a value. */
const AUDIT_OPTIONS: Readonly<Record<string, ArgKind>> = {
  json: 'boolean',
  csv: 'boolean',
  help: 'boolean',
  'no-excerpts': 'boolean',
  'no-background': 'boolean',
  'max-findings': 'string',
  'model-profile': 'string',
  'usage-floor': 'string',
  'min-timing-ms': 'string',
  'source-window': 'string',
  window: 'string',
  since: 'string',
  until: 'string',
  'public-text': 'string',
  'index-mb': 'string',
}

function parseArgs(args: readonly string[]): Parsed {
  const parsed: Parsed = { files: [], publicFiles: [], output: 'text', options: {}, help: false }
  const models: Record<string, Partial<ModelProfile>> = {}
  const signals: NonNullable<AuditOptions['signals']> = {}
  const line = parseCommandLine(args, AUDIT_OPTIONS, true)
  parsed.files.push(...line.positionals)
  for (const { name, value } of line.options) {
    applyOption(parsed, { models, signals }, name, () => value ?? '')
  }
  if (Object.keys(models).length > 0) parsed.options.models = models
  if (Object.keys(signals).length > 0) parsed.options.signals = signals
  return parsed
}

/**
 * Runs `workers-ai-guard audit <args…>` (argv after the word `audit`) and resolves to the exit code:
 * 0 nothing found, 1 signature found, 2 could not run.
 *
 * @example
 * const code = await auditCommand(['logs/gateway.jsonl', '--json'], io)
 */
export async function auditCommand(args: readonly string[], io: AuditIo): Promise<number> {
  let parsed: Parsed
  try {
    parsed = parseArgs(args)
  } catch (error) {
    return failure(io, error)
  }
  if (parsed.help) {
    io.stdout(AUDIT_USAGE)
    return 0
  }
  if (parsed.files.length === 0) return failure(io, new UsageError('no log files given'))
  const sources: LogSource[] = []
  const publicTexts: string[] = []
  try {
    for (const file of parsed.files) sources.push(await named(file, 'open', () => io.open(file)))
    for (const file of parsed.publicFiles) {
      publicTexts.push(await named(file, 'read', () => wholeText(io, file)))
    }
  } catch (error) {
    return failure(io, error, false)
  }
  if (publicTexts.length > 0) parsed.options.publicTexts = publicTexts
  const bar = progressBar(io)
  let report: Awaited<ReturnType<typeof runAudit>>
  try {
    report = await runAudit(sources, {
      ...parsed.options,
      ...(bar.draw ? { onProgress: bar.draw } : {}),
    })
  } catch (error) {
    bar.clear()
    return failure(io, error, false)
  } finally {
    bar.clear()
  }
  const render = { text: renderAuditText, json: renderAuditJson, csv: renderAuditCsv }[
    parsed.output
  ]
  io.stdout(render(report))
  if (report.records === 0) {
    io.stderr(
      'workers-ai-guard audit: no record of a known format in any file: nothing was audited\n',
    )
    return 2
  }
  return report.exitCode
}

/** What `work` does with a file, or an error naming the file and what could not be done to it. */
async function named<T>(file: string, verb: 'open' | 'read', work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw new Error(
      `cannot ${verb} ${file}: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
}

/** A whole file's text (a public text the audit must not count as anyone's). */
async function wholeText(io: AuditIo, file: string): Promise<string> {
  const lines: string[] = []
  for await (const line of (await io.open(file)).lines()) lines.push(line)
  return lines.join('\n')
}

function failure(io: AuditIo, error: unknown, usage = true): number {
  const message = error instanceof Error ? error.message : String(error)
  io.stderr(
    `workers-ai-guard audit: ${message}\n${usage || error instanceof UsageError ? 'Run "workers-ai-guard audit --help" for usage.\n' : ''}`,
  )
  return 2
}

/**
 * One line of progress: a bar over both passes, the pass, the bytes read and what was found.
 *
 * @example
 * auditProgressLine({ pass: 1, file: 'a.jsonl', read: 5e6, total: 2e7, records: 900, findings: 0 }, 80)
 */
export function auditProgressLine(p: AuditProgress, width = 80): string {
  const barWidth = Math.max(10, Math.min(30, width - 50))
  const done =
    p.total > 0 ? ((p.pass - 1) * p.total + Math.min(p.read, p.total)) / (2 * p.total) : 0
  const filled = Math.round(Math.min(1, done) * barWidth)
  const mb = (n: number): string => (n / 1e6).toFixed(1)
  const line = `[${'#'.repeat(filled)}${'·'.repeat(barWidth - filled)}] ${p.pass === 1 ? 'indexing' : 'judging'} ${mb(p.read)}/${mb(p.total)} MB · ${p.records.toLocaleString('en-US')} records${p.pass === 2 ? ` · ${p.findings} suspicious` : ''}`
  return line.length > width ? line.slice(0, width) : line
}

function progressBar(io: AuditIo): {
  draw: ((p: AuditProgress) => void) | undefined
  clear(): void
} {
  let drawn = false
  let last = 0
  return {
    draw: io.isTTY
      ? (p) => {
          const now = Date.now()
          if (now - last < 100) return
          last = now
          drawn = true
          io.stderr(`\r\x1b[2K${auditProgressLine(p, io.columns ?? 80)}`)
        }
      : undefined,
    clear() {
      if (drawn) io.stderr('\r\x1b[2K')
      drawn = false
    },
  }
}
