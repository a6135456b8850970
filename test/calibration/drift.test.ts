import { describe, expect, it } from 'vitest'
import {
  type DriftState,
  emptyDriftState,
  learnedMargins,
  observe,
} from '../../src/core/calibration/drift'
import type { ScriptClass } from '../../src/core/ceiling/script'

const T0 = 1_790_000_000_000
const DAY = 24 * 60 * 60 * 1000

// The calibration's documented figures (docs/how-it-decides.md, "Calibration per script class";
// src/core/calibration/drift.ts): the contract these tests pin.
/** Added on top of an observed undercount when raising. */
const SAFETY_STEP = 0.02
/** The highest margin calibration sets: ten times the family bound. */
const MAX_DRIFT = 9
/** Different tenants whose reports must agree before a raised margin relaxes. */
const RELAX_QUORUM = 3
/** A raised margin's half-life in observations that did not need it, and in time (7 days). */
const HALF_LIFE_OBSERVATIONS = 2_000
const HALF_LIFE_MS = 7 * DAY

/** The margin learned for one class at `at`, as the ceiling reads it (0 when none). */
function learnedDrift(state: DriftState, cls: ScriptClass, at: number): number {
  return learnedMargins(state, at)[cls] ?? 0
}

function report(
  state: DriftState,
  classes: Partial<Record<ScriptClass, number>>,
  actual: number,
  at = T0,
  tenant = 'a',
): DriftState {
  return observe(state, { classes, overhead: 0, actual, at, tenant })
}

/** `count` covered Latin reports spread over `tenants` tenants. */
function honest(state: DriftState, count: number, at: number, tenants = RELAX_QUORUM): DriftState {
  let next = state
  for (let i = 0; i < count; i++)
    next = report(next, { latin: 10_000 }, 10_000, at, `t${i % tenants}`)
  return next
}

describe('drift calibration per script class', () => {
  it('should learn nothing when the engine counts within the family bound', () => {
    const state = honest(emptyDriftState(), 50, T0)
    expect(learnedMargins(state, T0)).toEqual({})
    expect(state.observations).toBe(50)
  })

  it('should raise the class the prompt is made of at once, plus the safety step', () => {
    const state = report(emptyDriftState(), { cyrillic: 300_000 }, 360_000)
    expect(learnedDrift(state, 'cyrillic', T0)).toBeCloseTo(0.2 + SAFETY_STEP, 10)
  })

  it('should never move another class: Russian reports leave the English margin alone', () => {
    let state = emptyDriftState()
    // A mostly-Russian prompt with some English: Latin holds under the attribution share.
    for (let i = 0; i < 1_000; i++) {
      state = report(state, { cyrillic: 90_000, latin: 10_000 }, 400_000, T0 + i, `t${i}`)
    }
    expect(learnedDrift(state, 'cyrillic', T0 + 1_000)).toBeGreaterThan(3)
    expect(learnedDrift(state, 'latin', T0 + 1_000)).toBe(0)
  })

  it('should attribute a mixed prompt to every class holding a real share of it', () => {
    const state = report(emptyDriftState(), { cyrillic: 50_000, latin: 50_000 }, 150_000)
    expect(learnedDrift(state, 'cyrillic', T0)).toBeCloseTo(0.5 + SAFETY_STEP, 10)
    expect(learnedDrift(state, 'latin', T0)).toBeCloseTo(0.5 + SAFETY_STEP, 10)
  })

  it('should take a report far above the estimate as evidence, not as implausible', () => {
    const state = report(emptyDriftState(), { georgian: 100_000 }, 700_000)
    expect(learnedDrift(state, 'georgian', T0)).toBeCloseTo(6 + SAFETY_STEP, 10)
    const absurd = report(emptyDriftState(), { georgian: 1_000 }, 1_000_000)
    expect(learnedDrift(absurd, 'georgian', T0)).toBe(MAX_DRIFT)
  })

  it('should not relax on one tenant’s evidence, however much of it', () => {
    let state = report(emptyDriftState(), { latin: 100_000 }, 150_000)
    const peak = learnedDrift(state, 'latin', T0)
    state = honest(state, 20_000, T0 + 60 * DAY, 1)
    expect(learnedDrift(state, 'latin', T0 + 60 * DAY)).toBe(peak)
  })

  it('should relax only with several tenants, as slowly as the slower of observations and time', () => {
    let state = report(emptyDriftState(), { latin: 100_000 }, 150_000)
    const peak = learnedDrift(state, 'latin', T0)
    // A burst from three tenants in one minute: the time clock holds the margin.
    state = honest(state, HALF_LIFE_OBSERVATIONS * 4, T0 + 60_000)
    expect(learnedDrift(state, 'latin', T0 + 60_000)).toBeGreaterThan(peak * 0.99)
    // A quiet week: no evidence, no relaxing.
    const quiet = honest(report(emptyDriftState(), { latin: 100_000 }, 150_000), 3, T0)
    expect(learnedDrift(quiet, 'latin', T0 + HALF_LIFE_MS)).toBeGreaterThan(peak * 0.99)
    // Both clocks past one half-life: half the peak.
    expect(learnedDrift(state, 'latin', T0 + HALF_LIFE_MS)).toBeCloseTo(peak / 2, 5)
  })

  it('should raise again at once after relaxing', () => {
    let state = report(emptyDriftState(), { latin: 100_000 }, 150_000)
    state = honest(state, HALF_LIFE_OBSERVATIONS * 4, T0 + HALF_LIFE_MS * 4)
    expect(learnedDrift(state, 'latin', T0 + HALF_LIFE_MS * 4)).toBeLessThan(0.1)
    state = report(state, { latin: 100_000 }, 130_000, T0 + HALF_LIFE_MS * 4)
    expect(learnedDrift(state, 'latin', T0 + HALF_LIFE_MS * 4)).toBeCloseTo(0.3 + SAFETY_STEP, 10)
  })

  it('should ignore broken and too-small reports, counting why', () => {
    let state = emptyDriftState()
    state = report(state, { latin: 10_000 }, Number.NaN)
    state = report(state, { latin: 10_000 }, 0)
    state = report(state, { latin: 100 }, 10_000)
    expect(state.ignored).toEqual({ invalid: 1, nonPositive: 1, tooSmall: 1 })
    expect(learnedMargins(state, T0)).toEqual({})
  })

  it('should stay bounded: one entry per class, at most a quorum of tenants each', () => {
    let state = emptyDriftState()
    for (let i = 0; i < 2_000; i++) {
      state = report(state, { latin: 10_000 }, i === 0 ? 20_000 : 10_000, T0 + i, `tenant-${i}`)
    }
    expect(Object.keys(state.classes)).toEqual(['latin'])
    expect(state.classes.latin?.tenantsSinceRaise.length).toBe(RELAX_QUORUM)
    expect(JSON.stringify(state).length).toBeLessThan(1_000)
  })
})
