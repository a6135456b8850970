/**
 * @module The filter in front of a fingerprint generation's slots: it may only ever say "not held"
 * of a key that is not held (a key it hid would be a leak the table no longer sees), it must turn
 * away most keys that are not held (or it saves no probe), and it empties with its generation.
 */
import { describe, expect, it } from 'vitest'
import { prng } from '../../sim/random'
import { Generation } from '../../src/plugins/foreign-content/generation'

/** Filter bits per slot, as docs/fingerprints.md states them (4 bits a slot, one hash). */
const FILTER_BITS = 4

/** Distinct random stored keys (52-bit hashes + 1, as the table stores them). */
function storedKeys(seed: number, count: number): number[] {
  const next = prng(seed)
  const keys = new Set<number>()
  while (keys.size < count) {
    keys.add(Math.floor(next() * 2 ** 20) * 2 ** 32 + Math.floor(next() * 2 ** 32) + 1)
  }
  return [...keys]
}

/** Puts `keys` in `generation` as the table does: at the slot `find` gives. */
function fill(generation: Generation, keys: number[]): void {
  for (const key of keys) {
    const slot = generation.find(key)
    if (generation.keys[slot] === 0) generation.put(slot, key)
  }
}

/** The share of `keys` the filter lets through to a probe. */
function passing(generation: Generation, keys: number[]): number {
  return keys.filter((key) => generation.mayHold(key)).length / keys.length
}

const CAPACITY = 1 << 16

describe('fingerprint generation filter', () => {
  it('should let every held key through, at the fullest load the table allows', () => {
    const generation = new Generation(CAPACITY, 1, 0)
    const held = storedKeys(1, Math.floor(CAPACITY * 0.7))
    fill(generation, held)
    expect(generation.size).toBe(held.length)
    for (const key of held) {
      expect(generation.mayHold(key)).toBe(true)
      expect(generation.keys[generation.find(key)]).toBe(key)
    }
  })

  it('should turn away most keys it does not hold: 1 − e^(−load/bits) of them pass', () => {
    const absent = storedKeys(99, 20_000)
    for (const load of [0.02, 0.3, 0.7]) {
      const generation = new Generation(CAPACITY, 1, 0)
      fill(generation, storedKeys(2, Math.floor(CAPACITY * load)))
      const expected = 1 - Math.exp(-load / FILTER_BITS)
      const share = passing(generation, absent)
      // 20,000 draws: the share is within a few points of its expectation (0.5%, 7%, 16%).
      expect(share).toBeGreaterThan(expected * 0.8 - 0.002)
      expect(share).toBeLessThan(expected * 1.2 + 0.002)
    }
  })

  it('should hold nothing once cleared for reuse, and again everything put after', () => {
    const generation = new Generation(CAPACITY, 1, 0)
    const before = storedKeys(3, 30_000)
    fill(generation, before)
    generation.clear(1)
    expect(passing(generation, before)).toBe(0)
    const after = storedKeys(4, 1_000)
    fill(generation, after)
    expect(passing(generation, after)).toBe(1)
  })

  it('should count its bitmap and the bitmap’s summary in the bytes it reports', () => {
    const generation = new Generation(CAPACITY, 1, 0)
    // Key 8, seen 4, one owner 4, FILTER_BITS bits a slot, and a summary bit per 8 of those.
    expect(generation.arrayBytes).toBe(CAPACITY * (16 + (FILTER_BITS * 9) / 8 / 8))
  })

  it('should answer exactly as its bitmap alone would, whatever the load', () => {
    // The bitmap alone: the bit `mayHold` reads, recomputed here for every key put.
    const bitOf = (stored: number) =>
      Math.floor(((Math.imul(stored | 0, 0x9e3779b1) >>> 0) * CAPACITY * FILTER_BITS) / 2 ** 32)
    const absent = storedKeys(98, 20_000)
    for (const load of [0.001, 0.05, 0.7]) {
      const generation = new Generation(CAPACITY, 1, 0)
      const held = storedKeys(5, Math.floor(CAPACITY * load))
      fill(generation, held)
      const bits = new Set(held.map(bitOf))
      for (const key of absent) expect(generation.mayHold(key)).toBe(bits.has(bitOf(key)))
    }
  })
})
