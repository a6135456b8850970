import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { StandInIndex } from '../../src/plugins/secrets/stand-in-index'

/**
 * The index of a request's own stand-ins: its filter is sized to what it holds (and grows with it),
 * so every stand-in added — before or after a resize — is found where it occurs, and nothing else is.
 */

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

function token(seed: number, length: number): string {
  let out = 'sk-'
  let x = seed * 2654435761
  for (let i = 0; i < length; i++) {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + i) | 0
    out += ALPHABET[(x >>> 3) & 31]
  }
  return out
}

/** The occurrences of `needles` in `text` a plain search finds, earliest first, non-overlapping. */
function naive(text: string, needles: readonly string[]): { start: number; standIn: string }[] {
  const hits: { start: number; standIn: string }[] = []
  let lastEnd = 0
  for (let end = 8; end <= text.length; end++) {
    for (const standIn of needles) {
      const start = end - standIn.length
      if (start >= lastEnd && text.startsWith(standIn, start)) {
        hits.push({ start, standIn })
        lastEnd = end
        break
      }
    }
  }
  return hits
}

describe('StandInIndex', () => {
  it('finds nothing while empty, whatever the text holds', () => {
    const index = new StandInIndex()
    expect(index.size).toBe(0)
    expect(index.find(`prefix ${token(1, 24)} suffix`)).toEqual([])
  })

  it('finds every stand-in added, across the filter growing from 1 to 40,000 of them', () => {
    const index = new StandInIndex()
    const added: string[] = []
    for (const target of [1, 2, 17, 16, 300, 5_000, 40_000]) {
      while (added.length < target) {
        const standIn = token(added.length + 1, 20 + (added.length % 9))
        index.add({ standIn, kind: 'openai-key', value: `value-${added.length}` })
        added.push(standIn)
      }
      // The first, the middle and the latest: those added before a resize are marked again.
      for (const i of [0, added.length >> 1, added.length - 1]) {
        const text = `Your key is ${added[i]}, keep it.`
        const hits = index.find(text)
        expect(hits.map((h) => h.entry.value)).toEqual([`value-${i}`])
        expect(hits[0]!.start).toBe(text.indexOf(added[i]!))
        expect(hits[0]!.end).toBe(text.indexOf(added[i]!) + added[i]!.length)
      }
    }
    expect(index.size).toBe(40_000)
    // A near miss (last character changed) of every tenth is not found.
    for (let i = 0; i < added.length; i += 10) {
      const near = `${added[i]!.slice(0, -1)}${added[i]!.endsWith('0') ? '1' : '0'}`
      expect(index.find(` ${near} `)).toEqual([])
    }
  })

  it('agrees with a plain search on random texts built from its stand-ins', () => {
    const pool = Array.from({ length: 12 }, (_, i) => token(i + 100, 8 + i))
    fc.assert(
      fc.property(
        fc.subarray(pool, { minLength: 1 }),
        fc.array(fc.oneof(fc.constantFrom(...pool), fc.string({ maxLength: 12 })), {
          maxLength: 30,
        }),
        (held, pieces) => {
          const index = new StandInIndex()
          for (const standIn of held) index.add({ standIn, kind: 'k', value: standIn })
          const text = pieces.join('')
          const found = index.find(text).map((h) => ({ start: h.start, standIn: h.entry.value }))
          expect(found).toEqual(naive(text, held))
        },
      ),
    )
  })

  it('refuses a stand-in shorter than its 8-character anchor', () => {
    expect(() => new StandInIndex().add({ standIn: 'short', kind: 'k', value: 'v' })).toThrow(
      /at least 8 characters/,
    )
  })
})
