import { describe, expect, it } from 'vitest'
import { importStandInKey, operatorDetector, StandInBook } from '../../src/plugins/secrets'

describe('an operator pattern’s longest match (a stream’s hold-back for its stand-ins)', () => {
  it('should bound every match, counting a non-literal character as a possible surrogate pair', () => {
    const cases: [string, string][] = [
      ['ACME-[0-9]{8}(?:-[A-Z]{2,4})?', 'ACME-12345678-ABCD'],
      ['LID[A-Z]{250}', `LID${'Q'.repeat(250)}`],
      ['a|bcd', 'bcd'],
      ['(?<x>ab){2}c', 'ababc'],
      ['\\d{3}-\\d{2}-\\d{4}', '123-45-6789'],
      ['x\\u0041{3}\\x42', 'xAAAB'],
      ['K[\\]a-z]{1,9}\\b', 'Kabcdefghi'],
    ]
    for (const [pattern, longest] of cases) {
      expect(new RegExp(`^(?:${pattern})$`).test(longest), pattern).toBe(true)
      // What the detector declares as its longest match is what the stream holds back.
      const declared = operatorDetector({ name: 'case', pattern }).longest
      expect(declared, pattern).toBeGreaterThanOrEqual(longest.length)
      expect(declared, pattern).toBeLessThanOrEqual(2 * longest.length)
    }
  })

  it('should make the book hold back enough for another request’s long operator stand-in', async () => {
    const detector = operatorDetector({ name: 'long-id', pattern: 'LID[A-Z]{256}' })
    expect(detector.longest).toBe(3 + 2 * 256)
    const key = await importStandInKey('longest-match-test-secret-0123456789abcdef')
    const book = await StandInBook.open(key, { requestId: 'r', tenant: 't' }, [detector])
    expect(book.longestCandidate).toBe(515)
  })

  it('should refuse a confidence that is neither high nor medium, naming the pattern', () => {
    for (const confidence of ['hgih', 'low', 'constructor']) {
      expect(() =>
        operatorDetector({ name: 'acme', pattern: 'ACME-[0-9]{8}', confidence } as never),
      ).toThrow(/secret pattern "acme": confidence must be "high" or "medium"/)
    }
  })
})
