/**
 * @module Lines over time (learned tokenizer margins per script class), as SVG.
 */
import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import { linearScale, PALETTE } from './scale'

/** One series: its name and its points in time order. */
interface Series {
  name: string
  points: { at: number; value: number }[]
}

const W = 460
const H = 260
const M = { left: 44, right: 100, top: 12, bottom: 32 }

/**
 * One polyline per series, value as a percentage on the y axis, time on the x axis, names at the right.
 * Each `<polyline>` has `data-series` and `data-last` (the latest value).
 *
 * @example
 * timeLines([{ name: 'cjk', points: [{ at: 0, value: 0.04 }, { at: 1, value: 0.06 }] }])
 */
export function timeLines(series: Series[]): HtmlEscapedString | Promise<HtmlEscapedString> {
  const all = series.flatMap((s) => s.points)
  const minAt = Math.min(...all.map((p) => p.at))
  const maxAt = Math.max(...all.map((p) => p.at))
  const x = (at: number) =>
    maxAt > minAt
      ? M.left + ((at - minAt) / (maxAt - minAt)) * (W - M.left - M.right)
      : (M.left + W - M.right) / 2
  const y = linearScale(
    { min: 0, max: Math.max(0.01, ...all.map((p) => p.value)) },
    { from: H - M.bottom, to: M.top },
  )
  return html`<svg class="chart lines" viewBox="0 0 ${W} ${H}" role="img" aria-label="Learned tokenizer margins per script class over time" data-chart="margins">
${y.ticks.map(
  (t) =>
    html`<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${r(y(t))}" y2="${r(y(t))}"/><text class="tick" x="${M.left - 6}" y="${r(y(t)) + 4}" text-anchor="end">${Number((t * 100).toFixed(1))}%</text>`,
)}
<text class="tick" x="${M.left}" y="${H - 10}">${day(minAt)}</text><text class="tick" x="${W - M.right}" y="${H - 10}" text-anchor="end">${day(maxAt)}</text>
${series.map((s, i) => {
  const last = s.points.at(-1)
  const pts = s.points.map((p) => `${r(x(p.at))},${r(y(p.value))}`).join(' ')
  const color = PALETTE[i % PALETTE.length]
  return html`<polyline class="series" data-series="${s.name}" data-last="${last?.value ?? ''}" points="${pts}" fill="none" stroke="${color}"/>${s.points.map((p) => html`<circle cx="${r(x(p.at))}" cy="${r(y(p.value))}" r="2.5" fill="${color}"><title>${s.name}: ${(p.value * 100).toFixed(1)}% at ${new Date(p.at).toISOString()}</title></circle>`)}${last ? html`<text class="legend" x="${W - M.right + 6}" y="${r(y(last.value)) + 4}" fill="${color}">${s.name} ${(last.value * 100).toFixed(1)}%</text>` : ''}`
})}
</svg>`
}

function day(at: number): string {
  return Number.isFinite(at) ? new Date(at).toISOString().slice(0, 16).replace('T', ' ') : ''
}

function r(value: number): number {
  return Math.round(value * 10) / 10
}
