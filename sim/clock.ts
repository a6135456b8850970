/**
 * @module The simulator's time source: real timers by default, or a virtual clock for exact tests.
 */

/** Where the simulator's waits go. */
export interface SimClock {
  /** Milliseconds on this clock. */
  now(): number
  /** Resolves after `ms` on this clock. */
  sleep(ms: number): Promise<void>
}

/**
 * Real time: `setTimeout`, no timer at all for a zero wait (an infinite rate).
 *
 * @example
 * new SimEngine({}, { clock: REAL_CLOCK })
 */
export const REAL_CLOCK: SimClock = {
  now: () => Date.now(),
  sleep: (ms) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve()),
}

/**
 * Virtual time for tests: every wait advances the clock by exactly its length and resolves at once, so
 * a guard given the same clock measures the simulated prefill to the millisecond, with no wall time.
 * Meant for requests run one at a time (concurrent waits simply add up).
 *
 * @example
 * const clock = new VirtualClock()
 * const engine = new SimEngine({ prefillTokensPerSecond: 50_000 }, { clock })
 * const ai = guardAi(engine.binding(), { secret, now: () => clock.now() })
 */
export class VirtualClock implements SimClock {
  #now: number

  constructor(start = 1_000_000) {
    this.#now = start
  }

  now(): number {
    return this.#now
  }

  async sleep(ms: number): Promise<void> {
    if (ms > 0) this.#now += ms
  }

  /** Moves time on by hand (e.g. to stand for work outside the simulator). */
  advance(ms: number): void {
    this.#now += ms
  }
}
