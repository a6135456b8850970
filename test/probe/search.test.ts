import { describe, expect, it } from 'vitest'
import {
  planProbe,
  planSearch,
  RATIO_NOISE,
  ratioMargin,
  renderDryRun,
  resolveProbeSettings,
  type SearchState,
  searchState,
  topLength,
} from '../../src/tools/probe'

const bounds = { start: 1024, top: 1_047_488, tolerance: 0.005, minTokens: 128 }

/** Runs the search against a target that passes every length ≤ limit. */
function walk(limit: number, b = bounds): { lengths: number[]; last: SearchState } {
  const points: { tokens: number; ok: boolean }[] = []
  let s = searchState(points, b)
  while (!s.finished) {
    const t = s.next as number
    points.push({ tokens: t, ok: t <= limit })
    s = searchState(points, b)
  }
  return { lengths: points.map((p) => p.tokens), last: s }
}

describe('probe search', () => {
  it('should double from the start, try the top, then bisect to within the tolerance', () => {
    const { lengths, last } = walk(681_274)
    expect(lengths.slice(0, 11)).toEqual([
      1024, 2048, 4096, 8192, 16_384, 32_768, 65_536, 131_072, 262_144, 524_288, 1_047_488,
    ])
    expect(lengths[11]).toBe(Math.floor((524_288 + 1_047_488) / 2))
    expect(last).toMatchObject({ finished: true, converged: true })
    expect(last.largestOk).toBeLessThanOrEqual(681_274)
    expect(
      ((last.smallestFail ?? 0) - last.largestOk) / (last.smallestFail ?? 1),
    ).toBeLessThanOrEqual(0.005)
    expect(lengths.length).toBeLessThanOrEqual(20)
  })

  it('should stop at the top, converged, when nothing fails', () => {
    const { lengths, last } = walk(Infinity)
    expect(lengths.at(-1)).toBe(1_047_488)
    expect(last).toMatchObject({ finished: true, converged: true, largestOk: 1_047_488 })
    expect(last.smallestFail).toBeUndefined()
  })

  it('should halve below the start when the start fails, and give up under the minimum', () => {
    const low = walk(700)
    expect(low.lengths.slice(0, 2)).toEqual([1024, 512])
    expect(low.last.converged).toBe(true)
    const none = walk(0)
    expect(none.lengths).toEqual([1024, 512, 256, 128])
    expect(none.last).toMatchObject({ finished: true, converged: false, largestOk: 0 })
  })

  it('should not bisect a target that passed above a failure (not monotonic)', () => {
    const s = searchState(
      [
        { tokens: 2048, ok: false },
        { tokens: 4096, ok: true },
      ],
      bounds,
    )
    expect(s).toMatchObject({ finished: true, converged: false })
  })

  it('should plan the worst case of the same search: requests exactly, tokens as a bound', () => {
    const plan = planSearch(bounds, 1024)
    expect(plan.growth).toEqual(walk(Infinity).lengths)
    let most = 0
    const limits = [0, 1023, 2047, 600_000, 681_274, 1_047_487]
    for (let l = 524_288; l < 1_047_488; l += 5_231) limits.push(l)
    for (const limit of limits) {
      const { lengths } = walk(limit)
      expect(lengths.length).toBeLessThanOrEqual(plan.worstCaseRequests)
      const tokens = lengths.reduce((a, b) => a + b + 1024, 0)
      expect(tokens).toBeLessThanOrEqual(plan.worstCaseTokens)
      most = Math.max(most, lengths.length)
    }
    expect(most).toBe(plan.worstCaseRequests)
    expect(plan.worstCaseRequests).toBeLessThanOrEqual(40)
    expect(plan.worstCaseTokens).toBeLessThanOrEqual(20_000_000)
  })
})

describe('probe dry run and options', () => {
  it('should print the plan with the defaults covered by the default budget', () => {
    const dry = planProbe({}, { target: 'http://x/v1', model: 'm' })
    expect(dry).toMatchObject({ dryRun: true, advertisedWindow: 1_048_576, fitsBudget: true })
    expect(dry.plan.top).toBe(1_048_576 - 1024 - 64)
    const text = renderDryRun(dry)
    expect(text).toContain('nothing is sent')
    expect(text).toContain('1,024, 2,048, 4,096')
    expect(text).toContain('1,047,488')
    expect(text).toContain('covers the worst case')
  })

  it('should say when the budget may run out before a conclusion', () => {
    const dry = planProbe({ maxRequests: 5 }, { target: 't', model: 'm' })
    expect(dry.fitsBudget).toBe(false)
    expect(renderDryRun(dry)).toContain('may run out before a conclusion')
    expect(planProbe({ maxTokensTotal: 1_000_000 }, { target: 't', model: 'm' }).fitsBudget).toBe(
      false,
    )
  })

  it('should reject bad options with a message naming the option', () => {
    expect(() => resolveProbeSettings({ window: 100 })).toThrow(/^window must be/)
    expect(() => resolveProbeSettings({ start: 1.5 })).toThrow(/^start must be an integer/)
    expect(() => resolveProbeSettings({ tolerance: 0 })).toThrow(/^tolerance must be/)
    expect(() => resolveProbeSettings({ maxPrefill: -1 })).toThrow(/^maxPrefill must be/)
    expect(() => resolveProbeSettings({ maxRequests: 0 })).toThrow(/^maxRequests must be/)
    expect(() => resolveProbeSettings({ seed: -1 })).toThrow(/^seed must be/)
    expect(() => resolveProbeSettings({ window: 4096, start: 8192 })).toThrow(
      /^start must be at most/,
    )
    expect(() => resolveProbeSettings({ window: 2048, maxOutput: 2000 })).toThrow(/^maxOutput must/)
    expect(resolveProbeSettings({ maxPrefill: Infinity }).maxPrefill).toBe(Infinity)
  })

  it('should cap the top at maxLength and scale it by the target’s token ratio', () => {
    const s = resolveProbeSettings({ window: 131_072 })
    expect(topLength(s)).toBe(131_072 - 1024 - 64)
    expect(topLength(s, 1.1)).toBe(Math.floor((131_072 - 1024 - 64) / 1.1))
    expect(topLength(resolveProbeSettings({ window: 131_072, maxLength: 50_000 }))).toBe(50_000)
  })

  it('should keep a ratio margin at the top that narrows as the ratio is learnt on longer prompts', () => {
    const s = resolveProbeSettings({ window: 131_072 })
    const room = 131_072 - 1024 - 64
    expect(ratioMargin(16_384)).toBeCloseTo(RATIO_NOISE / 128)
    expect(topLength(s, 1.46, 16_384)).toBe(Math.floor(room / 1.46 / (1 + 1 / 128)))
    expect(topLength(s, 1.46, 65_536)).toBeGreaterThan(topLength(s, 1.46, 16_384))
    expect(ratioMargin(524_288)).toBeLessThan(0.0015)
    expect(ratioMargin(1)).toBe(0.25)
  })
})
