/**
 * @module Writing a released event's text with the judge's edits applied: cuts, and values in place of
 * the spans they replace.
 */
import type { Edit } from '../vocabulary/release-judge'

/**
 * `text` (its first character at `offset` of the channel) with each edit applied: the span cut, and
 * an edit's value written where its span starts (an edit begun in an earlier event is only cut here).
 *
 * @example
 * applyEdits('abc', 0, [{ start: 1, end: 2, value: 'X' }]) // 'aXc'
 */
export function applyEdits(text: string, offset: number, edits: readonly Edit[]): string {
  let out = ''
  let at = 0
  for (const r of [...edits].sort((a, b) => a.start - b.start)) {
    const s = Math.max(0, r.start - offset)
    const e = Math.min(text.length, r.end - offset)
    if (e <= 0 || s >= text.length || e < s) continue
    if (s > at) out += text.slice(at, s)
    if (r.value !== undefined && r.start >= offset) out += r.value
    at = Math.max(at, e)
  }
  return out + text.slice(at)
}
