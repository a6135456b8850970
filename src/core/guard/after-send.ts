/**
 * @module One timer for every request's after-send work. A timer per request piled up where nothing
 * yields to timers between requests (an isolate answering from memory: 4,500 pending at once in a
 * test, and workerd refuses a 10,001st), so work due at the same tick shares the tick.
 */

/** How long after its call a prompt's print, count and hash start (see runAttempts). */
const AFTER_SEND_MS = 1

/** Work waiting for the armed timer, in the order it was scheduled; undefined when none is armed. */
let due: (() => void)[] | undefined

/**
 * Runs `work` on the next after-send tick and resolves when it has settled. The send it follows has
 * started: `work` is scheduled after the call was made.
 *
 * @example
 * hooks.waitUntil?.(afterSend(() => print.content()))
 */
export function afterSend(work: () => Promise<unknown>): Promise<void> {
  return new Promise((resolve) => {
    // Through a promise, so one work that throws cannot stop the rest of its tick.
    const run = () =>
      void Promise.resolve()
        .then(work)
        .then(
          () => resolve(),
          () => resolve(),
        )
    if (due) {
      due.push(run)
      return
    }
    due = [run]
    setTimeout(() => {
      const now = due ?? []
      due = undefined
      for (const each of now) each()
    }, AFTER_SEND_MS)
  })
}
