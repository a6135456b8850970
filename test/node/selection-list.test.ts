import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { SelectionList } from '../../src/plugins/foreign-content/selection-list'

/** The reference: a Set of the values in the order first added, stopped at the cap. */
function reference(values: readonly number[], cap: number): number[] {
  const seen = new Set<number>()
  for (const value of values) if (seen.size < cap) seen.add(value)
  return [...seen]
}

describe('SelectionList', () => {
  it('holds the distinct values in the order first added, up to the cap, as a Set did', () => {
    // Values that share their low 32 bits (same slot) and repeats, across growth of both arrays.
    const value = fc.oneof(
      fc.integer({ min: 0, max: 2 ** 52 - 1 }),
      fc.integer({ min: 0, max: 15 }).map((high) => high * 2 ** 32 + 7),
      fc.integer({ min: 0, max: 40 }),
    )
    fc.assert(
      fc.property(
        fc.array(value, { maxLength: 600 }),
        fc.integer({ min: 1, max: 700 }),
        (values, cap) => {
          const list = new SelectionList(cap)
          for (const v of values) list.add(v)
          const expected = reference(values, cap)
          expect(list.toArray()).toEqual(expected)
          expect(list.size).toBe(expected.length)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('stops at its cap of thousands', () => {
    const list = new SelectionList(8_192)
    for (let i = 0; i < 10_000; i++) list.add(i * 4_294_967_311)
    const all = list.toArray()
    expect(all.length).toBe(8_192)
    expect(all[8_191]).toBe(8_191 * 4_294_967_311)
  })
})
