import { describe, expect, it } from 'vitest'
import { importStandInKey, SHAPES, StandInBook } from '../../src/plugins/secrets'
import { GENERATORS, rng } from '../secrets/generate'

const SECRET = 'prefilter-test-secret-0123456789abcdef012'

/**
 * The book skips its candidate patterns for text holding no digit, no 20-character run without
 * whitespace and no `-----`: every built-in kind's stand-in must hold one of them, or another
 * request's stand-in would go unseen. Checked on the stand-ins themselves, alone between spaces.
 */
describe('the candidate prefilter', () => {
  it('should let every built-in kind’s stand-in through, so another request’s is always found', async () => {
    const key = await importStandInKey(SECRET)
    const r = rng(2026)
    const kinds = Object.keys(GENERATORS)
    const generated = new Set(kinds.map((name) => GENERATORS[name]!(rng(1)).kind))
    expect([...generated].sort()).toEqual(Object.keys(SHAPES).sort())
    let checked = 0
    for (let i = 0; i < 40; i++) {
      const minter = await StandInBook.open(key, { requestId: `m${i}`, tenant: 'minter' })
      const reader = await StandInBook.open(key, { requestId: `r${i}`, tenant: 'reader' })
      for (const name of kinds) {
        const { kind, value, line } = GENERATORS[name]!(r)
        const sent = await minter.substitute(line.replace('$', () => value))
        expect(sent.replaced.map((k) => k.kind)).toContain(kind)
        // The stand-in alone between spaces: none of the line's other digits or runs can help it.
        const at = line.indexOf('$')
        const standIn = sent.text.slice(at, sent.text.length - (line.length - at - 1))
        const found = await reader.locate(`  ${standIn}  `)
        expect(
          found.foreign.map((f) => f.kind),
          `${kind}: ${JSON.stringify(standIn)}`,
        ).toContain(kind)
        checked++
      }
    }
    expect(checked).toBeGreaterThan(kinds.length * 30)
  })
})
