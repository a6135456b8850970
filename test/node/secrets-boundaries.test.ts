/**
 * @module A secret is found whatever stands around it. Every high-confidence kind,
 * wrapped in random separators and containers (CSV and TSV cells, quotes, underscores, brackets,
 * URL-encoding, JSON escapes written out, Markdown and HTML table cells, `.env` lines, keyword-less
 * lists, line wraps), is found whole and substituted; a decimal fraction and a digit-dash join stay
 * what they are. Before the shared token boundary (src/plugins/secrets/detector.ts), a card or a
 * fødselsnummer right after a comma or an `_` was sent as it was.
 */
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  builtInDetectors,
  findSecrets,
  importStandInKey,
  StandInBook,
  type StandInKey,
} from '../../src/plugins/secrets'
import { GENERATORS, rng } from '../secrets/generate'

let key: StandInKey

beforeAll(async () => {
  key = await importStandInKey('a test secret of at least thirty-two bytes')
})

/** The generators of every high-confidence kind (a URL password is placed inside its URL). */
const HIGH = Object.keys(GENERATORS).filter(
  (name) =>
    !['aws-secret-access-key', 'cloudflare-api-token', 'se-personnummer', 'us-ssn'].includes(name),
)

/** Kinds whose alphabet holds `_` and `-` (base64url): an `_` or a `-` after them continues them. */
const RUNS_ON = new Set(['openai-key', 'anthropic-key', 'google-api-key', 'jwt', 'slack-token'])

/** A container: what it puts before and after the value (`$`), and whether it ends in `_`/`-`. */
const CONTAINERS: readonly string[] = [
  '17,Ola Nordmann,$,09/29', // a CSV row, the value after a comma and before one
  '$,17,Oslo',
  'id,name,value\r\n3,Kari,$\r\n4,Per,x',
  '1,"$",2',
  '17\tOla\t$\t2029', // TSV
  '"$"',
  "'$'",
  '`$`',
  '«$»',
  'CARD_$', // after an underscore
  'patient_no_$ ok',
  '[$]',
  '($)',
  '{$}',
  '<$>',
  '{"rows":["$"]}',
  'https://pay.example/x?ref=%3D$%26next', // URL-encoded `=` and `&` around it
  'q=a%2C$%2Cb',
  'note=pay%20$%20now',
  '{"csv":"id,value\\n3,$\\n4,x"}', // JSON escapes written out
  '{"line":"\\t$\\t"}',
  '{"line":"\\r\\n$"}',
  '{"line":"\\u0020$\\u0020"}',
  '| Kari | $ | paid |', // Markdown table
  '|$|',
  '<tr><td>Kari</td><td>$</td></tr>', // HTML table
  'SECRET_VALUE=$',
  'export SECRET_VALUE="$"',
  '- $',
  '3. $',
  '* $;',
  'a;$;b',
  'id:$',
  'see $.',
  'line one\n$\nline three',
  'line one\r\n$\r\n',
]

/** The URL a URL password stands in, as the container's value. */
const URL_OF = (password: string) => `postgres://app_user:${password}@db.internal:5432/app`

describe('token boundaries of the high-confidence detectors', () => {
  // Failed before the shared boundary: the card and the fødselsnummer right after a comma (every one
  // in a CSV row) or an `_` were not found; the IBAN of the same row was.
  it('should find a card and a fødselsnummer after a comma and after an underscore', () => {
    const card = GENERATORS['card-number']!(rng(3)).value.replace(/[ -]/g, '')
    const fnr = GENERATORS['no-fodselsnummer']!(rng(4)).value
    const iban = 'NO9386011117947'
    const rows = [
      `3,Kari Nordmann,${card},${fnr},${iban}`,
      `card_${card} fnr_${fnr}`,
      `{"rows":"3,${card}\\n4,${fnr}"}`,
      `ref=%3D${card}%2C${fnr}`,
    ]
    for (const row of rows) {
      const found = findSecrets(row, builtInDetectors()).map((s) => row.slice(s.start, s.end))
      expect(found, row).toContain(card)
      expect(found, row).toContain(fnr)
    }
  })

  it('should leave decimal fractions, digit-dash joins and longer numbers alone', () => {
    const card = '4242424242424242'
    const fnr = GENERATORS['no-fodselsnummer']!(rng(5)).value
    for (const value of [card, fnr]) {
      for (const text of [
        `0.${value}`,
        `${value}.5`,
        `2024-${value}`,
        `${value}-7`,
        `1${value}`,
        `${value}0`,
        `x${value}`,
        `${value}a`,
      ]) {
        expect(findSecrets(text, builtInDetectors()), text).toEqual([])
      }
    }
  })

  it('should find every high-confidence kind in any container, and substitute it (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...HIGH),
        fc.nat(),
        fc.array(fc.constantFrom(...CONTAINERS), { minLength: 1, maxLength: 3 }),
        async (name, seed, containers) => {
          const { kind, value } = GENERATORS[name]!(rng(seed + 1))
          const inner = kind === 'url-password' ? URL_OF(value) : value
          // Nested containers: the innermost is next to the value. An `_` or a `-` after a base64url
          // key would continue it; those containers are left out for them.
          const usable = containers.filter((c) => !(RUNS_ON.has(name) && /^\$[_-]/.test(c)))
          let text = inner
          for (const container of usable) text = container.replace('$', () => text)
          const offset = text.indexOf(inner) + (kind === 'url-password' ? inner.indexOf(value) : 0)
          const spans = findSecrets(text, builtInDetectors())
          expect(spans, text).toContainEqual({ kind, start: offset, end: offset + value.length })
          const book = await StandInBook.open(key, { requestId: `r${seed}`, tenant: 't' })
          const sent = await book.substitute(text)
          expect(sent.text.includes(value), sent.text).toBe(false)
          expect((await book.restore(sent.text)).text).toBe(text)
        },
      ),
      { numRuns: 600, seed: 45 },
    )
  })
})
