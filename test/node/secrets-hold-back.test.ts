import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  BASE62,
  builtInDetectors,
  importStandInKey,
  type Located,
  MAX_STAND_IN_LENGTH,
  operatorDetector,
  type SecretDetector,
  StandInBook,
  type StandInKey,
} from '../../src/plugins/secrets'
import { formingFrom } from '../../src/plugins/secrets/hold-back'
import { GENERATORS, rng } from '../secrets/generate'
import { endsOf, everyPosition } from '../secrets/splits'

/**
 * The hold-back as a property: a stream's release stage judges a growing text a window at a time —
 * stand-ins starting in [judged so far, formingFrom(text)), and at the end [judged, end) — and must
 * find exactly what one `book.locate(wholeText)` finds: this request's stand-ins with their values,
 * and other requests' with their payloads. Texts hold stand-ins of every kind, own and foreign,
 * among prose, code, digits, upper-case runs, long runs without whitespace and JSON-escaped text,
 * split at every position and at random.
 *
 * The regressions below are counterexamples this file found (fixed in 203602a): splits where the
 * windowed judgement missed or mis-read a stand-in the whole text got, and stand-ins the whole text
 * itself missed.
 */

const SECRET = 'a test secret of at least thirty-two bytes'
let key: StandInKey
let mine: StandInBook
let other: StandInBook
/** Stand-ins of every generated kind, three per kind: this request's and another request's. */
const pool = { own: [] as string[], foreign: [] as string[] }

/** The stand-in `book` gives the generator's secret in its line (the line's context matters). */
async function standInOf(book: StandInBook, name: string, r: () => number): Promise<string> {
  const { value, line } = GENERATORS[name]!(r)
  const [before, after] = line.split('$') as [string, string]
  const { text } = await book.substitute(before + value + after)
  return text.slice(before.length, text.length - after.length)
}

beforeAll(async () => {
  key = await importStandInKey(SECRET)
  mine = await StandInBook.open(key, { requestId: 'req-mine', tenant: 'acme' })
  other = await StandInBook.open(key, { requestId: 'req-other', tenant: 'globex' })
  const r = rng(20)
  for (const name of Object.keys(GENERATORS)) {
    for (let i = 0; i < 3; i++) {
      pool.own.push(await standInOf(mine, name, r))
      pool.foreign.push(await standInOf(other, name, r))
    }
  }
})

/**
 * What the release stage does (StandInCheck.judgeWindow): after each piece, judge from where the last
 * judgement ended to where a stand-in could still be forming; after the last, to the end.
 */
async function windowed(
  book: StandInBook,
  text: string,
  ends: readonly number[],
): Promise<Located> {
  // What the release stage holds back (src/release/stand-in-release.ts).
  const longest = book.longestCandidate
  const wide = book.recognisesPatterns
  const own: Located['own'] = []
  const foreign: Located['foreign'] = []
  let judged = 0
  for (const end of ends) {
    const seen = text.slice(0, end)
    const to = formingFrom(seen, longest, wide)
    if (to <= judged) continue
    const found = await book.locate(seen, judged, to)
    judged = to
    own.push(...found.own)
    foreign.push(...found.foreign)
  }
  const found = await book.locate(text, judged, text.length)
  own.push(...found.own)
  foreign.push(...found.foreign)
  return { own, foreign }
}

const byStart = <T extends { start: number; end: number }>(list: readonly T[]): T[] =>
  [...list].sort((a, b) => a.start - b.start || a.end - b.end)

/** Every split point: one character per piece. */

/** Both judgements of `text`, whole and split at `ends` (the last piece ends at the text's end). */
async function expectSame(book: StandInBook, text: string, ends: readonly number[]): Promise<void> {
  const whole = await book.locate(text)
  const split = await windowed(book, text, ends)
  expect(byStart(split.own), JSON.stringify(text)).toEqual(byStart(whole.own))
  expect(byStart(split.foreign), JSON.stringify(text)).toEqual(byStart(whole.foreign))
}

/** Text around the stand-ins: each a kind of context a candidate pattern reads. */
const SURROUNDINGS: readonly ((n: number) => string)[] = [
  () => 'The quick brown fox jumps over the lazy dog. ',
  () => 'const token = process.env.TOKEN // why: read once\n',
  (n) => `${n * 7919} `,
  () => '1234 5678 ',
  () => '1111 2222 3333 4444 5555 ',
  () => 'ABCD EFGH IJKL ',
  () => 'NOTE: THE VALUE IS ',
  () => ' ',
  () => '\n',
  () => '\t',
  () => '.5 ',
  () => '.',
  () => '-',
  () => ', ',
  () => '"',
  () => 'x',
  () => 'Z',
  () => '7',
  () => '_',
  (n) => 'WORD 1234 '.repeat(1 + (n % 30)),
  (n) => 'aGVsbG8gd29ybGQ'.repeat(1 + (n % 20)),
  (n) => '{"a":1,"b":[2,3],"c":"x"}'.repeat(1 + (n % 12)),
  () => '-----BEGIN',
  () => '-----END PRIVATE KEY-----',
]

/** A text of stand-ins (own or foreign) among surroundings, JSON-escaped one time in five. */
const answer = fc
  .record({
    parts: fc.array(
      fc.record({
        around: fc.array(fc.nat({ max: 10_000 }), { maxLength: 3 }),
        own: fc.boolean(),
        which: fc.nat(),
      }),
      { minLength: 1, maxLength: 8 },
    ),
    tail: fc.array(fc.nat({ max: 10_000 }), { maxLength: 2 }),
    json: fc.nat({ max: 4 }),
  })
  .map(({ parts, tail, json }) => {
    const around = (ns: number[]) =>
      ns.map((n) => SURROUNDINGS[n % SURROUNDINGS.length]!(n)).join('')
    let text = ''
    for (const part of parts) {
      const list = part.own ? pool.own : pool.foreign
      text += around(part.around) + list[part.which % list.length]!
    }
    text += around(tail)
    return json === 0 ? JSON.stringify({ content: text }).slice(1, -1) : text
  })

/** Random piece lengths (1 to 48 characters), as an upstream's events might cut the text. */
const pieces = fc.array(fc.integer({ min: 1, max: 48 }), { minLength: 1, maxLength: 200 })

describe('formingFrom', () => {
  it('should hold back the last word of prose, and nothing of a text ending in a newline', () => {
    expect(formingFrom('the key is sk-proj-Ab', MAX_STAND_IN_LENGTH, false)).toBe(11)
    expect(formingFrom('Hello there, my friend', MAX_STAND_IN_LENGTH, false)).toBe(16)
    expect(formingFrom('all done\n', MAX_STAND_IN_LENGTH, false)).toBe(9)
    expect(formingFrom('', MAX_STAND_IN_LENGTH, false)).toBe(0)
  })

  it('should hold back a run of digit groups and upper case, separators included', () => {
    // The space before the card is a group character: a card may be preceded by more groups.
    expect(formingFrom('card 4123 4567 89', MAX_STAND_IN_LENGTH, false)).toBe(4)
    expect(formingFrom('IBAN NO93 8601', MAX_STAND_IN_LENGTH, false)).toBe(0)
    expect(formingFrom('iban: NO93 8601 1117 9', MAX_STAND_IN_LENGTH, false)).toBe(5)
    expect(formingFrom('total 1,234.', MAX_STAND_IN_LENGTH, false)).toBe(5)
  })

  it('should hold back from the last -----BEGIN while a PEM block may still be forming', () => {
    const pem = 'key:\n-----BEGIN RSA PRIVATE KEY-----\nAAAA'
    expect(formingFrom(pem, MAX_STAND_IN_LENGTH, false)).toBe(5)
    const far = `-----BEGIN RSA PRIVATE KEY-----\n${'a b '.repeat(80)}`
    // More than a stand-in's length after it: a block from there is complete (or none).
    expect(formingFrom(far, MAX_STAND_IN_LENGTH, false)).toBe(far.length - 1)
  })

  it('should never hold back more than the longest candidate, and all of it when wide', () => {
    const run = 'a'.repeat(400)
    expect(formingFrom(run, MAX_STAND_IN_LENGTH, false)).toBe(400 - (MAX_STAND_IN_LENGTH - 1))
    expect(formingFrom(run, 300, false)).toBe(101)
    expect(formingFrom('short text. ', MAX_STAND_IN_LENGTH, true)).toBe(0)
    const prose = 'word '.repeat(100)
    expect(formingFrom(prose, MAX_STAND_IN_LENGTH, true)).toBe(500 - (MAX_STAND_IN_LENGTH - 1))
  })
})

describe('windowed stand-in judgement', () => {
  it('should find in every own and foreign stand-in of the pool, alone, what the whole text does', async () => {
    for (const standIn of [...pool.own, ...pool.foreign]) {
      const text = `Here it is: ${standIn}. Done.`
      await expectSame(mine, text, everyPosition(text))
    }
  })

  // Fixed seeds, so a run is reproducible; seeds 1–6 (1,500 and 4,000 runs) pass too. Before
  // 203602a, seed 3 found the digit-group counterexample kept below.
  it('should find exactly what one locate finds, split at every position', async () => {
    await fc.assert(
      fc.asyncProperty(answer, async (text) => {
        await expectSame(mine, text, everyPosition(text))
      }),
      { numRuns: 250, seed: 20 },
    )
  })

  it('should find exactly what one locate finds, split at random', async () => {
    await fc.assert(
      fc.asyncProperty(answer, pieces, async (text, lengths) => {
        await expectSame(mine, text, endsOf(text, lengths))
      }),
      { numRuns: 1000, seed: 20 },
    )
  })

  it('should find every stand-in the same way when the kinds include an operator pattern', async () => {
    const detectors: SecretDetector[] = [
      ...builtInDetectors(),
      operatorDetector({ name: 'acme-account', pattern: 'ACME-[0-9]{8}-[A-Z]{4}' }),
    ]
    const a = await StandInBook.open(key, { requestId: 'op-a', tenant: 'acme' }, detectors)
    const b = await StandInBook.open(key, { requestId: 'op-b', tenant: 'globex' }, detectors)
    expect(a.recognisesPatterns).toBe(true)
    const mineOp = await a.substitute('account ACME-12345678-ABCD ok')
    const theirs = await b.substitute('account ACME-87654321-WXYZ ok')
    const text = `${mineOp.text} and ${theirs.text}; then ${pool.own[0]} and ${pool.foreign[3]}. ${'LONG RUN 42 '.repeat(30)}`
    await expectSame(a, text, everyPosition(text))
    const found = await a.locate(text)
    expect(found.own.map((o) => o.value)).toContain('ACME-12345678-ABCD')
    expect(found.foreign.map((f) => f.kind)).toContain('acme-account')
  })
})

describe('what books under one policy share', () => {
  // A book's kinds are derived once per (detectors, recognised) pair of lists: books that share the
  // substituted list but recognise different kinds must each keep their own, in either order.
  it('should keep the kinds of each recognised list apart when the substituted list is the same', async () => {
    const detectors = builtInDetectors()
    const acme = [operatorDetector({ name: 'acme-account', pattern: 'ACME-[0-9]{8}-[A-Z]{4}' })]
    const plain = await StandInBook.open(key, { requestId: 'k-1', tenant: 'acme' }, detectors, [])
    const wide = await StandInBook.open(key, { requestId: 'k-2', tenant: 'acme' }, detectors, acme)
    const again = await StandInBook.open(key, { requestId: 'k-3', tenant: 'acme' }, detectors, acme)
    const issuer = await StandInBook.open(key, { requestId: 'k-4', tenant: 'globex' }, acme)
    expect([plain.recognisesPatterns, wide.recognisesPatterns, again.recognisesPatterns]).toEqual([
      false,
      true,
      true,
    ])
    const { text: leaked } = await issuer.substitute('account ACME-87654321-WXYZ ok')
    const kinds = async (book: StandInBook) =>
      (await book.locate(leaked)).foreign.map((f) => f.kind)
    expect(await kinds(plain)).toEqual([])
    expect(await kinds(wide)).toEqual(['acme-account'])
    expect(await kinds(again)).toEqual(['acme-account'])
  })
})

describe('windowed stand-in judgement: regressions', () => {
  // A Stripe key may be 8 + 247 characters and its stand-in keeps its length; formingFrom allowed for
  // 234 only: once 234 characters of a longer foreign stand-in had arrived, the window passed its
  // start, its candidate was read truncated (the look-ahead passes at the end of the text) and
  // failed its MAC. MAX_STAND_IN_LENGTH is 255 now.
  it('should find a foreign Stripe stand-in of the longest length, split at every position', async () => {
    const r = rng(3)
    let longest = 'sk_live_'
    for (let i = 0; i < 247; i++) longest += BASE62[Math.floor(r() * 62)]
    const { text: sent } = await other.substitute(`const stripe = new Stripe('${longest}')`)
    const standIn = sent.slice(sent.indexOf('sk_'), sent.lastIndexOf("'"))
    expect(standIn).toHaveLength(MAX_STAND_IN_LENGTH)
    const text = `Here: ${standIn} done.`
    expect((await mine.locate(text)).foreign).toHaveLength(1)
    await expectSame(mine, text, everyPosition(text))
  })

  // A run of more than the hold-back of group characters makes formingFrom return its bound, which
  // may fall inside a card candidate of the whole-text scan. Each kind was scanned without overlap
  // from the window's start, so a window starting inside the whole scan's candidate
  // "1111 2222 3333 4444 5555" read "2222 3333 4444 5555 F1" instead and swallowed the first group
  // of the foreign card F. Every token start is a candidate start now.
  it('should find a foreign card after digit groups in a long upper-case run (one split)', async () => {
    const r = rng(11)
    let card = ''
    while (!/^\d{4} \d{4} \d{4} \d{4}$/.test(card)) card = await standInOf(other, 'card-number', r)
    const filler = 'THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG 0123 AND '.repeat(6)
    const text = `table:\n1111 2222 3333 4444 5555 ${card} ${filler}end`
    expect((await mine.locate(text)).foreign.map((f) => f.kind)).toEqual(['card-number'])
    const p = text.indexOf('2222')
    // The first piece ends where the bound is "2222"; the second takes the card whole.
    const bound = p + MAX_STAND_IN_LENGTH - 1
    await expectSame(mine, text, [bound, bound + 40])
    await expectSame(mine, text, everyPosition(text))
  })

  // The same cause the other way round (found by the property above, seed 3): the whole scan's
  // candidate "1234 5678 F1 F2 F3" swallowed three groups of the foreign card F, while split at
  // every position a window started at F1 and read F whole.
  it('should find a foreign card after digit groups whole and split at every position', async () => {
    const r = rng(11)
    let card = ''
    while (!/^\d{4} \d{4} \d{4} \d{4}$/.test(card)) card = await standInOf(other, 'card-number', r)
    const text = `1234 5678 ${card} ${'WORD 1234 '.repeat(30)}`
    expect((await mine.locate(text)).foreign).toHaveLength(1)
    await expectSame(mine, text, everyPosition(text))
  })

  // An own se-personnummer stand-in YYMMDD-NNNC written by the model in the 12-digit form (a
  // century "19" before it), then a long run without whitespace. A window [13, 14) saw no exact hit
  // (the exact one starts at 15, past the window) and kept the 12-digit candidate at 13–26, whose
  // payload (the same nine digits) verifies as this request's; the next window reported the exact
  // one at 15–26 too, and the stream wrote the value twice. Exact hits past the window bound its
  // candidates now.
  it('should read an own personnummer once when a window ends between "19" and it', async () => {
    const r = rng(5)
    let standIn = ''
    while (!/^\d{6}-\d{4}$/.test(standIn)) standIn = await standInOf(mine, 'se-personnummer', r)
    const text = `Personnummer 19${standIn},${'{"a":[1,2]}'.repeat(30)}`
    expect((await mine.locate(text)).own.map((o) => [o.start, o.end])).toEqual([[15, 26]])
    for (let end = 1; end < text.length; end++) await expectSame(mine, text, [end, text.length])
  })
})

describe('windowed stand-in judgement: long operator stand-ins', () => {
  // Operator patterns may match far more than MAX_STAND_IN_LENGTH (quantifiers up to 256 each). Wide
  // mode held back max(this book's longest stand-in, MAX_STAND_IN_LENGTH) − 1 characters, so a
  // foreign operator stand-in longer than that was read truncated once the bound passed its start.
  // The hold-back is now the longest match any recognised pattern can make (`longestCandidate`).
  it('should find a foreign operator stand-in longer than MAX_STAND_IN_LENGTH, split', async () => {
    const detectors = [
      ...builtInDetectors(),
      operatorDetector({ name: 'long-id', pattern: 'LID[A-Z]{256}' }),
    ]
    const a = await StandInBook.open(key, { requestId: 'long-a', tenant: 'acme' }, detectors)
    const b = await StandInBook.open(key, { requestId: 'long-b', tenant: 'globex' }, detectors)
    const id = `LID${'QWERTYUIOPASDFGHJKLZXCVBNM'.repeat(10).slice(0, 256)}`
    const { text: sent } = await b.substitute(`id ${id} x`)
    const standIn = sent.slice(3, 3 + id.length)
    expect(standIn.length).toBeGreaterThan(MAX_STAND_IN_LENGTH)
    const text = `id ${standIn} ok`
    expect((await a.locate(text)).foreign).toHaveLength(1)
    await expectSame(a, text, everyPosition(text))
  })
})

describe('whole-text locate: foreign stand-ins joined to look-alike text', () => {
  // The candidate patterns are greedy and a failed candidate used to hide what starts inside it, so
  // a stand-in joined to look-alike text was never a candidate itself: a leak with no quarantine.
  let card = ''
  let iban = ''
  beforeAll(async () => {
    const r = rng(11)
    while (!/^\d{4} \d{4} \d{4} \d{4}$/.test(card)) card = await standInOf(other, 'card-number', r)
    while (!iban.includes(' ')) iban = await standInOf(other, 'iban', r)
  })

  it('should find them with prose around', async () => {
    expect((await mine.locate(`Card ${card}, ok`)).foreign).toHaveLength(1)
    expect((await mine.locate(`IBAN ${iban} the end`)).foreign).toHaveLength(1)
  })

  it('should find a foreign IBAN followed by an upper-case word', async () => {
    expect((await mine.locate(`IBAN ${iban} THE END`)).foreign).toHaveLength(1)
  })

  it('should find a foreign IBAN without spaces followed by " OK"', async () => {
    expect((await mine.locate(`IBAN ${iban.replace(/ /g, '')} OK`)).foreign).toHaveLength(1)
  })

  it('should find a foreign card after three digit groups, and before another', async () => {
    expect((await mine.locate(`Codes 1111 2222 3333 ${card} ok`)).foreign).toHaveLength(1)
    expect((await mine.locate(`Codes ${card} 9999 ok`)).foreign).toHaveLength(1)
  })
})
