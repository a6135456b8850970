/**
 * @module The length search: doubling from a start length until a failure or the top of the window,
 * then bisection between the largest success and the smallest failure. Pure, so the dry-run plan
 * replays the very same code against hypothetical limits.
 */

/** What the search needs to know about the steps so far. */
export interface SearchPoint {
  tokens: number
  ok: boolean
}

/** The search's fixed parameters. */
export interface SearchBounds {
  /** First length. */
  start: number
  /** Largest length worth sending (the advertised window, less output and template room). */
  top: number
  /** Stop bisecting when (smallest failure − largest success) ≤ tolerance × smallest failure. */
  tolerance: number
  /** Shortest prompt the builder can make (halving below the start stops here). */
  minTokens: number
}

/** The bracket around the limit so far: the largest success and the smallest failure. */
interface SearchBracket {
  /** Largest length answered correctly (0: none yet). */
  largestOk: number
  /** Smallest length that failed (undefined: none yet). */
  smallestFail: number | undefined
}

/** Where the search stands: finished, or the next length to send. */
export type SearchState = SearchBracket &
  (
    | {
        /** The search has nothing left to try. */
        finished: true
        /** Whether the limit is pinned to within the tolerance (or the whole window passed). */
        converged: boolean
        next?: undefined
      }
    | {
        finished: false
        converged: false
        /** The next length to send. */
        next: number
      }
  )

/**
 * The bracket the steps so far draw around the limit.
 *
 * @example
 * bracket([{ tokens: 1024, ok: true }, { tokens: 4096, ok: false }]) // { largestOk: 1024, smallestFail: 4096 }
 */
export function bracket(points: readonly SearchPoint[]): SearchBracket {
  let largestOk = 0
  let smallestFail: number | undefined
  for (const p of points) {
    if (p.ok) largestOk = Math.max(largestOk, p.tokens)
    else smallestFail = Math.min(smallestFail ?? p.tokens, p.tokens)
  }
  return { largestOk, smallestFail }
}

/**
 * The next step of the search given the steps so far.
 *
 * @example
 * searchState([{ tokens: 1024, ok: true }], { start: 1024, top: 1_047_000, tolerance: 0.005, minTokens: 90 }).next
 * // 2048
 */
export function searchState(points: readonly SearchPoint[], bounds: SearchBounds): SearchState {
  const { largestOk, smallestFail } = bracket(points)
  const done = (converged: boolean): SearchState => ({
    largestOk,
    smallestFail,
    finished: true,
    converged,
  })
  const go = (next: number): SearchState => ({
    largestOk,
    smallestFail,
    finished: false,
    converged: false,
    next,
  })
  if (smallestFail === undefined) {
    if (points.length === 0) return go(Math.min(bounds.start, bounds.top))
    if (largestOk >= bounds.top) return done(true)
    return go(Math.min(bounds.top, largestOk * 2))
  }
  // A success at or above a failure: the target is not monotonic in length (flaky); nothing to pin.
  if (largestOk >= smallestFail) return done(false)
  if (largestOk === 0) {
    // Even the start failed: halve until something passes.
    const next = Math.floor(smallestFail / 2)
    return next < bounds.minTokens ? done(false) : go(next)
  }
  if (smallestFail - largestOk <= Math.max(1, bounds.tolerance * smallestFail)) return done(true)
  return go(Math.floor((largestOk + smallestFail) / 2))
}

/** What a run may cost, before any request is sent. */
export interface ProbePlan {
  /** The doubling lengths, in order (the last is the top). */
  growth: number[]
  /** The largest length the search will send. */
  top: number
  /** Most bisection steps after any first failure. */
  maxBisectionSteps: number
  /** Most requests any outcome needs, exactly (retries not included). */
  worstCaseRequests: number
  /** An upper bound on prompt + output tokens of any outcome (retries not included). */
  worstCaseTokens: number
}

/**
 * The plan of a run, replaying {@link searchState} itself. Requests: exact worst case — for a first
 * failure at each doubling length, the most bisection steps come when every step fails (the upper
 * end then shrinks, and with it the tolerance in tokens). Tokens: an upper bound — those steps, each
 * charged the failing length they bisect below, plus `maxOutput` per request.
 *
 * @example
 * const plan = planSearch({ start: 1024, top: 1_047_488, tolerance: 0.005, minTokens: 128 }, 1024)
 * plan.worstCaseRequests // 20
 */
export function planSearch(bounds: SearchBounds, maxOutput: number): ProbePlan {
  const growth: number[] = []
  for (let s = searchState([], bounds); !s.finished; ) {
    growth.push(s.next)
    s = searchState(
      growth.map((t) => ({ tokens: t, ok: true })),
      bounds,
    )
  }
  let worstRequests = growth.length
  let worstTokens = growth.reduce((a, b) => a + b, 0) + growth.length * maxOutput
  let maxBisection = 0
  growth.forEach((failAt, i) => {
    const grown = growth.slice(0, i + 1)
    const points: SearchPoint[] = grown.map((t) => ({ tokens: t, ok: t < failAt }))
    let bisection = 0
    for (let s = searchState(points, bounds); !s.finished && bisection < 64; bisection++) {
      points.push({ tokens: s.next, ok: false })
      s = searchState(points, bounds)
    }
    maxBisection = Math.max(maxBisection, bisection)
    worstRequests = Math.max(worstRequests, points.length)
    const grownTokens = grown.reduce((a, b) => a + b, 0)
    worstTokens = Math.max(
      worstTokens,
      grownTokens + bisection * failAt + points.length * maxOutput,
    )
  })
  return {
    growth,
    top: bounds.top,
    maxBisectionSteps: maxBisection,
    worstCaseRequests: worstRequests,
    worstCaseTokens: worstTokens,
  }
}
