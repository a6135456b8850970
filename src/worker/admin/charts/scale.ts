/**
 * @module Scales and ticks for the console's hand-written SVG charts (no chart library: a few lines of
 * arithmetic are smaller than any bundle, and the server renders them, so the page needs no script).
 */

/** A map from data to pixels, and its ticks. */
interface Scale {
  (value: number): number
  ticks: number[]
  domain: [number, number]
}

/**
 * A base-10 log scale over whole decades covering `[min, max]` (both > 0).
 *
 * @example
 * const x = logScale(1_000, 600_000, 40, 600) // x(1_000) === 40, ticks 1e3 … 1e6
 */
export function logScale(min: number, max: number, from: number, to: number): Scale {
  const lo = Math.floor(Math.log10(Math.max(min, 1e-3)))
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(max, min, 1e-3))))
  const scale = ((value: number) => {
    const v = Math.log10(Math.max(value, 10 ** lo))
    return from + ((v - lo) / (hi - lo)) * (to - from)
  }) as Scale
  scale.ticks = Array.from({ length: hi - lo + 1 }, (_, i) => 10 ** (lo + i))
  scale.domain = [10 ** lo, 10 ** hi]
  return scale
}

/**
 * A linear scale over `[min, max]` widened to round ticks (about five); whole ticks for counts.
 *
 * @example
 * const y = linearScale({ min: 0, max: 37 }, { from: 300, to: 20 }) // ticks 0, 10, 20, 30, 40
 */
export function linearScale(
  { min, max }: { min: number; max: number },
  { from, to }: { from: number; to: number },
  integer = false,
): Scale {
  const span = max > min ? max - min : Math.abs(max) || 1
  const step = integer ? Math.max(1, niceStep(span / 5)) : niceStep(span / 5)
  const lo = Math.floor(min / step) * step
  const hi = Math.max(lo + step, Math.ceil(max / step) * step)
  const scale = ((value: number) => from + ((value - lo) / (hi - lo)) * (to - from)) as Scale
  scale.ticks = []
  for (let t = lo; t <= hi + step / 2; t += step) scale.ticks.push(Number(t.toPrecision(12)))
  scale.domain = [lo, hi]
  return scale
}

function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw))
  const unit = raw / power
  return (unit <= 1 ? 1 : unit <= 2 ? 2 : unit <= 5 ? 5 : 10) * power
}

/**
 * A compact label: 1k, 10k, 1M, 0.1.
 *
 * @example
 * compact(681_280) // '681k'
 */
export function compact(value: number): string {
  if (value >= 1e6) return `${trim(value / 1e6)}M`
  if (value >= 1e3) return `${trim(value / 1e3)}k`
  return trim(value)
}

function trim(value: number): string {
  return String(Number(value.toPrecision(3)))
}

/** Fixed colours per series, in the order series appear (colour-blind safe, Okabe–Ito). */
export const PALETTE = [
  '#0072b2',
  '#d55e00',
  '#009e73',
  '#cc79a7',
  '#e69f00',
  '#56b4e9',
  '#f0e442',
  '#000000',
]
