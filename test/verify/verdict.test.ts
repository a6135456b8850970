import { describe, expect, it } from 'vitest'
import { timingSignal } from '../../src/core/timing/prefill'
import { decide, decideReleased } from '../../src/core/verify/verdict'

describe('verdict', () => {
  const impossible = timingSignal({
    maxPrefillTokensPerSecond: 200_000,
    minEvidenceMs: 200,
    promptTokens: 700_000,
    cachedTokens: 0,
    observedMs: 5,
  })
  const honest = timingSignal({
    maxPrefillTokensPerSecond: 200_000,
    minEvidenceMs: 200,
    promptTokens: 700_000,
    cachedTokens: 0,
    observedMs: 9_000,
  })
  it('should quarantine on any hard signal alone', () => {
    expect(decide({ echo: 'echoed', foreignCanaries: 1, attempt: 1, retries: 1 }).action).toBe(
      'quarantine',
    )
    expect(
      decide({ echo: 'echoed', foreignCanaries: 0, timing: impossible, attempt: 1, retries: 1 })
        .action,
    ).toBe('quarantine')
    expect(
      decide({
        echo: 'echoed',
        foreignCanaries: 0,
        usage: { reported: 681_274, lower: 800_000 },
        attempt: 1,
        retries: 1,
      }).reasons,
    ).toEqual(['usage_undercount'])
  })
  it('should retry a lone missing echo, then quarantine it', () => {
    expect(
      decide({ echo: 'missing', foreignCanaries: 0, timing: honest, attempt: 1, retries: 1 })
        .action,
    ).toBe('retry')
    expect(decide({ echo: 'missing', foreignCanaries: 0, attempt: 2, retries: 1 })).toMatchObject({
      action: 'quarantine',
      reasons: ['echo_missing_repeatedly'],
    })
  })
  it('should quarantine a missing echo with any other anomaly at once', () => {
    expect(
      decide({ echo: 'missing', foreignCanaries: 0, timing: impossible, attempt: 1, retries: 1 }),
    ).toMatchObject({ action: 'quarantine', reasons: ['ttft_impossible', 'echo_missing'] })
  })
  it('should release a verified or not-requested echo with nothing else wrong', () => {
    expect(
      decide({
        echo: 'echoed',
        foreignCanaries: 0,
        timing: honest,
        usage: { reported: 700_500, lower: 560_000 },
        attempt: 1,
        retries: 1,
      }).action,
    ).toBe('release')
    expect(
      decide({ echo: 'not-requested', foreignCanaries: 0, attempt: 1, retries: 0 }).action,
    ).toBe('release')
  })
  it('should let an unexplained cache report corroborate a missing echo, never decide alone', () => {
    const excused = { ...honest, unexplainedCachedTokens: 650_000 }
    const alone = decide({
      echo: 'echoed',
      foreignCanaries: 0,
      timing: excused,
      attempt: 1,
      retries: 1,
    })
    expect([alone.action, alone.reasons]).toEqual(['release', ['cache_unexplained']])
    const withSlip = decide({
      echo: 'missing',
      foreignCanaries: 0,
      timing: excused,
      attempt: 1,
      retries: 1,
    })
    expect([withSlip.action, withSlip.reasons]).toEqual([
      'quarantine',
      ['cache_unexplained', 'echo_missing'],
    ])
    // Without the note the same slip is retried, as a lone slip is.
    expect(
      decide({ echo: 'missing', foreignCanaries: 0, timing: honest, attempt: 1, retries: 1 })
        .action,
    ).toBe('retry')
  })

  it('should never retry a lone missing echo once bytes were released, and retry it while held', () => {
    const missing = { echo: 'missing' as const, foreignCanaries: 0, attempt: 1, retries: 2 }
    expect(decide(missing).action).toBe('retry')
    expect(decide({ ...missing, phase: 'held' }).action).toBe('retry')
    expect(decide({ ...missing, phase: 'released' })).toEqual({
      action: 'quarantine',
      reasons: ['echo_missing'],
      score: 0.4,
    })
    // A released answer with an honest echo and nothing else found is released.
    expect(
      decide({ echo: 'echoed', foreignCanaries: 0, attempt: 1, retries: 2, phase: 'released' })
        .action,
    ).toBe('release')
  })

  it('should judge what a stream shows after release by the same table', () => {
    expect(decideReleased({ foreignCanaries: 1 })).toEqual({
      action: 'quarantine',
      reasons: ['foreign_canary'],
      score: 1,
    })
    expect(decideReleased({ foreignStandIns: 1 })).toEqual({
      action: 'quarantine',
      reasons: ['foreign_stand_in'],
      score: 1,
    })
    expect(decideReleased({ foreignContent: { source: 'acme', run: 6 } })).toEqual({
      action: 'quarantine',
      reasons: ['foreign_content'],
      score: 0.95,
    })
    expect(decideReleased({ echo: 'missing' })).toEqual({
      action: 'quarantine',
      reasons: ['echo_missing'],
      score: 0.4,
    })
    // Nothing found: nothing to withhold.
    expect(decideReleased({}).action).toBe('release')
  })

  describe('observe mode', () => {
    const none = { content: false, timing: false, echo: false }
    const all = { content: true, timing: true, echo: true }
    const content = { source: 'acme', run: 6 }

    it('should release what only an observed check withholds, marked observed, reasons kept', () => {
      const cases = [
        [{ foreignContent: content }, { ...none, content: true }, ['foreign_content']],
        [{ timing: impossible }, { ...none, timing: true }, ['ttft_impossible']],
        [{ usage: { reported: 1, lower: 2 } }, { ...none, timing: true }, ['usage_undercount']],
        [{ echo: 'missing', attempt: 3 }, { ...none, echo: true }, ['echo_missing_repeatedly']],
        [{ echo: 'missing', phase: 'released' }, { ...none, echo: true }, ['echo_missing']],
        [{ foreignContent: content, echo: 'missing' }, all, ['foreign_content', 'echo_missing']],
      ] as const
      for (const [signals, observe, reasons] of cases) {
        const base = { echo: 'echoed', foreignCanaries: 0, attempt: 1, retries: 2 } as const
        const verdict = decide({ ...base, ...signals }, observe)
        expect(verdict, reasons.join()).toMatchObject({ action: 'release', observed: true })
        expect(verdict.reasons).toEqual(reasons)
        // The same signals enforced: withheld.
        expect(decide({ ...base, ...signals }, none).action).toBe('quarantine')
        expect(decide({ ...base, ...signals }).observed).toBeUndefined()
      }
    })

    it('should withhold when any reason is enforced, and proof always', () => {
      const base = { echo: 'echoed', foreignCanaries: 0, attempt: 1, retries: 2 } as const
      // Content observed, the missing echo beside it enforced.
      expect(
        decide({ ...base, echo: 'missing', foreignContent: content }, { ...none, content: true })
          .action,
      ).toBe('quarantine')
      // Timing observed, content enforced.
      expect(
        decide({ ...base, timing: impossible, foreignContent: content }, { ...none, timing: true })
          .action,
      ).toBe('quarantine')
      for (const proof of [{ foreignCanaries: 1 }, { foreignStandIns: 1 }]) {
        expect(decide({ ...base, ...proof }, all)).toMatchObject({ action: 'quarantine' })
        expect(decide({ ...base, ...proof, foreignContent: content }, all).action).toBe(
          'quarantine',
        )
        expect(decideReleased(proof, all).action).toBe('quarantine')
      }
    })

    it('should leave retries, refusals and releases as they are', () => {
      const base = { foreignCanaries: 0, attempt: 1, retries: 2 } as const
      expect(decide({ ...base, echo: 'missing' }, all).action).toBe('retry')
      expect(decide({ ...base, echo: 'cut-off' }, all).action).toBe('refuse')
      expect(decide({ ...base, echo: 'echoed' }, all)).toEqual({
        action: 'release',
        reasons: [],
        score: 0,
      })
    })
  })
})
