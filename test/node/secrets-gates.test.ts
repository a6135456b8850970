import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  importStandInKey,
  SHAPES,
  StandInBook,
  type StandInKey,
  type StandInShape,
} from '../../src/plugins/secrets'
import { runFacts } from '../../src/plugins/secrets/stand-in-shapes'
import { GENERATORS, rng } from '../secrets/generate'

/**
 * The gates that spare a text the patterns it cannot match: each built-in kind claims what every
 * candidate of it holds (a run of key characters, a digit). A claim one character too strong would
 * let a stand-in of that kind pass unseen wherever nothing else lengthens the text's runs, so each is
 * checked against its own pattern's matches: minted stand-ins, their look-alikes and random text.
 */

const SECRET = 'a test secret of at least thirty-two bytes'
let key: StandInKey
beforeAll(async () => {
  key = await importStandInKey(SECRET)
})

/**
 * The characters a candidate's run is counted in, as runFacts documents them
 * (src/plugins/secrets/stand-in-shapes.ts): every character a built-in kind's pattern matches outside a PEM
 * block's spaces, an IBAN's or a card's group separators and a JWT's dots.
 */
const RUN_CHARACTERS = /[A-Za-z0-9_+/-]/

/** The reference: the longest run of RUN_CHARACTERS by regular expression, and any digit. */
function reference(text: string): { longestRun: number; digit: boolean } {
  const runs = text.match(new RegExp(`${RUN_CHARACTERS.source}+`, 'g')) ?? []
  return { longestRun: Math.max(0, ...runs.map((r) => r.length)), digit: /[0-9]/.test(text) }
}

function passes(gate: StandInShape['gate'], text: string): boolean {
  const facts = runFacts(text)
  return gate === undefined || (gate.minRun <= facts.longestRun && (!gate.digit || facts.digit))
}

/** Every match of `kind`'s candidate pattern in `text`, at every start (as the book tries them). */
function matches(kind: string, text: string): string[] {
  const re = new RegExp(SHAPES[kind]!.candidates.source, 'g')
  const out: string[] = []
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    out.push(m[0])
    re.lastIndex = m.index + 1
  }
  return out
}

const KEYISH = 'aZ09_-+/. \n'
const keyish = fc
  .array(fc.constantFrom(...'abcXYZ0123456789_-+/.= :\n\\'), { maxLength: 300 })
  .map((cs) => cs.join(''))

describe('runFacts', () => {
  it('agrees with the regular expression it stands for, from any offset', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), keyish),
        fc.nat(),
        (text, at) => {
          const from = text.length === 0 ? 0 : at % (text.length + 1)
          const truth = reference(text.slice(from))
          expect(runFacts(text, from)).toEqual(truth)
          // Told what suffices, it may stop early: only once a digit and a run that long are seen.
          const enough = (at % 40) + 1
          const early = runFacts(text, from, enough)
          expect(early.digit).toBe(truth.digit)
          if (early.longestRun !== truth.longestRun) {
            expect(
              early.digit && early.longestRun >= enough && early.longestRun < truth.longestRun,
            ).toBe(true)
          }
        },
      ),
      { numRuns: 500 },
    )
    expect(KEYISH.split('').filter((c) => runFacts(c).longestRun === 1)).toEqual([
      'a',
      'Z',
      '0',
      '9',
      '_',
      '-',
      '+',
      '/',
    ])
  })
})

describe('candidate gates', () => {
  it('every built-in kind has one', () => {
    for (const [kind, shape] of Object.entries(SHAPES)) expect(shape.gate, kind).toBeDefined()
  })

  it("every minted stand-in, and every match of a kind's pattern, passes that kind's gate", async () => {
    let checked = 0
    for (const [name, generate] of Object.entries(GENERATORS)) {
      for (let seed = 1; seed <= 40; seed++) {
        const { kind, value, line } = generate(rng(seed * 7919 + name.length))
        const book = await StandInBook.open(key, { requestId: `r-${seed}`, tenant: 'acme' })
        const sent = await book.substitute(line.replace('$', value))
        // The stand-in, and the secret itself (its kind's candidates are shaped like the secrets).
        for (const text of [sent.text, value]) {
          for (const m of matches(kind, text)) {
            expect(passes(SHAPES[kind]!.gate, m), `${kind}: ${m}`).toBe(true)
            checked++
          }
        }
      }
    }
    // Each kind's stand-ins were found by its pattern at least once per seed.
    expect(checked).toBeGreaterThanOrEqual(Object.keys(GENERATORS).length * 40)
  })

  it('holds for any match in random key-like text', () => {
    fc.assert(
      fc.property(keyish, (text) => {
        for (const [kind, shape] of Object.entries(SHAPES)) {
          for (const m of matches(kind, text))
            expect(passes(shape.gate, m), `${kind}: ${m}`).toBe(true)
        }
      }),
      { numRuns: 300 },
    )
  })

  it("still finds another request's stand-in alone in prose, at the window's first character", async () => {
    // The adversary's best case for a gate: nothing else in the text lengthens its runs or adds a
    // digit, and the stand-in starts exactly where a stream's window does.
    for (const [name, generate] of Object.entries(GENERATORS)) {
      const { kind, value, line } = generate(rng(101 + name.length))
      const minter = await StandInBook.open(key, { requestId: 'minter', tenant: 'other' })
      const sent = await minter.substitute(line.replace('$', value))
      const standIn = sent.text.slice(
        line.indexOf('$'),
        sent.text.length - (line.length - line.indexOf('$') - 1),
      )
      const prose = 'the answer is: '
      const text = `${prose}${standIn} and that is all.`
      const reader = await StandInBook.open(key, { requestId: 'reader', tenant: 'acme' })
      const found = await reader.locate(text, prose.length)
      expect(
        found.foreign.map((f) => [f.kind, text.slice(f.start, f.end)]),
        name,
      ).toContainEqual([kind, standIn])
    }
  })
})
