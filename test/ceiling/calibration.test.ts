import { describe, expect, it } from 'vitest'
import {
  type DriftState,
  effectiveDrift,
  emptyDriftState,
  HALF_LIFE_MS,
  HALF_LIFE_OBSERVATIONS,
  MAX_DRIFT,
  observe,
  SAFETY_STEP,
} from '../../src/ceiling/calibration'

const T0 = 1_790_000_000_000
const DAY = 24 * 60 * 60 * 1000

function feed(state: DriftState, count: number, at: number, ratio = 1): DriftState {
  let next = state
  for (let i = 0; i < count; i++)
    next = observe(next, { estimated: 10_000, actual: 10_000 * ratio, at })
  return next
}

describe('drift calibration', () => {
  it('should keep the floor when usage matches the estimate', () => {
    const state = feed(emptyDriftState(), 50, T0, 1)
    expect(effectiveDrift(state, 0.05, T0)).toBe(0.05)
    expect(state.observations).toBe(50)
  })

  it('should raise the margin at once to cover an undercount, plus the safety step', () => {
    const state = observe(emptyDriftState(), { estimated: 300_000, actual: 360_000, at: T0 })
    expect(effectiveDrift(state, 0.05, T0)).toBeCloseTo(0.2 + SAFETY_STEP, 10)
  })

  it('should not raise for an undercount the floor already covers (floor applies on read)', () => {
    const state = observe(emptyDriftState(), { estimated: 100_000, actual: 103_000, at: T0 })
    expect(effectiveDrift(state, 0.1, T0)).toBe(0.1)
  })

  it('should relax slowly: not after a burst of observations, not after a quiet week', () => {
    const raised = observe(emptyDriftState(), { estimated: 100_000, actual: 130_000, at: T0 })
    const peak = effectiveDrift(raised, 0.05, T0)
    // 10,000 good observations within a minute: time has not passed, so nothing relaxes.
    const burst = feed(raised, 10_000, T0 + 60_000)
    expect(effectiveDrift(burst, 0.05, T0 + 60_000)).toBeCloseTo(peak, 3)
    // A quiet month with no observations: no evidence, so nothing relaxes either.
    expect(effectiveDrift(raised, 0.05, T0 + 30 * DAY)).toBe(peak)
    // Both one half-life of evidence and one of time: half the peak.
    const both = feed(raised, HALF_LIFE_OBSERVATIONS, T0 + HALF_LIFE_MS)
    expect(effectiveDrift(both, 0, T0 + HALF_LIFE_MS)).toBeCloseTo(peak / 2, 6)
  })

  it('should never relax below the floor', () => {
    const raised = observe(emptyDriftState(), { estimated: 100_000, actual: 130_000, at: T0 })
    const later = T0 + 100 * HALF_LIFE_MS
    const relaxed = feed(raised, 100 * HALF_LIFE_OBSERVATIONS, later)
    expect(effectiveDrift(relaxed, 0.07, later)).toBe(0.07)
  })

  it('should raise again at once when an undercount exceeds the relaxed margin', () => {
    const raised = observe(emptyDriftState(), { estimated: 100_000, actual: 130_000, at: T0 })
    const at = T0 + 4 * HALF_LIFE_MS
    const relaxed = feed(raised, 4 * HALF_LIFE_OBSERVATIONS, at)
    expect(effectiveDrift(relaxed, 0, at)).toBeLessThan(0.05)
    const again = observe(relaxed, { estimated: 100_000, actual: 112_000, at })
    expect(effectiveDrift(again, 0, at)).toBeCloseTo(0.12 + SAFETY_STEP, 10)
  })

  it('should cap the learned margin', () => {
    const state = observe(emptyDriftState(), { estimated: 1_000, actual: 3_900, at: T0 })
    expect(effectiveDrift(state, 0, T0)).toBe(MAX_DRIFT)
  })

  const junk: Array<[string, { estimated: number; actual: number; at: number }, string]> = [
    ['zero actual', { estimated: 10_000, actual: 0, at: T0 }, 'nonPositive'],
    ['negative actual', { estimated: 10_000, actual: -5, at: T0 }, 'nonPositive'],
    ['a tiny estimate', { estimated: 20, actual: 40, at: T0 }, 'tooSmall'],
    ['an absurd ratio', { estimated: 10_000, actual: 1_000_000, at: T0 }, 'implausible'],
    ['NaN', { estimated: Number.NaN, actual: 10, at: T0 }, 'invalid'],
    [
      'an infinite time',
      { estimated: 10_000, actual: 20_000, at: Number.POSITIVE_INFINITY },
      'invalid',
    ],
  ]
  for (const [name, observation, reason] of junk) {
    it(`should ignore ${name} and count it as ${reason}`, () => {
      const state = observe(emptyDriftState(), observation)
      expect(effectiveDrift(state, 0.05, T0)).toBe(0.05)
      expect(state.observations).toBe(0)
      expect(state.ignored[reason as keyof DriftState['ignored']]).toBe(1)
    })
  }

  it('should accept the smallest sample and the largest plausible ratio', () => {
    const state = observe(emptyDriftState(), { estimated: 256, actual: 1_024, at: T0 })
    expect(state.observations).toBe(1)
    expect(effectiveDrift(state, 0, T0)).toBe(MAX_DRIFT)
  })

  it('should stay small and survive a JSON round trip', () => {
    let state = emptyDriftState()
    for (let i = 0; i < 5_000; i++) {
      state = observe(state, {
        estimated: 10_000,
        actual: 10_000 + (i % 97) * 10,
        at: T0 + i * 1000,
      })
    }
    const json = JSON.stringify(state)
    expect(json.length).toBeLessThan(300)
    const back = JSON.parse(json) as DriftState
    expect(effectiveDrift(back, 0.05, T0 + 5_000_000)).toBe(
      effectiveDrift(state, 0.05, T0 + 5_000_000),
    )
    expect(back.worstSeen).toBeCloseTo(0.096, 10)
  })

  it('should not change the state it was given', () => {
    const state = emptyDriftState()
    observe(state, { estimated: 10_000, actual: 15_000, at: T0 })
    observe(state, { estimated: 10_000, actual: 0, at: T0 })
    expect(state).toEqual(emptyDriftState())
  })
})
