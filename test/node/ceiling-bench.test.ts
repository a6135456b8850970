import { describe, expect, it } from 'vitest'
import { median, p99, percentile, sideBySide, summarize } from '../../bench/lib'

describe('bench statistics', () => {
  it('should take the middle sample, or the mean of the two middle ones', () => {
    expect(median([5, 1, 3])).toBe(3)
    expect(median([4, 1, 3, 2])).toBe(2.5)
  })

  it('should give nearest-rank percentiles, p99 being the maximum of few samples', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2)
    expect(p99([3, 9, 1])).toBe(9)
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(p99(hundred)).toBe(99)
    expect(summarize([1, 2, 3])).toEqual({ median: 2, p99: 3, runs: 3 })
  })

  it('should refuse to summarize nothing', () => {
    expect(() => median([])).toThrow(/no samples/)
  })

  it('should alternate the order of contenders every round', async () => {
    const order: string[] = []
    const t = await sideBySide({ a: () => order.push('a'), b: () => order.push('b') }, 3, 1)
    expect(order).toEqual(['a', 'b', 'b', 'a', 'a', 'b', 'b', 'a'])
    expect(t.a).toHaveLength(3)
    expect(t.b).toHaveLength(3)
  })
})
