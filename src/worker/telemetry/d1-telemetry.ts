/**
 * @module Verdict telemetry in D1 (schema: migrations/0004_verdict_telemetry.sql): one batch per
 * verdict writes its sample (when kept), its exact counters and its histogram buckets; the console
 * reads samples, refusals and margin history; /admin/metrics reads the counters.
 */
import { BUILTIN_PROFILES, type VerdictLog } from '../../core'
import type {
  CounterRow,
  HistogramRow,
  MarginPoint,
  MarginSource,
  MetricsSnapshot,
  RefusalCount,
  SampleQuery,
  TelemetryReader,
  VerdictSample,
} from './types'
import { incrementsOf, keepSample, sampleOf, sampleWeight } from './verdict-rows'

/** Options of {@link D1Telemetry}. */
interface D1TelemetryOptions {
  /**
   * Share of releases whose sample row is kept (refusals and quarantines always are), 0 to 1.
   * @default 1
   */
  sampleRate?: number
  /** Sample rows older than this are deleted. @default 7 */
  retentionDays?: number
  /** Most sample rows kept; the oldest go first. @default 500000 */
  maxSamples?: number
  /**
   * The models counted under their own name in the metrics (the configured profiles); any other is
   * counted as `other`, so a tenant naming models cannot add series. @default the built-in profiles
   */
  models?: Iterable<string>
  /** Where `marginHistory` reads from (the Worker: its GuardState Durable Object). @default none */
  margins?: MarginSource
  /** Clock, ms. @default Date.now */
  now?: () => number
}

/** What one {@link D1Telemetry.record} cost, as D1 reports (and bills) it. */
interface RecordCost {
  /** Whether the verdict's sample row was written. */
  sampled: boolean
  statements: number
  /** Rows written, index entries included (D1 bills these). */
  rowsWritten: number
  rowsRead: number
}

/** Rows each retention statement deletes at most per write: the work per verdict stays bounded. */
const PRUNE_BATCH = 32

/** Most rows a sample query returns. */
const MAX_LIMIT = 10_000

interface SampleRow {
  at: number
  model: string
  tenant: string
  action: VerdictSample['action']
  reasons: string
  estimated_tokens: number | null
  token_bound: number | null
  ttft_ms: number | null
  expected_min_ms: number | null
  first_byte_ms: number | null
  scripts: string | null
  incident_id: string | null
  weight: number
}

/**
 * Writer and reader of verdict telemetry over a D1 database (the Worker's QUARANTINE_DB).
 *
 * @example
 * const telemetry = new D1Telemetry(env.QUARANTINE_DB, { sampleRate: 0.1 })
 * ctx.waitUntil(telemetry.record(event))
 * const points = await telemetry.samples({ since: Date.now() - 86_400_000, limit: 2000 })
 */
export class D1Telemetry implements TelemetryReader {
  readonly #db: D1Database
  readonly #rate: number
  readonly #retentionMs: number
  readonly #maxSamples: number
  readonly #models: ReadonlySet<string>
  readonly #margins: MarginSource | undefined
  readonly #now: () => number

  constructor(db: D1Database, options: D1TelemetryOptions = {}) {
    const rate = options.sampleRate ?? 1
    if (!(rate >= 0 && rate <= 1)) throw new Error('option "sampleRate" must be between 0 and 1')
    const days = options.retentionDays ?? 7
    if (!(days > 0)) throw new Error('option "retentionDays" must be a positive number')
    const max = options.maxSamples ?? 500_000
    if (!(Number.isInteger(max) && max > 0)) {
      throw new Error('option "maxSamples" must be a positive integer')
    }
    this.#db = db
    this.#rate = rate
    this.#retentionMs = days * 86_400_000
    this.#maxSamples = max
    this.#models = new Set(options.models ?? Object.keys(BUILTIN_PROFILES))
    this.#margins = options.margins
    this.#now = options.now ?? (() => Date.now())
  }

  /** The share of releases kept as samples. */
  get sampleRate(): number {
    return this.#rate
  }

  /**
   * Records one verdict in one batch (one transaction): the sample row if kept, the counters, the
   * histogram buckets, and — when a row was written — at most {@link PRUNE_BATCH} expired rows out.
   */
  async record(event: VerdictLog): Promise<RecordCost> {
    const at = this.#now()
    const statements: D1PreparedStatement[] = []
    const kept = keepSample(event, this.#rate)
    if (kept)
      statements.push(
        this.#insertSample(sampleOf(event, at, sampleWeight(event.action, this.#rate))),
      )
    const { counters, observations } = incrementsOf(event, this.#models)
    if (counters.length > 0) {
      statements.push(
        this.#db
          .prepare(
            `INSERT INTO verdict_counters (metric, model, action, reason, script, value)
             VALUES ${counters.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
             ON CONFLICT (metric, model, action, reason, script) DO UPDATE SET value = value + excluded.value`,
          )
          .bind(
            ...counters.flatMap((c) => [c.metric, c.model, c.action, c.reason, c.script, c.value]),
          ),
      )
    }
    if (observations.length > 0) {
      statements.push(
        this.#db
          .prepare(
            `INSERT INTO verdict_histograms (metric, model, le, count, sum)
             VALUES ${observations.map(() => '(?, ?, ?, 1, ?)').join(', ')}
             ON CONFLICT (metric, model, le) DO UPDATE SET count = count + 1, sum = sum + excluded.sum`,
          )
          .bind(...observations.flatMap((o) => [o.metric, o.model, o.le, o.seconds])),
      )
    }
    if (kept) statements.push(...this.#pruneStatements(at))
    const results = await this.#db.batch(statements)
    let rowsWritten = 0
    let rowsRead = 0
    for (const result of results) {
      rowsWritten += result.meta.rows_written ?? 0
      rowsRead += result.meta.rows_read ?? 0
    }
    return { sampled: kept, statements: statements.length, rowsWritten, rowsRead }
  }

  /**
   * Deletes expired and surplus sample rows, {@link PRUNE_BATCH} of each at a time, until none is left
   * (writes do the same a batch at a time; this is for a cron or a test). Returns the rows deleted.
   */
  async prune(): Promise<number> {
    let deleted = 0
    for (;;) {
      const results = await this.#db.batch(this.#pruneStatements(this.#now()))
      const n = results.reduce((sum, r) => sum + (r.meta.changes ?? 0), 0)
      deleted += n
      if (n === 0) return deleted
    }
  }

  #pruneStatements(at: number): D1PreparedStatement[] {
    return [
      // By the `at` index, oldest first: never a scan when nothing has expired.
      this.#db
        .prepare(
          `DELETE FROM verdict_samples WHERE id IN
             (SELECT id FROM verdict_samples WHERE at < ? ORDER BY at LIMIT ${PRUNE_BATCH})`,
        )
        .bind(at - this.#retentionMs),
      // Ids grow with every insert and rows leave oldest first, so the newest `maxSamples` rows are
      // exactly those above MAX(id) − maxSamples: one rowid lookup, no COUNT(*).
      this.#db
        .prepare(
          `DELETE FROM verdict_samples WHERE id IN
             (SELECT id FROM verdict_samples
              WHERE id <= (SELECT MAX(id) FROM verdict_samples) - ? ORDER BY id LIMIT ${PRUNE_BATCH})`,
        )
        .bind(this.#maxSamples),
    ]
  }

  #insertSample(sample: VerdictSample): D1PreparedStatement {
    return this.#db
      .prepare(
        `INSERT INTO verdict_samples (at, model, tenant, action, reasons, estimated_tokens,
           token_bound, ttft_ms, expected_min_ms, first_byte_ms, scripts, incident_id, weight)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(
        sample.at,
        sample.model,
        sample.tenant,
        sample.action,
        JSON.stringify(sample.reasons),
        sample.estimatedTokens ?? null,
        sample.tokenBound ?? null,
        sample.ttftMs ?? null,
        sample.expectedMinMs ?? null,
        sample.firstByteMs ?? null,
        sample.scripts ? JSON.stringify(sample.scripts) : null,
        sample.incidentId ?? null,
        sample.weight,
      )
  }

  /** Samples, newest first (`limit` default 1000, at most 10,000). */
  async samples(query: SampleQuery = {}): Promise<VerdictSample[]> {
    const { where, args } = filters(query)
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 1000)), MAX_LIMIT)
    const { results } = await this.#db
      .prepare(
        `SELECT at, model, tenant, action, reasons, estimated_tokens, token_bound, ttft_ms,
           expected_min_ms, first_byte_ms, scripts, incident_id, weight
         FROM verdict_samples ${where} ORDER BY at DESC, id DESC LIMIT ${limit}`,
      )
      .bind(...args)
      .all<SampleRow>()
    // A row edited into something this store never writes is left out: one bad sample must not blank
    // every chart of the overview (the reader's caller drops the whole answer on a throw).
    return results.flatMap((row) => fromRow(row) ?? [])
  }

  /**
   * Refusals in the window per reason and script class (a refusal driven by two classes counts under
   * each; one with none under `none`), most first. Exact: every refusal's sample is kept.
   */
  async refusals(query: Omit<SampleQuery, 'limit'> = {}): Promise<RefusalCount[]> {
    const { where, args } = filters(query, ["action != 'release'", "action = 'reject'"])
    const { results } = await this.#db
      .prepare(
        `SELECT r.value AS reason, COALESCE(s.value, 'none') AS script, COUNT(*) AS count
         FROM verdict_samples, json_each(${jsonArray('verdict_samples.reasons')}) AS r
           LEFT JOIN json_each(${jsonArray('verdict_samples.scripts')}) AS s
         ${where} GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2`,
      )
      .bind(...args)
      .all<RefusalCount>()
    return results.map((r) => ({ reason: r.reason, script: r.script, count: r.count }))
  }

  /** The learned margins over time, from the margin source (empty without one). */
  async marginHistory(query: Omit<SampleQuery, 'limit'> = {}): Promise<MarginPoint[]> {
    return this.#margins ? await this.#margins.marginHistory(query) : []
  }

  /** Every counter and histogram bucket, for /admin/metrics. */
  async metrics(): Promise<MetricsSnapshot> {
    const [counters, histograms] = await this.#db.batch<CounterRow | HistogramRow>([
      this.#db.prepare('SELECT metric, model, action, reason, script, value FROM verdict_counters'),
      this.#db.prepare('SELECT metric, model, le, count, sum FROM verdict_histograms'),
    ])
    return {
      counters: (counters?.results ?? []) as CounterRow[],
      histograms: (histograms?.results ?? []) as HistogramRow[],
    }
  }
}

/** The WHERE clause (or '') and its arguments; `fixed` clauses are literal SQL. */
function filters(
  query: Omit<SampleQuery, 'limit'>,
  fixed: string[] = [],
): { where: string; args: (string | number)[] } {
  const where = [...fixed]
  const args: (string | number)[] = []
  if (query.since !== undefined) {
    where.push('at >= ?')
    args.push(query.since)
  }
  if (query.until !== undefined) {
    where.push('at <= ?')
    args.push(query.until)
  }
  if (query.model !== undefined) {
    where.push('model = ?')
    args.push(query.model)
  }
  return { where: where.length ? `WHERE ${where.join(' AND ')}` : '', args }
}

/**
 * SQL for `column` where it is a JSON array, else `[]`: json_each fails the whole query on one
 * malformed value, and a sample row edited into one must not take the refusal counts down.
 */
function jsonArray(column: string): string {
  return `CASE WHEN json_valid(${column}) AND json_type(${column}) = 'array' THEN ${column} ELSE '[]' END`
}

/** A JSON array of strings, or undefined for anything else (an edited or truncated value). */
function stringArray(text: unknown): string[] | undefined {
  try {
    const value: unknown = typeof text === 'string' ? JSON.parse(text) : undefined
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined
  } catch {
    return undefined
  }
}

/** The sample a row holds, or undefined when its JSON columns are not what this store writes. */
function fromRow(row: SampleRow): VerdictSample | undefined {
  const number = (key: keyof VerdictSample, value: number | null) =>
    value === null ? {} : { [key]: value }
  const reasons = stringArray(row.reasons)
  const scripts = row.scripts === null ? undefined : stringArray(row.scripts)
  if (!reasons || (row.scripts !== null && !scripts)) return undefined
  return {
    at: row.at,
    model: row.model,
    tenant: row.tenant,
    action: row.action,
    reasons,
    ...number('estimatedTokens', row.estimated_tokens),
    ...number('tokenBound', row.token_bound),
    ...number('ttftMs', row.ttft_ms),
    ...number('expectedMinMs', row.expected_min_ms),
    ...number('firstByteMs', row.first_byte_ms),
    ...(scripts ? { scripts } : {}),
    ...(row.incident_id !== null ? { incidentId: row.incident_id } : {}),
    weight: row.weight,
  }
}
