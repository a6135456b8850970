import { describe, expect, it } from 'vitest'
import { ShingleSet } from '../../src/plugins/foreign-content/shingle-set'

/** 52-bit values spread like shingle hashes, from a fixed seed. */
function hashes(count: number, seed: number): number[] {
  let x = seed
  return Array.from({ length: count }, () => {
    x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0
    return x * 2 ** 20 + (x & 0xfffff)
  })
}

describe('ShingleSet', () => {
  it('should hold exactly the added hashes by their low 32 bits, once each, across growth', () => {
    const added = hashes(20_000, 7)
    const set = new ShingleSet(100)
    for (const h of added) set.add(h)
    for (const h of added.slice(0, 5_000)) set.add(h)
    const keys = new Set(added.map((h) => h >>> 0))
    expect(set.size).toBe(keys.size)
    for (const h of added) expect(set.has(h)).toBe(true)
    const absent = hashes(20_000, 8).filter((h) => !keys.has(h >>> 0))
    expect(absent.length).toBeGreaterThan(19_000)
    for (const h of absent) expect(set.has(h)).toBe(false)
    expect(set.has(0)).toBe(false)
  })

  it('should find hashes added after a look-up, and 0 like any other', () => {
    const set = new ShingleSet()
    set.add(5)
    expect(set.has(5)).toBe(true)
    expect(set.has(0)).toBe(false)
    set.add(0)
    set.add(2 ** 32 + 9)
    expect([set.has(0), set.has(9), set.has(5), set.size]).toEqual([true, true, true, 3])
  })

  it('should keep 4 bytes a distinct hash, plus at most an eighth, once sealed', () => {
    const set = new ShingleSet(100_000)
    for (const h of hashes(10_000, 3)) set.add(h)
    const kept = set.compact()
    expect(kept.size).toBe(10_000)
    expect(kept.bytes).toBeLessThanOrEqual(4 * 10_000 * (1 + 1 / 8))
    expect(kept).toBe(set)
  })
})
