/**
 * @module Tokenizer calibration per script class, from the engine's own counts: pure functions over a
 * small JSON state that can only ever make the ceiling stricter than the built-in family bound.
 *
 * The ceiling charges each script class the family bound (see estimate.ts): at least what any
 * tokenizer of the model's generation counts. A model outside that family may still split some
 * script finer. The engine says how many tokens it saw — `usage.prompt_tokens` of a released answer,
 * or the count an engine refusal states (the most valuable observation: it is exactly the prompt that
 * did not fit) — so:
 * - a count above what the current margins cover raises the margin AT ONCE, but only for the classes
 *   that make up the prompt (each class holding ≥ {@link ATTRIBUTION_SHARE} of it): a Russian report
 *   never moves the English margin, so one tenant's script cannot shrink everyone's ceiling;
 * - a count far above the estimate is evidence that the table is wrong for that class, never
 *   "implausible": dropping it would keep admitting exactly the prompts the table under-counts;
 * - a raised margin relaxes only with evidence from {@link RELAX_QUORUM} different tenants, and then
 *   no faster than the slower of two clocks (observations, time): one tenant's burst cannot undo it.
 * The profile's `tokenizerDrift` is a floor applied when reading, so nothing learned can lower it.
 */
import { SCRIPT_CLASSES, type ScriptClass } from '../ceiling/script'

/** Observations whose estimate is below this many tokens are ignored (template noise dominates). */
const MIN_SAMPLE_TOKENS = 256

/** Added on top of an observed undercount when raising, so the next similar prompt is covered. */
const SAFETY_STEP = 0.02

/**
 * The highest margin calibration sets: 9 = ten times the family bound. No byte-level BPE counts more
 * tokens than UTF-8 bytes, and the family bound of any script is above a tenth of its bytes.
 */
const MAX_DRIFT = 9

/** A class takes part in a report when it holds at least this share of the prompt's estimate. */
const ATTRIBUTION_SHARE = 0.25

/** Different tenants whose reports must agree before a raised margin starts to relax. */
const RELAX_QUORUM = 3

/** Half-life of a raised margin, in observations that did not need it. */
const HALF_LIFE_OBSERVATIONS = 2_000

/** Half-life of a raised margin, in milliseconds (7 days). */
const HALF_LIFE_MS = 7 * 24 * 60 * 60 * 1000

/** Why observations were ignored (counters; the state stays bounded). */
interface IgnoredCounts {
  /** A figure that is not a finite number. */
  invalid: number
  /** `actual ≤ 0`: no usage reported, or a broken report. */
  nonPositive: number
  /** The estimate is below {@link MIN_SAMPLE_TOKENS}: fixed template tokens dominate small prompts. */
  tooSmall: number
}

/** What has been learned about one script class. */
interface ClassDrift {
  /** The margin set by the last raise (before decay), as a fraction: 0.12 = 12%. */
  peak: number
  /** When the last raise happened (ms since epoch). */
  peakAt: number
  /** Covered observations since the last raise. */
  sinceRaise: number
  /** Distinct tenants (opaque ids) among them, at most {@link RELAX_QUORUM}. */
  tenantsSinceRaise: string[]
  /** The largest `actual / estimate − 1` attributed to this class (for operators; does not decay). */
  worstSeen: number
}

/** The serializable calibration state of one model. */
export interface DriftState {
  /** Format version, for the Durable Object that persists it (older formats are discarded on read). */
  v: 2
  /** Classes that ever needed a raise. */
  classes: Partial<Record<ScriptClass, ClassDrift>>
  /** Accepted observations in total. */
  observations: number
  ignored: IgnoredCounts
}

/** One engine count, beside what the guard charged the same prompt. */
export interface DriftObservation {
  /** The family bound of the prompt's text per script class, before any margin. */
  classes: Partial<Record<ScriptClass, number>>
  /** The fixed template tokens the guard added on top. */
  overhead: number
  /** The engine's count: `usage.prompt_tokens`, or the count an engine refusal states. */
  actual: number
  /** When it was observed (ms since epoch). */
  at: number
  /** Who sent the request (an opaque id): relaxing needs several. */
  tenant: string
}

/**
 * A model's state before any observation.
 *
 * @example
 * let drift = emptyDriftState()
 */
export function emptyDriftState(): DriftState {
  return {
    v: 2,
    classes: {},
    observations: 0,
    ignored: { invalid: 0, nonPositive: 0, tooSmall: 0 },
  }
}

/**
 * The learned margin of one class at time `at` (without the floor): the peak, decayed by the slower
 * of the two clocks once {@link RELAX_QUORUM} tenants have shown it is no longer needed.
 *
 * @example
 * learnedDrift(state, 'georgian', Date.now()) // e.g. 0.4
 */
function learnedDrift(state: DriftState, cls: ScriptClass, at: number): number {
  const drift = state.classes[cls]
  if (!drift || drift.peak <= 0) return 0
  if (drift.tenantsSinceRaise.length < RELAX_QUORUM) return drift.peak
  const byObservations = 0.5 ** (drift.sinceRaise / HALF_LIFE_OBSERVATIONS)
  const byTime = 0.5 ** (Math.max(0, at - drift.peakAt) / HALF_LIFE_MS)
  return drift.peak * Math.max(byObservations, byTime)
}

/**
 * Every class's learned margin at time `at` (classes with none are left out).
 *
 * @example
 * const margins = learnedMargins(state, Date.now()) // { georgian: 0.4 }
 */
export function learnedMargins(
  state: DriftState,
  at: number,
): Partial<Record<ScriptClass, number>> {
  const out: Partial<Record<ScriptClass, number>> = {}
  for (const cls of Object.keys(state.classes) as ScriptClass[]) {
    const margin = learnedDrift(state, cls, at)
    if (margin > 0) out[cls] = margin
  }
  return out
}

function ignore(state: DriftState, reason: keyof IgnoredCounts): DriftState {
  return { ...state, ignored: { ...state.ignored, [reason]: state.ignored[reason] + 1 } }
}

/** The classes a report speaks about: those holding a real share of the prompt (at least the largest). */
function attributed(classes: [ScriptClass, number][], total: number): Set<ScriptClass> {
  const out = new Set<ScriptClass>()
  let largest: ScriptClass | undefined
  let most = -1
  for (const [cls, bound] of classes) {
    if (bound >= total * ATTRIBUTION_SHARE) out.add(cls)
    if (bound > most) {
      most = bound
      largest = cls
    }
  }
  if (out.size === 0 && largest !== undefined) out.add(largest)
  return out
}

/**
 * Folds one engine count into the state (returns a new state; the input is not changed).
 *
 * @example
 * state = observe(state, { classes: { cyrillic: 40_000 }, overhead: 11, actual: 52_000, at: Date.now(), tenant: 't1' })
 * learnedDrift(state, 'cyrillic', Date.now()) // ≈ 0.30 + 0.02; learnedDrift(state, 'latin', …) stays 0
 */
export function observe(state: DriftState, observation: DriftObservation): DriftState {
  const { overhead, actual, at, tenant } = observation
  const classes = (Object.entries(observation.classes) as [ScriptClass, number][]).filter(
    ([cls, bound]) => SCRIPT_CLASSES.includes(cls) && bound > 0,
  )
  if (
    !Number.isFinite(actual) ||
    !Number.isFinite(at) ||
    !Number.isFinite(overhead) ||
    classes.some(([, bound]) => !Number.isFinite(bound))
  ) {
    return ignore(state, 'invalid')
  }
  if (actual <= 0) return ignore(state, 'nonPositive')
  const total = classes.reduce((sum, [, bound]) => sum + bound, 0)
  if (total < MIN_SAMPLE_TOKENS) return ignore(state, 'tooSmall')

  const speaking = attributed(classes, total)
  let covered = overhead
  let rest = overhead
  let speakingBound = 0
  for (const [cls, bound] of classes) {
    const charged = bound * (1 + learnedDrift(state, cls, at))
    covered += charged
    if (speaking.has(cls)) speakingBound += bound
    else rest += charged
  }
  const next: DriftState = {
    ...state,
    classes: { ...state.classes },
    observations: state.observations + 1,
  }
  if (actual > covered) {
    // Undercount beyond the learned margins: cover it now, in the classes the prompt is made of.
    const needed = (actual - rest) / speakingBound - 1
    for (const cls of speaking) {
      const old = state.classes[cls]
      next.classes[cls] = {
        peak: Math.min(MAX_DRIFT, Math.max(learnedDrift(state, cls, at), needed + SAFETY_STEP)),
        peakAt: at,
        sinceRaise: 0,
        tenantsSinceRaise: [],
        worstSeen: Math.max(old?.worstSeen ?? 0, needed),
      }
    }
    return next
  }
  for (const cls of speaking) {
    const old = state.classes[cls]
    if (!old) continue
    const tenants = old.tenantsSinceRaise.includes(tenant)
      ? old.tenantsSinceRaise
      : [...old.tenantsSinceRaise, tenant].slice(0, RELAX_QUORUM)
    next.classes[cls] = { ...old, sinceRaise: old.sinceRaise + 1, tenantsSinceRaise: tenants }
  }
  return next
}
