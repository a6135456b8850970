/**
 * @module Tokenizer-drift calibration from reported `usage.prompt_tokens`: pure functions over a
 * small JSON state that can only ever make the ceiling safer than the profile's floor.
 *
 * We count with o200k_base; GLM-5.3 counts with its own tokenizer. If the model's count runs higher
 * than ours by more than the margin, a prompt we admit could still overflow the real KV pool — the
 * incident's trigger. Reported usage shows the real gap, so:
 * - an undercount beyond the current margin raises the margin AT ONCE to cover it, plus a step;
 * - the raised margin relaxes back slowly, only as fast as BOTH evidence (observations since the
 *   raise) and time allow: a burst of requests cannot flush it in a minute, and an idle week brings
 *   no evidence that the gap went away;
 * - the profile's `tokenizerDrift` is a floor applied when reading, so nothing learned can lower it.
 */

/** Observations whose estimate is below this many tokens are ignored (see {@link observe}). */
export const MIN_SAMPLE_TOKENS = 256

/** Added on top of an observed undercount when raising, so the next similar prompt is covered. */
export const SAFETY_STEP = 0.02

/** The highest margin calibration will set (100%: the model counts twice what we count). */
export const MAX_DRIFT = 1

/**
 * Reports claiming more than this many times our count are ignored: see {@link observe}.
 */
export const MAX_PLAUSIBLE_RATIO = 4

/** Half-life of a raised margin, in observations that did not need it. */
export const HALF_LIFE_OBSERVATIONS = 2_000

/** Half-life of a raised margin, in milliseconds (7 days). */
export const HALF_LIFE_MS = 7 * 24 * 60 * 60 * 1000

/** Why observations were ignored (counters; the state stays bounded). */
export interface IgnoredCounts {
  /** `actual` or `estimated` not a finite number, or `at` not a finite time. */
  invalid: number
  /** `actual ≤ 0`: no usage reported, or a broken report. */
  nonPositive: number
  /** `estimated` below {@link MIN_SAMPLE_TOKENS}: fixed template tokens dominate small prompts. */
  tooSmall: number
  /** `actual / estimated` above {@link MAX_PLAUSIBLE_RATIO}: a broken report, not a tokenizer gap. */
  implausible: number
}

/** The serializable calibration state of one model. */
export interface DriftState {
  /** Format version, for the Durable Object that persists it. */
  v: 1
  /** The margin set by the last raise (before decay), as a fraction: 0.12 = 12%. */
  peak: number
  /** When the last raise happened (ms since epoch); null before any raise. */
  peakAt: number | null
  /** Accepted observations since the last raise. */
  sinceRaise: number
  /** Accepted observations in total. */
  observations: number
  /** The largest `actual / estimated − 1` ever accepted (for operators; does not decay). */
  worstSeen: number
  /** Ignored observations, by reason. */
  ignored: IgnoredCounts
}

/** One reported usage, compared with what the guard counted before sending. */
export interface DriftObservation {
  /**
   * The guard's own count of the whole prompt before any drift margin — text tokens plus template
   * overhead — i.e. what `usage.prompt_tokens` measures. Feed exact counts only: a byte bound
   * over-estimates and would hide an undercount.
   */
  estimated: number
  /** The upstream's `usage.prompt_tokens`. */
  actual: number
  /** When it was observed (ms since epoch). */
  at: number
}

/**
 * A model's state before any observation.
 *
 * @example
 * let drift = emptyDriftState()
 */
export function emptyDriftState(): DriftState {
  return {
    v: 1,
    peak: 0,
    peakAt: null,
    sinceRaise: 0,
    observations: 0,
    worstSeen: 0,
    ignored: { invalid: 0, nonPositive: 0, tooSmall: 0, implausible: 0 },
  }
}

/**
 * The learned margin at time `at` (without the floor): the peak, decayed by the SLOWER of the two
 * clocks — observations since the raise and time since the raise.
 *
 * @example
 * learnedDrift(state, Date.now()) // e.g. 0.14
 */
export function learnedDrift(state: DriftState, at: number): number {
  if (state.peakAt === null || state.peak <= 0) return 0
  const elapsed = Math.max(0, at - state.peakAt)
  const byObservations = 0.5 ** (state.sinceRaise / HALF_LIFE_OBSERVATIONS)
  const byTime = 0.5 ** (elapsed / HALF_LIFE_MS)
  return state.peak * Math.max(byObservations, byTime)
}

function ignore(state: DriftState, reason: keyof IgnoredCounts): DriftState {
  return { ...state, ignored: { ...state.ignored, [reason]: state.ignored[reason] + 1 } }
}

/**
 * Folds one usage report into the state (returns a new state; the input is not changed).
 *
 * Ignored, and counted under `ignored` — none of them is evidence about the tokenizer gap:
 * - non-finite numbers (`invalid`);
 * - `actual ≤ 0` (`nonPositive`): no usage, or a broken report;
 * - `estimated < MIN_SAMPLE_TOKENS` (`tooSmall`): on a 20-token prompt a template difference of 5
 *   tokens reads as 25% drift that does not scale to the long prompts the ceiling is about;
 * - `actual > MAX_PLAUSIBLE_RATIO × estimated` (`implausible`): more likely a report for another
 *   request, or usage summed across a batch, than a tokenizer 4× off; taking it would raise the
 *   margin so far that every long prompt is refused — a denial of service from one bad report.
 *
 * @example
 * state = observe(state, { estimated: 300_000, actual: 336_000, at: Date.now() })
 * effectiveDrift(state, 0.05) // ≥ 0.12 + 0.02 at once
 */
export function observe(state: DriftState, observation: DriftObservation): DriftState {
  const { estimated, actual, at } = observation
  if (!Number.isFinite(estimated) || !Number.isFinite(actual) || !Number.isFinite(at)) {
    return ignore(state, 'invalid')
  }
  if (actual <= 0) return ignore(state, 'nonPositive')
  if (estimated < MIN_SAMPLE_TOKENS) return ignore(state, 'tooSmall')
  if (actual > estimated * MAX_PLAUSIBLE_RATIO) return ignore(state, 'implausible')

  const needed = actual / estimated - 1
  const observations = state.observations + 1
  const worstSeen = Math.max(state.worstSeen, needed)
  if (needed > learnedDrift(state, at)) {
    // Undercount beyond the learned margin: cover it now, not after a trend.
    const peak = Math.min(MAX_DRIFT, needed + SAFETY_STEP)
    return { ...state, peak, peakAt: at, sinceRaise: 0, observations, worstSeen }
  }
  return { ...state, sinceRaise: state.sinceRaise + 1, observations, worstSeen }
}

/**
 * The margin to use now: the learned margin, never below the profile's `tokenizerDrift` floor.
 *
 * @example
 * const drift = effectiveDrift(state, profile.tokenizerDrift)
 */
export function effectiveDrift(state: DriftState, floor: number, at: number = Date.now()): number {
  return Math.max(floor, learnedDrift(state, at))
}
