import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Winnower } from '../../src/plugins/foreign-content/winnow'

/**
 * The streaming winnower against the definition (Schleimer et al.): of every window of w consecutive
 * hashes the minimum, the rightmost on ties, each selection reported once; a text shorter than one
 * window selects its minimum at the end. Every w from 1 to 40 covers each ring size of the deque.
 */
function reference(hashes: number[], w: number): number[] {
  const picked: number[] = []
  const windows = hashes.length >= w ? hashes.length - w + 1 : hashes.length > 0 ? 1 : 0
  for (let start = 0; start < windows; start++) {
    const end = Math.min(hashes.length, start + w)
    let best = start
    for (let i = start; i < end; i++) if (hashes[i]! <= hashes[best]!) best = i
    if (picked[picked.length - 1] !== best) picked.push(best)
  }
  return picked
}

function streamed(hashes: number[], w: number): number[] {
  const winnow = new Winnower(w)
  const picked: number[] = []
  hashes.forEach((hash, index) => {
    if (winnow.push(hash, index)) {
      expect(winnow.selectedHash).toBe(hashes[winnow.selectedIndex])
      picked.push(winnow.selectedIndex)
    }
  })
  if (winnow.end()) picked.push(winnow.selectedIndex)
  return picked
}

describe('Winnower', () => {
  it('should select exactly what the definition selects, for every window size', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        // Few distinct values: ties, the case the rightmost rule decides, are common.
        fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 120 }),
        fc.array(fc.double({ min: 0, max: 2 ** 52, noNaN: true }), { maxLength: 60 }),
        (w, small, wide) => {
          expect(streamed(small, w)).toEqual(reference(small, w))
          expect(streamed(wide, w)).toEqual(reference(wide, w))
        },
      ),
      { numRuns: 600 },
    )
  })
})
