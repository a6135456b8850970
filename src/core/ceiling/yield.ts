/**
 * @module Letting an isolate's other requests run while one long prompt is scanned. Workers serves
 * concurrent requests in one isolate, one JavaScript task at a time: a maximal prompt scanned in one
 * task would hold every other request of the isolate (their I/O callbacks, their timers) until it was
 * done. Yielding a macrotask every so often lets them run between chunks of the scan; the CPU spent
 * is the same.
 */

/** Pre-tokens scanned between yields: a few milliseconds of work (figures: docs/reliability.md). */
export const PIECES_PER_TURN = 4096

interface Waiting {
  wait(ms: number): Promise<void>
}

/**
 * Ends this task and resumes in a new one, after what is already queued: Workers' `scheduler.wait`,
 * else Node's `setImmediate` (its `setTimeout(0)` waits a whole millisecond), else a timer.
 *
 * @example
 * if (++pieces % PIECES_PER_TURN === 0) await nextTurn()
 */
export function nextTurn(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: Partial<Waiting> }).scheduler
  if (typeof scheduler?.wait === 'function') return scheduler.wait(0)
  const immediate = (globalThis as { setImmediate?: (run: () => void) => unknown }).setImmediate
  if (typeof immediate === 'function') return new Promise((resolve) => immediate(resolve))
  return new Promise((resolve) => setTimeout(resolve, 0))
}
