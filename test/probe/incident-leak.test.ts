import { describe, expect, it } from 'vitest'
import { expectLimitPinned, probeSim, REAL_LIMIT } from './sim'

describe('probe against the incident (pd-abort-leak, full size)', { timeout: 30_000 }, () => {
  it('should pin the real limit within 1% and flag the leak and the impossible TTFT', async () => {
    const report = await probeSim({ mode: 'pd-abort-leak' })
    expect(report.advertisedWindow).toBe(1_048_576)
    expectLimitPinned(report, REAL_LIMIT)
    expect(report).toMatchObject({
      verdict: 'unsafe',
      exitCode: 1,
      leak: true,
      impossibleTtft: true,
    })
    // Every failure is the incident's signature: a fast 200, counted in full, quoting earlier requests.
    const failures = report.steps.filter((s) => s.kind !== 'ok')
    expect(failures.length).toBeGreaterThan(0)
    for (const s of failures) {
      expect(s.kind).toBe('foreign-content')
      expect(s.foreignFrom.length).toBeGreaterThan(0)
      expect(s.foreignFrom.every((n) => n < s.index)).toBe(true)
      expect(s.impossibleTtft).toBe(true)
      expect(s.reportedPromptTokens).toBeGreaterThan(REAL_LIMIT)
    }
    // Every correct answer took a real prefill (50,000 tok/s on the virtual clock).
    for (const s of report.steps.filter((x) => x.kind === 'ok')) {
      expect(s.ttftMs).toBeCloseTo(((s.reportedPromptTokens ?? 0) / 50_000) * 1000, 0)
      expect(s.impossibleTtft).toBe(false)
    }
    expect(report.summary).toContain('LEAK')
    const pool = Math.floor((report.largestOk?.reportedPromptTokens ?? 0) * 0.98)
    expect(report.recommendation).toEqual({
      ceiling: pool - 4096,
      kvPoolTokens: pool,
      margin: 0.02,
      outputReserve: 4096,
      basis: 'reported',
    })
    expect(report.profile).toEqual({
      contextWindow: 1_048_576,
      kvPoolTokens: pool,
      maxPrefillTokensPerSecond: 200_000,
    })
    expect(report.profileSnippet).toContain(
      `kvPoolTokens: ${pool.toLocaleString('en-US').replace(/,/g, '_')},`,
    )
    expect(report.budget.requests).toBeLessThanOrEqual(40)
    expect(report.budget.chargedTokens).toBeLessThanOrEqual(20_000_000)
    expect(report.budget.stoppedBy).toBeNull()
  })
})
