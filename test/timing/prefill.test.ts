import { describe, expect, it } from 'vitest'
import { timingSignal } from '../../src/core/timing/prefill'

describe('timing judgement', () => {
  const base = { maxPrefillTokensPerSecond: 200_000, minEvidenceMs: 200 }
  it('should judge impossible only what beats the physical bound', () => {
    expect(
      timingSignal({ ...base, promptTokens: 700_000, cachedTokens: 0, observedMs: 40 }).impossible,
    ).toBe(true)
    expect(
      timingSignal({ ...base, promptTokens: 700_000, cachedTokens: 0, observedMs: 3_600 })
        .impossible,
    ).toBe(false)
  })
  it('should not judge prompts whose prefill is below clock noise', () => {
    const t = timingSignal({ ...base, promptTokens: 20_000, cachedTokens: 0, observedMs: 1 })
    expect(t.judged).toBe(false)
    expect(t.impossible).toBe(false)
  })
  it('should subtract cached tokens', () => {
    const t = timingSignal({
      ...base,
      promptTokens: 700_000,
      cachedTokens: 690_000,
      observedMs: 40,
    })
    expect(t.impossible).toBe(false)
  })
  it('should let a learned baseline tighten, never loosen, the bound', () => {
    const learned = timingSignal({
      ...base,
      promptTokens: 400_000,
      cachedTokens: 0,
      observedMs: 2_500,
      learnedMinMs: () => 3_000,
    })
    expect(learned.impossible).toBe(true)
    expect(learned.bound).toBe('learned')
    const loose = timingSignal({
      ...base,
      promptTokens: 400_000,
      cachedTokens: 0,
      observedMs: 1_500,
      learnedMinMs: () => 10,
    })
    expect(loose.impossible).toBe(true)
    expect(loose.bound).toBe('physical')
  })
})
