/**
 * @module The overview: incidents per day by reason, TTFT against prompt tokens with the physical and
 * learned lines, learned tokenizer margins over time, refusals by reason and script class.
 */
import { html } from 'hono/html'
import { type DayCounts, dailyBars, rowBars } from '../charts/bars'
import { type BaselineSegment, type ScatterPoint, ttftScatter } from '../charts/scatter'
import { timeLines } from '../charts/timelines'
import type { OverviewData } from '../data'
import type { Html } from './layout'

/**
 * The overview page's body.
 *
 * @example
 * layout({ title: 'Overview', section: 'overview', body: overview(await overviewData(...)) })
 */
export function overview(data: OverviewData): Html {
  const points = scatterPoints(data)
  const below = points.filter(
    (p) =>
      data.prefillTokensPerSecond !== undefined &&
      p.ttftMs < (p.tokens / data.prefillTokensPerSecond) * 1000,
  )
  const total = data.incidents.reduce((n, r) => n + (r.count ?? 1), 0)
  return html`<section class="card">
<form class="filters" method="get" action="/admin/">
<label>Model<select name="model">${data.models.map(
    (m) => html`<option value="${m}"${m === data.model ? html` selected` : ''}>${m}</option>`,
  )}</select></label>
<label>Days<select name="days">${[1, 7, 14, 30].map(
    (d) => html`<option value="${d}"${d === data.days ? html` selected` : ''}>${d}</option>`,
  )}</select></label>
<button class="primary" type="submit">Show</button>
</form>
<p class="note" id="headline">${total.toLocaleString('en-US')} incident${total === 1 ? '' : 's'} in the last ${data.days} day${data.days === 1 ? '' : 's'}; ${below.length} answer${below.length === 1 ? '' : 's'} of ${data.model} came faster than a physical prefill.</p>
</section>
<section class="card" id="ttft">
<h2>Time to first token against prompt size — ${data.model}</h2>
<p class="note">Log scales. x: the uncached prompt tokens the timing guard charged (its lower count). An answer under the red line came faster than the model can read its prompt (${data.prefillTokensPerSecond ? `${data.prefillTokensPerSecond.toLocaleString('en-US')} tokens/s` : 'no profile'}): it was not computed from it. The dashed green segments are the learned minimum per script class and size.</p>
${ttftScatter({ points, ...(data.prefillTokensPerSecond ? { prefillTokensPerSecond: data.prefillTokensPerSecond } : {}), baseline: baseline(data) })}
<ul class="key"><li><span class="sw release"></span>released (sampled)</li><li><span class="sw quarantine">✕</span>withheld (links to the incident)</li><li><span class="sw bound"></span>physical bound</li><li><span class="sw baseline"></span>learned baseline</li></ul>
${data.telemetry ? '' : html`<p class="note">No verdict samples are recorded by this Worker: only withheld answers (from the quarantine store) are plotted.</p>`}
</section>
<section class="card" id="daily">
<h2>Incidents per day by reason</h2>
<p class="note">An incident with two reasons counts under each.</p>
${total === 0 ? html`<p class="empty">No incidents in this period.</p>` : dailyBars(perDay(data))}
</section>
<div class="grid2">
<section class="card" id="margins">
<h2>Learned tokenizer margins per script class</h2>
${marginChart(data)}
</section>
<section class="card" id="refusals">
<h2>Refusals by reason and script class</h2>
${
  data.refusals.length === 0
    ? html`<p class="empty">No refusals recorded in this period.</p>`
    : rowBars(
        [...data.refusals]
          .sort((a, b) => b.count - a.count)
          .slice(0, 20)
          .map((r) => ({
            label: `${r.reason} · ${r.script}`,
            count: r.count,
            data: { reason: r.reason, script: r.script },
          })),
      )
}
</section>
</div>`
}

/**
 * The scatter's points: sampled verdicts, plus every withheld answer in the quarantine store that no
 * sample stands for (sampling may skip it; the store never does).
 */
function scatterPoints(data: OverviewData): ScatterPoint[] {
  const rate = data.prefillTokensPerSecond
  // x is what the timing guard charged: its lower count of uncached tokens, recovered from the
  // minimum it expected (ms × rate). The figures' estimate is the ceiling's upper bound, up to twice
  // as many tokens for some scripts: plotted at it, an honest answer could sit under the line. So a
  // point is under the line exactly when the guard found its first token too fast. (When a learned
  // minimum was the larger bound, the point sits where the physical line reaches that minimum.)
  // An answer the timing guard did not judge (a prompt too short for its bound to matter) has only an
  // upper estimate, often its byte bound: plotted there it could sit under the line though nothing was
  // found. It goes no further right than where the line meets its TTFT (a hair left of it, so that
  // rounding never puts it under).
  const charged = (estimate: number, expectedMinMs: number | undefined, ttftMs: number) => {
    if (!rate) return estimate
    if (expectedMinMs !== undefined && expectedMinMs > 0) return (expectedMinMs * rate) / 1000
    return Math.max(1, Math.min(estimate, ((ttftMs * rate) / 1000) * (1 - 1e-6)))
  }
  const points: ScatterPoint[] = []
  const plotted = new Set<string>()
  for (const s of data.samples) {
    const tokens = s.estimatedTokens ?? s.tokenBound
    // Released under observe: the same answer's release sample is its point.
    if (s.action === 'would_block') continue
    if (tokens === undefined || s.ttftMs === undefined || tokens <= 0) continue
    if (s.incidentId) plotted.add(s.incidentId)
    points.push({
      tokens: charged(tokens, s.expectedMinMs, s.ttftMs),
      estimatedTokens: tokens,
      ttftMs: s.ttftMs,
      action: s.action,
      model: s.model,
      tenant: s.tenant,
      reasons: s.reasons,
      ...(s.incidentId ? { incidentId: s.incidentId } : {}),
    })
  }
  for (const r of data.incidents) {
    const tokens = r.figures.estimatedTokens ?? r.figures.tokenBound
    if (r.model !== data.model || plotted.has(r.id) || r.observed || tokens === undefined) continue
    if (r.figures.ttftMs === undefined || tokens <= 0) continue
    points.push({
      tokens: charged(tokens, r.figures.expectedMinMs, r.figures.ttftMs),
      estimatedTokens: tokens,
      ttftMs: r.figures.ttftMs,
      action: 'quarantine',
      model: r.model,
      tenant: r.tenant,
      reasons: r.reasons,
      incidentId: r.id,
    })
  }
  return points
}

/** The calibration report's timing buckets (`class:bucket`, lower edge 4,096 × 2^bucket) as segments. */
function baseline(data: OverviewData): BaselineSegment[] {
  const timing = data.calibration?.timing ?? {}
  return Object.entries(timing).flatMap(([key, value]) => {
    const [script, bucketText] = key.split(':')
    const bucket = Number(bucketText)
    if (!script || !Number.isInteger(bucket) || !(value.minMsPer100k > 0)) return []
    const from = 4_096 * 2 ** bucket
    return [{ script, from, to: from * 2, msPer100k: value.minMsPer100k }]
  })
}

function perDay(data: OverviewData): DayCounts[] {
  const days: DayCounts[] = []
  const start = Math.floor(data.now / 86_400_000) - data.days + 1
  for (let d = start; d * 86_400_000 <= data.now; d++) {
    days.push({ day: new Date(d * 86_400_000).toISOString().slice(0, 10), counts: {} })
  }
  for (const r of data.incidents) {
    const day = days[Math.floor(r.at / 86_400_000) - start]
    if (!day) continue
    for (const reason of r.reasons) day.counts[reason] = (day.counts[reason] ?? 0) + (r.count ?? 1)
  }
  return days
}

function marginChart(data: OverviewData): Html {
  const byScript = new Map<string, { at: number; value: number }[]>()
  for (const m of [...data.margins].sort((a, b) => a.at - b.at)) {
    const list = byScript.get(m.script) ?? []
    list.push({ at: m.at, value: m.margin })
    byScript.set(m.script, list)
  }
  if (byScript.size > 0) {
    return timeLines([...byScript].map(([name, points]) => ({ name, points })))
  }
  // No history recorded: today's learned margins from the calibration report, as a table.
  const now = Object.entries(data.calibration?.margins ?? {})
  return now.length === 0
    ? html`<p class="empty">Nothing learned yet: every script class is at its table margin.</p>`
    : html`<p class="note">No history recorded; the margins learned so far:</p><table><tbody>${now.map(
        ([script, margin]) =>
          html`<tr data-script="${script}"><td>${script}</td><td class="num">${((margin ?? 0) * 100).toFixed(1)}%</td></tr>`,
      )}</tbody></table>`
}
