import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { prng } from '../../sim/random'
import {
  ContentWatch,
  type ContentWatchOptions,
  FINGERPRINT_DEFAULTS,
  type FingerprintKey,
  FingerprintTable,
  holdBackUnits,
  minimumSpan,
  printPrompt,
  quietHoldBackUnits,
  scanAnswer,
  units,
} from '../../src/plugins/foreign-content'
import { span, testFingerprintKey } from '../support/fingerprint-fixtures'

const MODEL = '@cf/zai-org/glm-5.3'
const PARAMS = FINGERPRINT_DEFAULTS
const SPAN = minimumSpan(PARAMS)
const NOW = 1_000_000

let key: FingerprintKey
beforeAll(async () => {
  key = await testFingerprintKey('x')
})

/** A table where each tenant sent the given texts. */
function tableOf(sent: Record<string, string[]>): FingerprintTable {
  const table = new FingerprintTable(FINGERPRINT_DEFAULTS)
  for (const [tenant, texts] of Object.entries(sent)) {
    table.add(MODEL, tenant, printPrompt(key, texts, PARAMS).selected, NOW - 60_000)
  }
  return table
}

function options(table: FingerprintTable, tenant: string, own: string[] = []): ContentWatchOptions {
  return {
    key,
    table,
    model: MODEL,
    tenant,
    own: printPrompt(key, own, PARAMS),
    now: NOW,
    params: PARAMS,
  }
}

const secret = english(11, 6000)
const honest = english(12, 4000)

describe('foreign-content watch', () => {
  it('should name the tenant whose prompt an answer quotes, whole or streamed', () => {
    const table = tableOf({ acme: [secret] })
    const leaked = span(secret, 40, SPAN)
    const answer = `${honest.slice(0, 900)} “${leaked.toUpperCase()}” ${honest.slice(900, 1500)}`
    const whole = scanAnswer(options(table, 'globex'), { content: answer })
    expect(whole).toMatchObject({ source: 'acme', channel: 'content' })
    expect(whole!.run).toBeGreaterThanOrEqual(PARAMS.k)
    const watch = new ContentWatch(options(table, 'globex'))
    for (let i = 0; i < answer.length; i += 3) watch.push('content', answer.slice(i, i + 3), false)
    watch.push('content', '', true)
    expect(watch.evidence()).toEqual(whole)
    // In a tool call's JSON arguments, escaped, too.
    const args = JSON.stringify({ note: `${honest.slice(0, 300)}\n"${leaked}"` })
    expect(scanAnswer(options(table, 'globex'), { 'tool:0': args })?.source).toBe('acme')
  })

  it('should not count the request’s own prompt, common text or the same tenant’s text', () => {
    const leaked = span(secret, 40, SPAN + 20)
    const answer = `${honest.slice(0, 900)} ${leaked} ${honest.slice(900, 1500)}`
    const table = tableOf({ acme: [secret] })
    expect(
      scanAnswer(options(table, 'globex', ['Summarise:', leaked]), { content: answer }),
    ).toBeUndefined()
    expect(scanAnswer(options(table, 'acme'), { content: answer })).toBeUndefined()
    const shared = tableOf({ acme: [secret], initech: [`Licence: ${leaked}`] })
    expect(scanAnswer(options(shared, 'globex'), { content: answer })).toBeUndefined()
    // Honest text of its own: nothing at all.
    expect(new ContentWatch(options(table, 'globex')).strongest()).toBeUndefined()
    expect(scanAnswer(options(table, 'globex'), { content: honest })).toBeUndefined()
  })

  it('should always find a quoted span of the stated minimum (random texts and spans)', () => {
    const next = prng(7)
    for (let trial = 0; trial < 150; trial++) {
      const source = english(1000 + trial, 3000)
      const table = tableOf({ acme: [source] })
      const count = units(source).length
      const length = SPAN + Math.floor(next() * 10)
      const first = Math.floor(next() * (count - length))
      const host = english(5000 + trial, 1500)
      const cut = host.indexOf(' ', Math.floor(next() * 1400))
      const answer = `${host.slice(0, cut)} ${span(source, first, length)} ${host.slice(cut)}`
      const found = scanAnswer(options(table, `reader${trial}`), { reasoning: answer })
      expect(found?.source, `trial ${trial}`).toBe('acme')
    }
  })

  it('should share a fingerprint on any span of w + n − 1 units (the winnowing guarantee)', () => {
    const next = prng(8)
    const params = { ...PARAMS, k: 1 }
    for (let trial = 0; trial < 150; trial++) {
      const source = english(2000 + trial, 2000)
      const table = new FingerprintTable()
      table.add(MODEL, 'acme', printPrompt(key, [source], params).selected, NOW)
      const length = params.w + params.n - 1
      const first = Math.floor(next() * (units(source).length - length))
      const answer = `${english(3000 + trial, 400)} ${span(source, first, length)} ${english(4000 + trial, 400)}`
      const watch = new ContentWatch({ ...options(table, 'b'), params })
      watch.push('content', answer, true)
      expect(watch.evidence()?.source, `trial ${trial}`).toBe('acme')
    }
  })

  it('should hold back every unit of a leaked span until its evidence is reached', () => {
    const next = prng(9)
    for (let trial = 0; trial < 200; trial++) {
      const source = english(6000 + trial, 3000)
      const table = tableOf({ acme: [source] })
      const length = SPAN + Math.floor(next() * 5)
      const first = Math.floor(next() * (units(source).length - length))
      // Half the trials: fragments of the source too short for evidence (each a whole window or
      // less) in the clean text before the span, so the hold switches between its two lengths.
      const fragments =
        trial % 2 === 0
          ? []
          : Array.from({ length: 1 + Math.floor(next() * 3) }, () => {
              const size = 4 + Math.floor(next() * 9)
              return span(source, Math.floor(next() * (units(source).length - size)), size)
            })
      const prefix = `${[english(7000 + trial, 200 + Math.floor(next() * 800)), ...fragments.map((f, i) => `${f} ${english(7500 + trial * 7 + i, 40 + Math.floor(next() * 200))}`)].join(' ')} `
      const answer = `${prefix}${span(source, first, length)} ${english(8000 + trial, 500)}`
      const watch = new ContentWatch(options(table, 'b'))
      let released = 0
      for (let at = 0; at < answer.length && !watch.evidence(); ) {
        const size = 1 + Math.floor(next() * 15)
        watch.push('content', answer.slice(at, at + size), false)
        at += size
        if (watch.evidence()) break
        const safe = watch.safeFrom('content')
        expect(safe).toBeGreaterThanOrEqual(released) // never takes back what was released
        expect(safe, `trial ${trial}`).toBeLessThanOrEqual(prefix.length)
        released = safe
      }
      expect(watch.evidence()?.source).toBe('acme')
    }
  })

  it('should release everything once final, and hold back quietHoldBackUnits units while nothing matched', () => {
    const watch = new ContentWatch(options(tableOf({}), 'b'))
    watch.push('content', honest.slice(0, 2000), false)
    const u = units(honest.slice(0, 2000))
    const last = u[u.length - 1]!
    // The last unit may still grow (no separator after it yet): it is open, not complete.
    const open = last.end === 2000 ? 1 : 0
    expect(quietHoldBackUnits(PARAMS)).toBe(9)
    expect(watch.safeFrom('content')).toBe(u[u.length - open - quietHoldBackUnits(PARAMS)]!.start)
    watch.push('content', '', true)
    expect(watch.safeFrom('content')).toBe(2000)
    expect(watch.safeFrom('reasoning')).toBe(0)
  })

  it('should hold back holdBackUnits units while any of the last ones matched another tenant', () => {
    // Twelve units of acme's prompt (a whole window: it matches, but is no evidence), then ours.
    const quoted = span(secret, 40, 12)
    const tail = english(13, 400)
    const answer = `${english(14, 300)} ${quoted} ${tail}`
    const table = tableOf({ acme: [secret] })
    const u = units(answer)
    const quotedEnd = answer.indexOf(quoted) + quoted.length
    const after = u.findIndex((unit) => unit.start >= quotedEnd)
    // Read 3 units past the quote: its matches are among the last holdBackUnits units.
    const cut = u[after + 3]!.start
    const watch = new ContentWatch(options(table, 'b'))
    watch.push('content', answer.slice(0, cut), false)
    expect(watch.foreignEnd('content')).toBeGreaterThan(0)
    expect(watch.evidence()).toBeUndefined()
    const complete = u.filter((unit) => unit.end < cut).length
    expect(watch.safeFrom('content')).toBe(u[complete - holdBackUnits(PARAMS)]!.start)
    // Once its last match is holdBackUnits units back, the short hold applies again.
    const later = u[after + holdBackUnits(PARAMS) - 1]!.start
    watch.push('content', answer.slice(cut, later), false)
    const completeLater = u.filter((unit) => unit.end < later).length
    expect(watch.safeFrom('content')).toBe(u[completeLater - quietHoldBackUnits(PARAMS)]!.start)
  })
})

describe('foreign-content watch against a tenant that stuffs its prompts', () => {
  const SHORT = [
    'Sure, here is a summary of the main points.',
    "Here's an example that demonstrates the basic idea.",
    'Let me explain this in more detail below.',
    'I hope this helps!',
    'Let me know if you have any questions.',
    'Great question!',
  ]
  const LONG = 'It is important to note that the results may vary depending on your setup.'

  it('should not flag ordinary answers for phrases under 10 units, however often they were stuffed', () => {
    const next = prng(10)
    const words = units(honest).map((u) => u.text)
    // Every phrase in 300 contexts, with words of the answers around it: all its shingles are stored.
    const stuffed = Array.from({ length: 300 }, () =>
      [...SHORT, LONG].map((p) => `${words[Math.floor(next() * words.length)]} ${p}`).join(' '),
    )
    const table = tableOf({ mallory: stuffed })
    let flagged = 0
    for (let i = 0; i < 200; i++) {
      const host = english(20_000 + i, 1200)
      const parts = [0, 1, 2].map(() => SHORT[Math.floor(next() * SHORT.length)]!)
      const answer = `${parts[0]} ${host.slice(0, 600)} ${parts[1]} ${host.slice(600)} ${parts[2]}`
      if (scanAnswer(options(table, `victim${i}`), { content: answer })) flagged++
    }
    expect(flagged).toBe(0)
    // The stated limit: a span of minimumSpan units the stuffer predicted verbatim is indistinguishable
    // from a leak of its prompt (docs/fingerprints.md measures how often shorter sentences flag).
    const predicted = span(stuffed[0]!, 0, SPAN)
    const answer = `${honest.slice(0, 500)} ${predicted}`
    expect(scanAnswer(options(table, 'victim'), { content: answer })?.source).toBe('mallory')
  })
})

/**
 * Templated private text: exported rows, logs and forms whose words are one template shared by many
 * senders (so common in the table) and whose values — ids, amounts, names, keys — are each sender's.
 * A quote of it is a run of the values' selections with nothing but common words between them.
 */
describe('foreign-content watch on templated private text', () => {
  type Kind = 'rows' | 'logs' | 'forms' | 'sparse'
  const NAMES = ['Ingrid Dahl', 'Omar Haddad', 'Mei Lin', 'Lars Berg', 'Ana Souza', 'Ravi Nair']
  /** One record of a template, with the sender's values drawn from `next`. */
  const record = (kind: Kind, next: () => number, filler: string): string => {
    const id = () =>
      Math.floor(next() * 36 ** 8)
        .toString(36)
        .padStart(8, '0')
    const amount = () => (next() * 100_000).toFixed(2)
    const name = () => NAMES[Math.floor(next() * NAMES.length)]!
    switch (kind) {
      case 'rows':
        return `${id()},${name()},${amount()},EUR,active,${id()}\n`
      case 'logs':
        return `2026-09-01T10:${id().slice(0, 2)}Z INFO request ${id()} user ${id()} status 200 in ${amount()} ms\n`
      case 'forms':
        return `Policy number: ${id()}. Insured: ${name()}. Sum insured: ${amount()} EUR. Claim ref ${id()}.\n`
      case 'sparse':
        // A unique record id every ~200 words of the shared template text.
        return `Record ${id()}. ${filler}\n`
    }
  }
  const FILLER = english(31, 1_200)
  /** Each tenant's export: the same template, its own values. */
  const exportOf = (kind: Kind, seed: number, records: number) => {
    const next = prng(seed)
    return Array.from({ length: records }, () => record(kind, next, FILLER)).join('')
  }
  const KINDS: Kind[] = ['rows', 'logs', 'forms', 'sparse']

  it('should withhold a quote of 30 units of dense templated text, or of 6 sparse ids, whole or streamed', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...KINDS),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 1, max: 40 }),
        (kind, seed, where, extra, chunk) => {
          const records = kind === 'sparse' ? 12 : 40
          const docs = [0, 1, 2].map((i) => exportOf(kind, seed * 3 + i, records))
          const table = tableOf({ acme: [docs[0]!], globex: [docs[1]!], initech: [docs[2]!] })
          const u = units(docs[0]!)
          // Sparse: from one record's id to the sixth id after it; dense: 30 units or more.
          const starts = u.flatMap((unit, i) => (unit.text === 'record' ? [i + 1] : []))
          const length = kind === 'sparse' ? starts[5]! - starts[0]! + 1 + extra : SPAN + extra
          const first =
            kind === 'sparse'
              ? starts[Math.floor(where * (starts.length - 6))]!
              : Math.floor(where * (u.length - length))
          const quote = span(docs[0]!, first, length)
          const answer = `${english(seed, 300)} “${quote}” ${english(seed + 1, 300)}`
          expect(scanAnswer(options(table, 'umbrella'), { content: answer })?.source).toBe('acme')
          // Streamed: the evidence comes before any of acme's values in the quote is released but
          // its first, which may leave before anything it is in is attributed (docs/fingerprints.md).
          const values = new Set(
            units(quote)
              .map((unit) => unit.text)
              .filter((t) => /\d/.test(t))
              .slice(1),
          )
          const watch = new ContentWatch(options(table, 'umbrella'))
          let released = ''
          for (let at = 0; at < answer.length && !watch.evidence(); at += chunk) {
            watch.push('content', answer.slice(at, at + chunk), false)
            if (!watch.evidence()) released = answer.slice(0, watch.safeFrom('content'))
          }
          if (!watch.evidence()) watch.push('content', '', true)
          expect(watch.evidence()?.source).toBe('acme')
          const out = units(released.slice(released.indexOf('“') + 1)).map((unit) => unit.text)
          expect(out.filter((t) => values.has(t))).toEqual([])
        },
      ),
      { numRuns: 120, seed: 45 },
    )
  })

  it('should not flag the template itself, nor the template filled with the reader’s own values', () => {
    for (const kind of KINDS) {
      const docs = [0, 1, 2].map((i) => exportOf(kind, 900 + i, 30))
      const table = tableOf({ acme: [docs[0]!], globex: [docs[1]!], initech: [docs[2]!] })
      const own = exportOf(kind, 990, 30)
      const ownAnswer = `Here is your export:\n${own.slice(0, 1_500)}`
      expect(scanAnswer(options(table, 'umbrella', [own]), { content: ownAnswer }), kind).toBe(
        undefined,
      )
      // The words every sender shares, without anyone's values: common text, never evidence.
      const template = kind === 'sparse' ? FILLER : docs[0]!.replace(/[^\s,.:]*\d[^\s,.:]*/g, '')
      expect(scanAnswer(options(table, 'umbrella'), { content: template }), kind).toBeUndefined()
    }
  })

  it('should not join a stuffer’s phrases across the reader’s own words', () => {
    // Mallory stuffs phrases a model writes; an honest answer uses two of them with its own text
    // between: the text between ends the run, so the phrases never add up to evidence.
    const phrases = [
      'Please let me know if you have any questions or need any further assistance',
      'I hope this helps you get started with the project and the tools it needs',
    ]
    const table = tableOf({ mallory: Array.from({ length: 50 }, () => phrases.join(' ')) })
    for (let i = 0; i < 50; i++) {
      const answer = `${phrases[0]}. ${english(40_000 + i, 200)} ${phrases[1]}.`
      expect(scanAnswer(options(table, `reader${i}`), { content: answer }), `answer ${i}`).toBe(
        undefined,
      )
    }
  })
})
