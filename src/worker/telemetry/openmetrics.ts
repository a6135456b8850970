/**
 * @module The guard's metrics in OpenMetrics 1.0 text (what Prometheus scrapes): pure rendering of a
 * {@link MetricsSnapshot}, with every label value escaped and the number of model series capped.
 */

import type {
  CounterMetric,
  CounterRow,
  HistogramMetric,
  HistogramRow,
  MetricsSnapshot,
} from './types'
import { OTHER, SECONDS_BUCKETS } from './verdict-rows'

/** The content type of {@link renderOpenMetrics}' text. */
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8'

/**
 * Most model label values rendered; the rest (by fewest verdicts) are summed under `other`. Stored
 * labels are already bounded by the configured models; this bounds the page even for a store filled
 * by something else (a library user allowing unknown models, an old table).
 */
const MAX_MODEL_SERIES = 32

interface CounterFamily {
  name: string
  help: string
  labels: (keyof Pick<CounterRow, 'model' | 'action' | 'reason' | 'script'>)[]
  /** A column written under another label name. */
  names?: Partial<Record<'model' | 'action' | 'reason' | 'script', string>>
}

const COUNTERS: Record<CounterMetric, CounterFamily> = {
  verdicts: {
    name: 'guard_verdicts',
    help: "Verdicts by model, action and first (strongest) reason; 'none' is a clean release; would_block: released under observe, what enforce would have withheld (beside the answer's own release).",
    labels: ['model', 'action', 'reason'],
  },
  verdict_reasons: {
    name: 'guard_verdict_reasons',
    help: 'Reasons given in verdicts: a verdict with two reasons counts under each.',
    labels: ['model', 'action', 'reason'],
  },
  refusals: {
    name: 'guard_refusals',
    help: "Refusals by reason and the script class that drove the estimate ('none' when no class did); a refusal driven by two classes counts under each.",
    labels: ['model', 'reason', 'script'],
  },
  quarantine_store_failures: {
    name: 'guard_quarantine_store_failures',
    help: 'Quarantines whose record could not be stored (verdict reason store_failed); the answer was withheld all the same.',
    labels: ['model'],
  },
  secrets: {
    name: 'guard_secrets',
    help: 'Secrets in prompts by kind and what happened: substituted (sent as stand-ins), detected (sent as they were), restored (whole answers), foreign (another request stand-in found: a leak).',
    labels: ['model', 'action', 'reason'],
    names: { action: 'outcome', reason: 'kind' },
  },
}

const HISTOGRAMS: Record<HistogramMetric, { name: string; help: string }> = {
  ttft: {
    name: 'guard_ttft_seconds',
    help: 'Time from the upstream call to its first token, per model (released and quarantined answers).',
  },
  first_byte: {
    name: 'guard_first_byte_seconds',
    help: 'Time from the upstream call to the first byte delivered to the client, per model (released answers).',
  },
}

/**
 * The snapshot as OpenMetrics text, ending in `# EOF`. Every family is written (with no samples when
 * nothing was counted), so a scrape always sees the same names.
 *
 * @example
 * new Response(renderOpenMetrics(await telemetry.metrics()), { headers: { 'content-type': OPENMETRICS_CONTENT_TYPE } })
 */
export function renderOpenMetrics(snapshot: MetricsSnapshot): string {
  const rename = modelLabels(snapshot)
  const lines: string[] = []
  for (const [metric, family] of Object.entries(COUNTERS) as [CounterMetric, CounterFamily][]) {
    lines.push(`# TYPE ${family.name} counter`, `# HELP ${family.name} ${escapeHelp(family.help)}`)
    const series = new Map<string, number>()
    for (const row of snapshot.counters) {
      if (row.metric !== metric) continue
      const labels = labelText(
        family.labels.map((l) => [
          family.names?.[l] ?? l,
          l === 'model' ? rename(row.model) : row[l],
        ]),
      )
      series.set(labels, (series.get(labels) ?? 0) + row.value)
    }
    for (const [labels, value] of [...series].sort(byKey)) {
      lines.push(`${family.name}_total${labels} ${integer(value)}`)
    }
  }
  for (const [metric, family] of Object.entries(HISTOGRAMS) as [
    HistogramMetric,
    { name: string; help: string },
  ][]) {
    lines.push(
      `# TYPE ${family.name} histogram`,
      `# HELP ${family.name} ${escapeHelp(family.help)}`,
      `# UNIT ${family.name} seconds`,
    )
    const rows = snapshot.histograms.filter((row) => row.metric === metric)
    for (const [model, buckets] of [...histogramsByModel(rows, rename)].sort(byKey)) {
      lines.push(...histogramLines(family.name, model, buckets))
    }
  }
  if (snapshot.margins) {
    const name = 'guard_learned_margin_ratio'
    lines.push(
      `# TYPE ${name} gauge`,
      `# HELP ${name} Learned tokenizer margin per script class on top of the family bound (0.12 = 12%).`,
      `# UNIT ${name} ratio`,
    )
    const series = new Map<string, number>()
    for (const m of snapshot.margins) {
      // Folded models keep the largest margin: the gauge says how far any of them was raised.
      const labels = labelText([
        ['model', rename(m.model)],
        ['script', m.script],
      ])
      series.set(labels, Math.max(series.get(labels) ?? 0, m.margin))
    }
    for (const [labels, value] of [...series].sort(byKey)) lines.push(`${name}${labels} ${value}`)
  }
  lines.push('# EOF')
  return `${lines.join('\n')}\n`
}

/**
 * The model label of each stored model: its name for the {@link MAX_MODEL_SERIES} with the most
 * verdicts, `other` for the rest.
 */
function modelLabels(snapshot: MetricsSnapshot): (model: string) => string {
  const totals = new Map<string, number>()
  const note = (model: string, n: number) => totals.set(model, (totals.get(model) ?? 0) + n)
  for (const row of snapshot.counters) note(row.model, row.metric === 'verdicts' ? row.value : 0)
  for (const row of snapshot.histograms) note(row.model, 0)
  for (const m of snapshot.margins ?? []) note(m.model, 0)
  if (totals.size <= MAX_MODEL_SERIES) return (model) => model
  const kept = new Set(
    [...totals]
      .filter(([model]) => model !== OTHER)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, MAX_MODEL_SERIES - 1)
      .map(([model]) => model),
  )
  return (model) => (kept.has(model) ? model : OTHER)
}

/** Buckets per (renamed) model, with the counts and sums of folded models added together. */
function histogramsByModel(
  rows: HistogramRow[],
  rename: (model: string) => string,
): Map<string, Map<string, { count: number; sum: number }>> {
  const out = new Map<string, Map<string, { count: number; sum: number }>>()
  for (const row of rows) {
    const model = rename(row.model)
    let buckets = out.get(model)
    if (!buckets) {
      buckets = new Map([...SECONDS_BUCKETS.map(String), '+Inf'].map((le) => [le, zero()]))
      out.set(model, buckets)
    }
    // A bound no longer configured still counts: it is written in its order among the others.
    const le = Number.isNaN(Number(row.le)) ? '+Inf' : row.le
    const bucket = buckets.get(le) ?? zero()
    bucket.count += row.count
    bucket.sum += row.sum
    buckets.set(le, bucket)
  }
  return out
}

function zero(): { count: number; sum: number } {
  return { count: 0, sum: 0 }
}

/** One model's histogram: cumulative buckets in increasing order, then its count and sum. */
function histogramLines(
  name: string,
  model: string,
  buckets: Map<string, { count: number; sum: number }>,
): string[] {
  const ordered = [...buckets].sort((a, b) => bound(a[0]) - bound(b[0]))
  const lines: string[] = []
  let cumulative = 0
  let sum = 0
  for (const [le, bucket] of ordered) {
    cumulative += bucket.count
    sum += bucket.sum
    lines.push(
      `${name}_bucket${labelText([
        ['model', model],
        ['le', le],
      ])} ${integer(cumulative)}`,
    )
  }
  const labels = labelText([['model', model]])
  lines.push(`${name}_count${labels} ${integer(cumulative)}`)
  lines.push(`${name}_sum${labels} ${Math.round(sum * 1e6) / 1e6}`)
  return lines
}

function bound(le: string): number {
  return le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le)
}

function integer(value: number): string {
  return String(Math.max(0, Math.round(value)))
}

function byKey(a: [string, unknown], b: [string, unknown]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0
}

/** `{a="x",b="y"}` with each value escaped. */
function labelText(labels: [string, string][]): string {
  return `{${labels.map(([name, value]) => `${name}="${escapeLabel(value)}"`).join(',')}}`
}

/**
 * A label value as OpenMetrics allows it: backslash, double quote and line feed escaped (the only
 * escapes the format has), and every other control character — which a parser could take for a line
 * end or which a terminal would act on — replaced by U+FFFD. So no value, whatever a tenant sent, can
 * end its line or open a new sample.
 *
 * @example
 * escapeLabel('a"b\nc') // 'a\\"b\\nc'
 */
function escapeLabel(value: string): string {
  let out = ''
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c === 0x5c) out += '\\\\'
    else if (c === 0x22) out += '\\"'
    else if (c === 0x0a) out += '\\n'
    else if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029) out += '\ufffd'
    else if (c >= 0xd800 && c <= 0xdbff) {
      // A surrogate pair passes whole; a lone half is not UTF-8 and becomes U+FFFD.
      const next = value.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += value.slice(i, i + 2)
        i++
      } else out += '\ufffd'
    } else if (c >= 0xdc00 && c <= 0xdfff) out += '\ufffd'
    else out += value[i]
  }
  return out
}

/** HELP text: backslash and line feed escaped. */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}
