/**
 * @module Progress events of a probe run, and the one-line progress bar the CLI draws from them.
 */
import { fmt } from './numbers'
import type { ProbeStep } from './step'

/** What a run reports while it goes. */
export type ProbeProgress =
  /** About to send step `index` of at most `planned`. */
  | {
      type: 'send'
      index: number
      tokens: number
      planned: number
      largestOk: number
      smallestFail?: number
    }
  /** Step judged. */
  | { type: 'result'; step: ProbeStep; planned: number; largestOk: number; smallestFail?: number }

/**
 * One line of progress: a bar over the planned requests, the bracket found so far, and what is
 * happening now. Plain text (the caller adds `\r` and clears the line on a terminal).
 *
 * @example
 * progressLine({ type: 'send', index: 3, tokens: 4096, planned: 20, largestOk: 2048 }, 60)
 * // '[######·····…] 3/20  ok ≤ 2,048  sending 4,096 tokens…'
 */
export function progressLine(event: ProbeProgress, width = 80): string {
  const index = event.type === 'send' ? event.index : event.step.index
  const done = event.type === 'send' ? index - 1 : index
  const barWidth = Math.max(10, Math.min(30, width - 50))
  const filled = Math.min(
    barWidth,
    Math.round((done / Math.max(event.planned, done, 1)) * barWidth),
  )
  const bar = `[${'#'.repeat(filled)}${'·'.repeat(barWidth - filled)}]`
  const bracket =
    `ok ≤ ${fmt(event.largestOk)}` +
    (event.smallestFail === undefined ? '' : `, fails ≥ ${fmt(event.smallestFail)}`)
  const now =
    event.type === 'send'
      ? `sending ${fmt(event.tokens)} tokens…`
      : `${fmt(event.step.tokens)}: ${event.step.kind}`
  const line = `${bar} ${index}/${event.planned}  ${bracket}  ${now}`
  return line.length > width ? line.slice(0, width) : line
}
