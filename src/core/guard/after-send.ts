/**
 * @module One timer for all of a guard's after-send work due at the same tick. A timer per request
 * piled up where nothing yields to timers between requests (requests answered from memory: 4,500
 * pending at once in a test, and workerd refuses a 10,001st). Each guard keeps its own tick, so a tick
 * that never fires (a test's fake clock) holds back that guard's work only.
 */

/** How long after its call a prompt's print, count and hash start (see runAttempts). */
const AFTER_SEND_MS = 1

/**
 * Work scheduled to run shortly after a call has left.
 *
 * @example
 * const ticks = new AfterSendTicks()
 * hooks.waitUntil?.(ticks.schedule(() => print.content()))
 */
export class AfterSendTicks {
  /** Work waiting for the armed timer, in the order it was scheduled; undefined when none is armed. */
  #due: (() => void)[] | undefined

  /** Runs `work` on the next tick and resolves once it has settled (never rejects). */
  schedule(work: () => Promise<unknown>): Promise<void> {
    return new Promise((resolve) => {
      // Through a promise, so one work that throws cannot stop the rest of its tick.
      const run = () =>
        void Promise.resolve()
          .then(work)
          .then(
            () => resolve(),
            () => resolve(),
          )
      if (this.#due) {
        this.#due.push(run)
        return
      }
      setTimeout(() => this.#fire(), AFTER_SEND_MS)
      this.#due = [run]
    })
  }

  #fire(): void {
    const due = this.#due ?? []
    this.#due = undefined
    for (const run of due) run()
  }
}
