/**
 * @module What the console's pages read: filtered, paged incidents from the quarantine store, and the
 * overview's figures from the store, the calibration report and the telemetry reader.
 */
import type { CalibrationReport, QuarantineStore, QuarantineSummary } from '../../core'
import type { MarginPoint, RefusalCount, TelemetryReader, VerdictSample } from '../telemetry/types'

/** The incident list's filters, as the page's form sends them. */
export interface IncidentFilters {
  since?: number
  until?: number
  tenant?: string
  /** A tenant among the record's `sourceTenants` (whose data leaked). */
  source?: string
  reason?: string
  model?: string
  /** `true`: only answers released under observe (`observed=1`); `false`: only withheld ones (`0`). */
  observed?: boolean
  /** Paging: rows strictly after this one in the list's order (`at` descending, then `id`). */
  before?: { at: number; id: string }
}

/** Longest accepted filter value: tenant ids and model names are far shorter. */
const MAX_FILTER = 256

/**
 * The filters in a query string. `since`/`until` are ms since epoch or dates (`YYYY-MM-DD`, UTC; an
 * `until` date includes its whole day); empty values are absent; `before` is `<at>.<id>`.
 *
 * @example
 * parseFilters(new URL(c.req.url).searchParams)
 */
export function parseFilters(params: URLSearchParams): IncidentFilters {
  const filters: IncidentFilters = {}
  const since = time(params.get('since'), false)
  const until = time(params.get('until'), true)
  if (since !== undefined) filters.since = since
  if (until !== undefined) filters.until = until
  for (const key of ['tenant', 'source', 'reason', 'model'] as const) {
    const value = params.get(key)?.trim()
    if (value && value.length <= MAX_FILTER) filters[key] = value
  }
  const observed = observedFilter(params.get('observed'))
  if (observed !== undefined) filters.observed = observed
  const before = /^(\d{1,16})\.(.{1,128})$/.exec(params.get('before') ?? '')
  if (before) filters.before = { at: Number(before[1]), id: before[2]! }
  return filters
}

/**
 * The `observed` filter: `1` (or `true`) released under observe, `0` (or `false`) withheld; anything
 * else, no filter.
 *
 * @example
 * observedFilter('1') // true
 */
export function observedFilter(value: string | null | undefined): boolean | undefined {
  if (value === '1' || value === 'true') return true
  if (value === '0' || value === 'false') return false
  return undefined
}

function time(value: string | null, endOfDay: boolean): number | undefined {
  if (!value) return undefined
  if (/^\d{1,16}$/.test(value)) return Number(value)
  if (!/^\d{4}-\d{2}-\d{2}/.test(value)) return undefined
  const at = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value)
  if (!Number.isFinite(at)) return undefined
  return endOfDay && value.length === 10 ? at + 86_400_000 - 1 : at
}

/** A `YYYY-MM-DD` for a date input, from ms. */
export function dateInput(at: number | undefined): string {
  return at === undefined ? '' : new Date(at).toISOString().slice(0, 10)
}

/** One page of incidents and the cursor of the next, if there is one. */
export interface IncidentPage {
  rows: QuarantineSummary[]
  next?: string
}

const BATCH = 500
const MAX_BATCHES = 8

/**
 * One page of incidents matching `filters`. The store filters by time, tenant, reason and observe; the source
 * tenant and the model are filtered here, reading at most {@link MAX_BATCHES} batches of
 * {@link BATCH} summaries per page (a rare filter over a huge store shows a short page with a "next"
 * link rather than scanning everything in one request).
 *
 * @example
 * const { rows, next } = await incidentPage(guard.quarantine, { tenant: 'tenant-b' }, 50)
 */
export async function incidentPage(
  store: QuarantineStore,
  filters: IncidentFilters,
  size: number,
): Promise<IncidentPage> {
  const rows: QuarantineSummary[] = []
  let cursor = filters.before
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const until =
      cursor === undefined ? filters.until : Math.min(cursor.at, filters.until ?? cursor.at)
    const found = await store.list({
      ...(filters.since !== undefined ? { since: filters.since } : {}),
      ...(until !== undefined ? { until } : {}),
      ...(filters.tenant ? { tenant: filters.tenant } : {}),
      ...(filters.reason ? { reason: filters.reason } : {}),
      ...(filters.observed !== undefined ? { observed: filters.observed } : {}),
      limit: BATCH,
    })
    found.sort(byListOrder)
    for (const row of found) {
      if (cursor && !(row.at < cursor.at || (row.at === cursor.at && row.id > cursor.id))) continue
      // An unreadable row's source tenants are unknown, not none: it stays in view until someone looks.
      if (filters.source && !row.unreadable && !row.sourceTenants.includes(filters.source)) continue
      if (filters.model && row.model !== filters.model) continue
      rows.push(row)
      if (rows.length > size) break
    }
    if (rows.length > size) break
    const last = found.at(-1)
    if (found.length < BATCH || !last) return { rows }
    cursor = { at: last.at, id: last.id }
    // Every row of this batch shared one `at`: the store cannot page past it by time alone.
    if (found[0]!.at === last.at) break
  }
  if (rows.length > size) {
    const last = rows[size - 1]!
    return { rows: rows.slice(0, size), next: `${last.at}.${last.id}` }
  }
  return cursor ? { rows, next: `${cursor.at}.${cursor.id}` } : { rows }
}

function byListOrder(a: QuarantineSummary, b: QuarantineSummary): number {
  return b.at - a.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}

/** Everything the overview draws. */
export interface OverviewData {
  now: number
  days: number
  model: string
  models: string[]
  incidents: QuarantineSummary[]
  samples: VerdictSample[]
  refusals: RefusalCount[]
  margins: MarginPoint[]
  /** The profile's bound, when the model has a profile. */
  prefillTokensPerSecond?: number
  calibration?: CalibrationReport
  /** Whether verdict samples are recorded at all (a telemetry reader is bound). */
  telemetry: boolean
}

/** Where the overview's figures come from (the router fills it from the Worker's bindings). */
export interface OverviewSources {
  store: QuarantineStore
  telemetry?: TelemetryReader
  profileRate(model: string): number | undefined
  calibration(): Promise<Record<string, CalibrationReport>>
}

/** The model the overview shows when none is asked for. */
const DEFAULT_MODEL = '@cf/zai-org/glm-5.3'

/**
 * The overview's figures over the last `days` days for one model (the newest incident's model when
 * none is given). Telemetry failures leave their charts empty rather than failing the page: the
 * incidents come from the quarantine store and must stay visible when sampling is down.
 *
 * @example
 * const data = await overviewData(sources, { now: Date.now(), days: 14 })
 */
export async function overviewData(
  sources: OverviewSources,
  options: { now: number; days: number; model?: string },
): Promise<OverviewData> {
  const since = options.now - options.days * 86_400_000
  const incidents = await sources.store.list({ since, limit: 1000 })
  const telemetry = sources.telemetry
  const [samples, refusals, margins, calibration] = await Promise.all([
    telemetry ? telemetry.samples({ since, limit: 5000 }).catch(() => []) : [],
    telemetry ? telemetry.refusals({ since }).catch(() => []) : [],
    telemetry ? telemetry.marginHistory({ since }).catch(() => []) : [],
    sources.calibration().catch(() => ({}) as Record<string, CalibrationReport>),
  ])
  const models = [
    ...new Set([
      ...incidents.map((r) => r.model),
      ...samples.map((s) => s.model),
      ...Object.keys(calibration),
    ]),
  ].sort()
  const model = options.model ?? incidents[0]?.model ?? samples[0]?.model ?? DEFAULT_MODEL
  if (!models.includes(model)) models.push(model)
  const rate = sources.profileRate(model)
  const report = calibration[model]
  return {
    now: options.now,
    days: options.days,
    model,
    models,
    incidents,
    samples: samples.filter((s) => s.model === model),
    refusals,
    margins: margins.filter((m) => m.model === model),
    ...(rate !== undefined ? { prefillTokensPerSecond: rate } : {}),
    ...(report ? { calibration: report } : {}),
    telemetry: telemetry !== undefined,
  }
}
