/**
 * @module The plot that would have exposed the incident in minutes: time to first token against prompt
 * tokens, log–log, with the physical prefill bound and the learned baseline as lines.
 */
import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import { compact, logScale } from './scale'

/** One verdict on the plot. */
export interface ScatterPoint {
  /** x: the tokens the timing guard charged (uncached, its lower count). */
  tokens: number
  /** The ceiling's upper estimate, for the tooltip. */
  estimatedTokens?: number
  ttftMs: number
  action: 'release' | 'quarantine' | 'reject'
  model: string
  tenant: string
  reasons: string[]
  incidentId?: string
}

/** A learned minimum over one size bucket: `msPer100k` scaled to tokens, from `from` to `to` tokens. */
export interface BaselineSegment {
  script: string
  from: number
  to: number
  msPer100k: number
}

/** What the scatter draws. */
interface ScatterInput {
  points: ScatterPoint[]
  /** The profile's `maxPrefillTokensPerSecond`: ms = tokens / rate × 1000. */
  prefillTokensPerSecond?: number
  baseline: BaselineSegment[]
}

const W = 720
const H = 380
const M = { left: 64, right: 16, top: 16, bottom: 52 }
/** The x tick labels' baseline below the plot: clear of the lowest y label at phone-width sizes. */
const X_TICK_DY = 21

/**
 * The scatter as inline SVG. Points carry `data-action`, `data-tokens`, `data-ttft-ms` and (quarantined)
 * `data-incident`; the bound is `<line data-line="physical">`, so tests and scripts can check which
 * points lie under it without reading pixels.
 *
 * @example
 * c.html(html`${ttftScatter({ points, prefillTokensPerSecond: 1_000_000, baseline: [] })}`)
 */
export function ttftScatter(input: ScatterInput): HtmlEscapedString | Promise<HtmlEscapedString> {
  const rate = input.prefillTokensPerSecond
  const bound = (tokens: number) => (rate ? (tokens / rate) * 1000 : Number.NaN)
  const tokens = input.points.map((p) => p.tokens)
  const xs = logScale(Math.min(1_000, ...tokens), Math.max(100_000, ...tokens), M.left, W - M.right)
  const [x0, x1] = xs.domain
  const baselineMs = input.baseline.flatMap((s) => [
    (s.msPer100k * s.from) / 1e5,
    (s.msPer100k * s.to) / 1e5,
  ])
  const ms = [...input.points.map((p) => Math.max(p.ttftMs, 0.1)), ...baselineMs]
  // The y range follows the points and the learned lines; the physical line is clipped to it.
  const ys = logScale(
    Math.min(1, ...ms, ...(rate ? [bound(Math.max(x0, 1_000))] : [])),
    Math.max(10_000, ...ms),
    H - M.bottom,
    M.top,
  )
  const [y0, y1] = ys.domain
  const clip = (t: number) => Math.min(Math.max(t, y0), y1)
  // The bound between the x-domain edges, cut where it leaves the y-domain (it is straight in log–log).
  const physical = rate
    ? (() => {
        const ta = Math.max(x0, (y0 * rate) / 1000)
        const tb = Math.min(x1, (y1 * rate) / 1000)
        return ta < tb ? { ta, tb } : undefined
      })()
    : undefined
  return html`<svg class="chart scatter" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="scatter-title" data-chart="ttft">
<title id="scatter-title">Time to first token against prompt tokens (log scales)</title>
${xs.ticks.map(
  (t) =>
    html`<line class="grid" x1="${r(xs(t))}" x2="${r(xs(t))}" y1="${M.top}" y2="${H - M.bottom}"/><text class="tick" x="${r(xs(t))}" y="${H - M.bottom + X_TICK_DY}" text-anchor="middle">${compact(t)}</text>`,
)}
${ys.ticks.map(
  (t) =>
    html`<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${r(ys(t))}" y2="${r(ys(t))}"/><text class="tick" x="${M.left - 6}" y="${r(ys(t)) + 4}" text-anchor="end">${msLabel(t)}</text>`,
)}
<text class="axis" x="${(M.left + W - M.right) / 2}" y="${H - 6}" text-anchor="middle">uncached prompt tokens charged</text>
<text class="axis y" x="14" y="${(M.top + H - M.bottom) / 2}" text-anchor="middle" transform="rotate(-90 14 ${(M.top + H - M.bottom) / 2})">time to first token</text>
${
  physical && rate
    ? html`<line class="bound" data-line="physical" data-tokens-per-second="${rate}" x1="${r(xs(physical.ta))}" y1="${r(ys(clip(bound(physical.ta))))}" x2="${r(xs(physical.tb))}" y2="${r(ys(clip(bound(physical.tb))))}"><title>Physical bound: ${compact(rate)} tokens/s prefill</title></line>`
    : ''
}
${input.baseline.map(
  (s) =>
    html`<line class="baseline" data-line="baseline" data-script="${s.script}" data-ms-per-100k="${Math.round(s.msPer100k)}" x1="${r(xs(s.from))}" y1="${r(ys(clip((s.msPer100k * s.from) / 1e5)))}" x2="${r(xs(s.to))}" y2="${r(ys(clip((s.msPer100k * s.to) / 1e5)))}"><title>Learned minimum (${s.script}): ${Math.round(s.msPer100k)} ms per 100k tokens</title></line>`,
)}
${input.points.map((p) => point(p, xs(p.tokens), ys(Math.max(p.ttftMs, 0.1))))}
</svg>`
}

function point(p: ScatterPoint, cx: number, cy: number) {
  const label = `${p.action} · ${p.tenant} · ${p.model} · ${Math.round(p.tokens).toLocaleString('en-US')} tokens charged${p.estimatedTokens ? ` (estimate ${p.estimatedTokens.toLocaleString('en-US')})` : ''} · ${msLabel(p.ttftMs)}${p.reasons.length ? ` · ${p.reasons.join(', ')}` : ''}`
  const attrs = html`data-action="${p.action}" data-tokens="${Math.round(p.tokens)}" data-estimated-tokens="${p.estimatedTokens ?? ''}" data-ttft-ms="${Number(p.ttftMs.toFixed(2))}" data-tenant="${p.tenant}" data-model="${p.model}"`
  if (p.action === 'release') {
    return html`<circle class="pt release" ${attrs} cx="${r(cx)}" cy="${r(cy)}" r="3"><title>${label}</title></circle>`
  }
  // Withheld answers: a larger cross, linked to the incident when there is one.
  const d = `M${r(cx - 5)} ${r(cy - 5)}L${r(cx + 5)} ${r(cy + 5)}M${r(cx - 5)} ${r(cy + 5)}L${r(cx + 5)} ${r(cy - 5)}`
  const mark = html`<path class="pt ${p.action}" ${attrs} data-incident="${p.incidentId ?? ''}" data-cx="${r(cx)}" data-cy="${r(cy)}" d="${d}"><title>${label}</title></path>`
  return p.incidentId
    ? html`<a href="/admin/incidents/${encodeURIComponent(p.incidentId)}">${mark}</a>`
    : mark
}

/** Milliseconds as the axis reads them. */
function msLabel(ms: number): string {
  return ms >= 1000 ? `${compact(ms / 1000)} s` : `${compact(ms)} ms`
}

function r(value: number): number {
  return Math.round(value * 10) / 10
}
