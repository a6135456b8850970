import { describe, expect, it } from 'vitest'
import { expectLimitPinned, probeSim, REAL_LIMIT } from './sim'

describe('probe against the fixed engine (full size)', { timeout: 30_000 }, () => {
  it('should pin the limit and see no leak where longer prompts are refused', async () => {
    const report = await probeSim({ mode: 'fixed' })
    expectLimitPinned(report, REAL_LIMIT)
    expect(report).toMatchObject({
      verdict: 'unsafe',
      exitCode: 1,
      leak: false,
      impossibleTtft: false,
    })
    expect(report.smallestFailure?.kind).toBe('error')
    expect(report.smallestFailure?.detail).toContain(
      `exceeds the maximum allowed length (${REAL_LIMIT} tokens)`,
    )
    expect(report.summary).toContain('No leak seen')
    expect(report.summary).not.toContain('LEAK')
    expect(report.steps.every((s) => s.foreignFrom.length === 0 && !s.impossibleTtft)).toBe(true)
    expect(report.recommendation?.kvPoolTokens).toBeLessThan(REAL_LIMIT)
  })
})
