/**
 * @module The piece cutter on its own: pieces cut whole, joins across a cut, released text never cut,
 * and pieces of another tenant's marker found from 15 body characters on.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MarkerBook, PieceCutter } from '../../src/core/canary'

const CANARY = 'cnry_0a1b2c3d4e5f6g7h8j9k0m1n'
const MARKER = 'cnry_y5nptpffn4qc37cne0j7avgt'

function cut(text: string, own = [CANARY, MARKER], book?: MarkerBook, tenant?: string) {
  const { cuts, foreign } = new PieceCutter(own, book, tenant).feed(text, 0)
  let out = ''
  let at = 0
  for (const c of [...cuts].sort((a, b) => a.start - b.start)) {
    out += text.slice(at, Math.max(at, c.start))
    at = Math.max(at, c.end)
  }
  return { text: out + text.slice(at), foreign }
}

/** Whether `text` holds 8 characters, any case, of one of `secrets`. */
function holdsPiece(text: string, secrets: string[]): boolean {
  const lower = text.toLowerCase()
  for (let i = 0; i + 8 <= lower.length; i++) {
    if (secrets.some((s) => s.includes(lower.slice(i, i + 8)))) return true
  }
  return false
}

describe('PieceCutter', () => {
  it('should cut a piece whole, any case, and keep what is around it', () => {
    expect(cut(`x ${MARKER.slice(9).toUpperCase()} The quick`).text).toBe('x  The quick')
    expect(cut('nry_y5np… and p3a').text).toBe('… and p3a')
    expect(cut(`a ${MARKER.slice(1, 8)} b`).text).toBe(`a ${MARKER.slice(1, 8)} b`)
  })

  it('should cut what joins into a piece once another piece between is cut', () => {
    // "y5np" + canary + "tpff": the canary goes, and so does the marker piece it leaves.
    expect(cut(`<y5np${CANARY}tpff>`).text).toBe('<>')
  })

  it('should never cut what has left, and never leave 8 characters out', () => {
    const cutter = new PieceCutter([MARKER])
    expect(cutter.feed('see y5n', 0).cuts).toEqual([])
    // Held from "y5n" (a possible start); had it left (released = 7), only the rest is cut.
    expect(cutter.holdFrom(0)).toBe(4)
    expect(cutter.feed('ptpffn!', 7).cuts).toEqual([{ start: 7, end: 13 }])
  })

  it('should leave no piece in any text (against a plain search)', () => {
    const alphabet = fc.constantFrom(...'cnry_y5nptpffn4qc37cne0j7avgt0a1b2c3dAB ,.'.split(''))
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 120 }), (chars) => {
        expect(holdsPiece(cut(chars.join('')).text, [CANARY, MARKER])).toBe(false)
      }),
      { numRuns: 2000 },
    )
  })

  it('should find 15 body characters of another tenant’s marker, and not its own', () => {
    const book = new MarkerBook(10)
    const victim = 'cnry_k7m2q9v4x6z1b0c5n8p3r0st'
    book.add('victim', victim, '0123456789')
    for (let at = 5; at + 15 <= victim.length; at++) {
      const piece = victim.slice(at, at + 15).toUpperCase()
      expect(cut(`see ${piece} here`, [CANARY], book, 'mallory').foreign?.tenant).toBe('victim')
      expect(cut(`see ${piece} here`, [CANARY], book, 'victim').foreign).toBeUndefined()
    }
    // Eleven body characters are no evidence.
    expect(
      cut(`see ${victim.slice(5, 16)} here`, [CANARY], book, 'mallory').foreign,
    ).toBeUndefined()
  })

  it('should read 100k characters of prose in well under a millisecond a kilobyte', () => {
    const prose = 'The quick brown fox jumps over the lazy dog, strength 42. '.repeat(1_800)
    const cutter = new PieceCutter([CANARY, MARKER])
    const started = performance.now()
    expect(cutter.feed(prose, 0).cuts).toEqual([])
    expect(performance.now() - started).toBeLessThan(100)
  })
})
