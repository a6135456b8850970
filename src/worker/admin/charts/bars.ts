/**
 * @module Stacked bars (incidents per day by reason) and horizontal bars (refusals), as SVG.
 */
import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import { compact, linearScale, PALETTE } from './scale'

/** One day's incidents per reason. */
export interface DayCounts {
  /** `YYYY-MM-DD` (UTC). */
  day: string
  counts: Record<string, number>
}

const W = 720
const H = 200
const M = { left: 40, right: 12, top: 12, bottom: 40 }
/**
 * Legend entries per row, and their spacing: three, so the longest reason (`echo_missing_repeatedly`)
 * fits its slot at the larger size labels take at phone width (see ../style.ts).
 */
const LEGEND_COLUMNS = 3
const LEGEND_STEP = Math.floor((W - M.left - M.right) / LEGEND_COLUMNS)

/**
 * Incidents per day, stacked by reason, with a legend. Each segment is a `<rect>` with `data-day`,
 * `data-reason` and `data-count`.
 *
 * @example
 * dailyBars([{ day: '2026-11-30', counts: { foreign_canary: 2 } }])
 */
export function dailyBars(days: DayCounts[]): HtmlEscapedString | Promise<HtmlEscapedString> {
  const reasons = [...new Set(days.flatMap((d) => Object.keys(d.counts)))].sort()
  const totals = days.map((d) => Object.values(d.counts).reduce((a, b) => a + b, 0))
  const y = linearScale(
    { min: 0, max: Math.max(1, ...totals) },
    { from: H - M.bottom, to: M.top },
    true,
  )
  const band = (W - M.left - M.right) / Math.max(1, days.length)
  const color = (reason: string) => PALETTE[reasons.indexOf(reason) % PALETTE.length]
  return html`<svg class="chart bars" viewBox="0 0 ${W} ${H + 24 * Math.ceil(reasons.length / LEGEND_COLUMNS)}" role="img" aria-labelledby="bars-title" data-chart="daily">
<title id="bars-title">Incidents per day by reason</title>
${y.ticks.map(
  (t) =>
    html`<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${r(y(t))}" y2="${r(y(t))}"/><text class="tick" x="${M.left - 6}" y="${r(y(t)) + 4}" text-anchor="end">${compact(t)}</text>`,
)}
${days.map((d, i) => {
  let base = 0
  const x = M.left + i * band + band * 0.15
  return html`${reasons
    .filter((reason) => (d.counts[reason] ?? 0) > 0)
    .map((reason) => {
      const n = d.counts[reason]!
      const top = y(base + n)
      const rect = html`<rect class="bar" data-day="${d.day}" data-reason="${reason}" data-count="${n}" x="${r(x)}" y="${r(top)}" width="${r(band * 0.7)}" height="${r(y(base) - top)}" fill="${color(reason)}"><title>${d.day}: ${n} × ${reason}</title></rect>`
      base += n
      return rect
    })}${i % Math.ceil(days.length / 7) === 0 ? html`<text class="tick" x="${r(x + band * 0.35)}" y="${H - M.bottom + 16}" text-anchor="middle">${d.day.slice(5)}</text>` : ''}`
})}
${reasons.map(
  (reason, i) =>
    html`<rect x="${M.left + (i % LEGEND_COLUMNS) * LEGEND_STEP}" y="${H - 8 + Math.floor(i / LEGEND_COLUMNS) * 22}" width="12" height="12" fill="${color(reason)}"/><text class="legend" x="${M.left + (i % LEGEND_COLUMNS) * LEGEND_STEP + 18}" y="${H + 2 + Math.floor(i / LEGEND_COLUMNS) * 22}">${reason}</text>`,
)}
</svg>`
}

/** One horizontal bar. */
interface BarRow {
  label: string
  count: number
  /** Extra `data-*` values for the bar. */
  data: Record<string, string>
}

/**
 * Horizontal bars, one row each, longest first as given; `data-count` and the given `data-*` on each.
 *
 * @example
 * rowBars([{ label: 'context_length_exceeded · cjk', count: 3, data: { script: 'cjk' } }])
 */
export function rowBars(rows: BarRow[]): HtmlEscapedString | Promise<HtmlEscapedString> {
  // Drawn for a half-width card: a narrower box keeps its labels as large as the other charts'.
  const w = 460
  const rowH = 22
  const labelW = 230
  const height = Math.max(1, rows.length) * rowH + 8
  const max = Math.max(1, ...rows.map((row) => row.count))
  const width = w - labelW - 50
  return html`<svg class="chart rows" viewBox="0 0 ${w} ${height}" role="img" aria-label="Refusals by reason and script class" data-chart="refusals">
${rows.map((row, i) => {
  const attrs = Object.entries(row.data).map(
    ([k, v]) => html` data-${k.replace(/[^a-z-]/g, '')}="${v}"`,
  )
  return html`<text class="legend" x="${labelW - 8}" y="${i * rowH + 18}" text-anchor="end">${row.label}</text><rect class="bar" data-count="${row.count}"${attrs} x="${labelW}" y="${i * rowH + 5}" width="${r(Math.max(1, (row.count / max) * width))}" height="${rowH - 8}" fill="${PALETTE[0]}"/><text class="tick" x="${r(labelW + Math.max(1, (row.count / max) * width) + 6)}" y="${i * rowH + 18}">${row.count.toLocaleString('en-US')}</text>`
})}
</svg>`
}

function r(value: number): number {
  return Math.round(value * 10) / 10
}
