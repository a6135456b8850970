import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { importCanaryKey, tenantTag } from '../../src/core/canary/token'
import {
  builtInDetectors,
  findSecrets,
  importStandInKey,
  inspectStandIn,
  MAX_STAND_IN_LENGTH,
  operatorDetector,
  SHAPES,
  StandInBook,
  type StandInKey,
} from '../../src/plugins/secrets'
import { GENERATORS, rng } from '../secrets/generate'

/**
 * Stand-ins as properties: any text with secrets of every kind substitutes to a text holding none of
 * their values and restores to itself; another request's stand-ins are never restored and are each
 * reported with their kind (and, in the full layout, the minting request's nonce and tenant tag).
 */

const SECRET = 'a test secret of at least thirty-two bytes'
let key: StandInKey
beforeAll(async () => {
  key = await importStandInKey(SECRET)
})

/** A text: arbitrary lines and, between them, one realistic line per kind with a generated secret. */
const document = fc
  .record({
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    filler: fc.array(fc.string({ maxLength: 40 }), { minLength: 18, maxLength: 18 }),
    order: fc.shuffledSubarray(Object.keys(GENERATORS), { minLength: 1 }),
  })
  .map(({ seed, filler, order }) => {
    const r = rng(seed)
    const values: { kind: string; value: string }[] = []
    const lines: string[] = []
    order.forEach((name, i) => {
      const { kind, value, line } = GENERATORS[name]!(r)
      values.push({ kind, value })
      lines.push(filler[i] ?? '', line.replace('$', value))
    })
    return { text: lines.join('\n'), values }
  })

const open = (requestId: string, tenant = 'acme') => StandInBook.open(key, { requestId, tenant })

describe('StandInBook', () => {
  it('should round-trip any text with secrets of every kind, sending none of their values', async () => {
    await fc.assert(
      fc.asyncProperty(document, async ({ text, values }) => {
        const book = await open('req-1')
        const sent = await book.substitute(text)
        for (const { value } of values) expect(sent.text.includes(value), value).toBe(false)
        const total = sent.replaced.reduce((n, k) => n + k.count, 0)
        expect(total).toBeGreaterThanOrEqual(values.length)
        const back = await book.restore(sent.text)
        expect(back.text).toBe(text)
        expect(back.foreign).toEqual([])
      }),
      { numRuns: 40 },
    )
  })

  it("should never restore another request's stand-ins, and report each one", async () => {
    await fc.assert(
      fc.asyncProperty(document, document, async (theirs, mine) => {
        const other = await open('req-other', 'globex')
        const book = await open('req-mine')
        const leaked = await other.substitute(theirs.text)
        const own = await book.substitute(mine.text)
        const answer = `${own.text}\n${leaked.text}`
        const back = await book.restore(answer)
        // Mine restored, theirs left exactly as their stand-ins.
        expect(back.text).toBe(`${mine.text}\n${leaked.text}`)
        // (A value both documents hold is mine to get back.)
        for (const { value } of theirs.values) {
          if (!mine.text.includes(value)) expect(back.text.includes(value), value).toBe(false)
        }
        const reported = new Map<string, number>()
        for (const f of back.foreign) reported.set(f.kind, (reported.get(f.kind) ?? 0) + 1)
        for (const { kind, count } of leaked.replaced) expect(reported.get(kind), kind).toBe(count)
        for (const f of back.foreign) {
          expect(f.start).toBeGreaterThan(own.text.length)
          if (f.payload.layout === 'full') expect(f.payload.tenantTag).toMatch(/^[0-9a-f]{10}$/)
        }
      }),
      { numRuns: 25 },
    )
  })

  it('should be deterministic per request and differ between requests', async () => {
    const text = Object.values(GENERATORS)
      .map((g) => {
        const x = g(rng(42))
        return x.line.replace('$', x.value)
      })
      .join('\n')
    const a = await (await open('same')).substitute(text)
    const b = await (await open('same')).substitute(text)
    const c = await (await open('different')).substitute(text)
    expect(a.text).toBe(b.text)
    expect(c.text).not.toBe(a.text)
  })

  it('should give the same secret the same stand-in within a request, across calls', async () => {
    const { value, line } = GENERATORS['github-token']!(rng(7))
    const book = await open('r')
    const first = await book.substitute(line.replace('$', value))
    const second = await book.substitute(`again: ${value} and ${value}`)
    const standIn = first.text.slice(line.indexOf('$'), line.indexOf('$') + value.length)
    expect(second.text).toBe(`again: ${standIn} and ${standIn}`)
    expect(book.size).toBe(1)
    expect(book.longestStandIn).toBe(standIn.length)
  })

  it('should make stand-ins that fail their kind’s check (never a real card, IBAN, id or token)', async () => {
    const book = await open('checks')
    const failing = [
      'card-number',
      'iban',
      'no-fodselsnummer',
      'se-personnummer',
      'us-ssn',
      'github-token',
    ]
    for (let seed = 1; seed <= 50; seed++) {
      for (const name of failing) {
        const { value, line } = GENERATORS[name]!(rng(seed))
        const { text } = await book.substitute(line.replace('$', value))
        // The detectors (which check) find nothing in the stand-in's line.
        expect(findSecrets(text, builtInDetectors()), text).toEqual([])
      }
    }
  })

  it('should restore a compact form of a grouped card or IBAN stand-in', async () => {
    const book = await open('compact')
    const card = '4242 4242 4242 4242'
    const { text } = await book.substitute(`card ${card}`)
    const standIn = text.slice(5)
    const back = await book.restore(`the number ${standIn.replace(/ /g, '')} is on file`)
    expect(back.text).toBe('the number 4242424242424242 is on file')
  })

  it('should reject look-alikes of every kind (the MAC decides, not the shape)', async () => {
    for (const [kind, shape] of Object.entries(SHAPES)) {
      const r = rng(kind.length)
      for (let i = 0; i < 20; i++) {
        const { value } = Object.values(GENERATORS).find((g) => g(rng(1)).kind === kind)!(r)
        const template = shape.template(value)
        const lookAlike = shape.fix ? shape.fix(template) : template
        expect(await inspectStandIn(key, kind, shape, lookAlike)).toBeUndefined()
      }
    }
  })

  it('should substitute and restore operator kinds, keeping character classes', async () => {
    const acme = operatorDetector({ name: 'acme-account', pattern: 'ACME-[0-9]{8}-[A-Z]{4}' })
    const book = await StandInBook.open(key, { requestId: 'op', tenant: 't' }, [
      ...builtInDetectors(),
      acme,
    ])
    const text = 'account ACME-12345678-QWER, please'
    const sent = await book.substitute(text)
    expect(sent.text).toMatch(/^account ACME-[0-9]{8}-[A-Z]{4}, please$/)
    expect(sent.text).not.toContain('12345678')
    expect((await book.restore(sent.text)).text).toBe(text)
    const other = await StandInBook.open(key, { requestId: 'op2', tenant: 't' }, [acme])
    expect((await other.restore(sent.text)).foreign.map((f) => f.kind)).toEqual(['acme-account'])
  })
})

describe('StandInBook in JSON and rewritten answers', () => {
  it('should keep a JSON string valid around an escaped PEM key, and restore it', async () => {
    const { value } = GENERATORS['private-key']!(rng(3))
    const json = JSON.stringify({ role: 'user', content: `my key:\n${value}\nthanks` })
    const book = await open('json')
    const sent = await book.substitute(json)
    expect(sent.replaced).toEqual([{ kind: 'private-key', count: 1 }])
    const parsed = JSON.parse(sent.text) as { content: string }
    expect(parsed.content).not.toContain(value.split('\n')[1])
    expect((await book.restore(sent.text)).text).toBe(json)
  })

  it('should restore its own card stand-in written with other separators, not call it foreign', async () => {
    const book = await open('rewritten')
    const { text } = await book.substitute('card 4242 4242 4242 4242 ok')
    const standIn = text.slice(5, 24)
    const back = await book.restore(`use ${standIn.replace(/ /g, '-')} now`)
    expect(back.foreign).toEqual([])
    expect(back.text).toBe('use 4242 4242 4242 4242 now')
  })
})

describe('StandInBook at scale and at the edges', () => {
  it('should restore a thousand stand-ins, back to back with no separator between some', async () => {
    const book = await open('many')
    const r = rng(1234)
    const lines: string[] = []
    for (let i = 0; i < 1000; i++) {
      const { value } = GENERATORS['github-token']!(r)
      lines.push(i % 3 === 0 ? `${value} ${value}` : `token ${value},`)
    }
    const text = lines.join('\n')
    const sent = await book.substitute(text)
    expect(book.size).toBe(1000)
    const back = await book.restore(sent.text.replace(/\n/g, ''))
    expect(back.text).toBe(text.replace(/\n/g, ''))
    expect(back.foreign).toEqual([])
  })

  it('should leave an operator match too short for a stand-in in place, and say so', async () => {
    const pin = operatorDetector({ name: 'pin', pattern: 'PIN [0-9]{4}' })
    const book = await StandInBook.open(key, { requestId: 'pin', tenant: 't' }, [pin])
    const sent = await book.substitute('my PIN 1234.')
    expect(sent.text).toBe('my PIN 1234.')
    expect(sent.unsubstituted).toEqual([{ kind: 'pin', count: 1 }])
  })
})

describe('stand-in layouts', () => {
  const COMPACT = new Set([
    'aws-access-key-id',
    'card-number',
    'iban',
    'no-fodselsnummer',
    'se-personnummer',
    'us-ssn',
  ])

  it('should give API keys, PEM, JWT and URL passwords the full layout (source named), ids the compact one', async () => {
    // The tag a full-layout stand-in names is the canary's tag of the same tenant under the same
    // secret: src/core/attribution resolves both alike.
    const acmeTag = await tenantTag(await importCanaryKey(SECRET), 'acme')
    for (const [name, generate] of Object.entries(GENERATORS)) {
      for (let seed = 1; seed <= 20; seed++) {
        const { kind, value, line } = generate(rng(seed * 31 + name.length))
        const mine = await open(`layout-${name}-${seed}`, 'acme')
        const sent = await mine.substitute(line.replace('$', value))
        const other = await open('someone-else', 'globex')
        const [found] = (await other.restore(sent.text)).foreign
        expect(found?.kind, `${name} ${seed}`).toBe(kind)
        expect(found?.payload.layout, `${name} ${seed}`).toBe(
          COMPACT.has(kind) ? 'compact' : 'full',
        )
        if (!COMPACT.has(kind)) expect(found?.payload.tenantTag).toBe(acmeTag)
      }
    }
  })
})

describe('stand-in length bound', () => {
  it('should never exceed MAX_STAND_IN_LENGTH (the longest Stripe key; the worst PEM label next)', async () => {
    const label = 'AAAAAAAAAAAAAAAA BBBBBBBBBBBBBBBB CCCCCCCCCCCCCCCC PRIVATE KEY BLOCK'
    const body = Array.from({ length: 5 }, () => 'QUJD'.repeat(16)).join('\\n')
    const pem = `-----BEGIN ${label}-----\\n${body}\\n-----END ${label}-----`
    const book = await open('longest')
    const sent = await book.substitute(`{"k": "${pem}"}`)
    expect(sent.replaced).toEqual([{ kind: 'private-key', count: 1 }])
    expect(book.longestStandIn).toBe(234)
    for (const [name, generate] of Object.entries(GENERATORS)) {
      const { value, line } = generate(rng(name.length))
      await book.substitute(line.replace('$', value))
    }
    expect(book.longestStandIn).toBe(234)
    const stripe = `sk_live_${'aB3'.repeat(82)}a`
    expect(stripe).toHaveLength(8 + 247)
    await book.substitute(`new Stripe('${stripe}')`)
    expect(book.longestStandIn).toBe(MAX_STAND_IN_LENGTH)
  })
})

describe('StandInBook inspection memory (a candidate text inspected once per tenant)', () => {
  /** Another request's stand-ins, from one line per built-in kind. */
  async function leakedStandIns(tenant: string): Promise<{ text: string; count: number }> {
    const other = await open(`leak-source-${tenant}`, 'globex')
    const lines = Object.values(GENERATORS).map((g) => {
      const { value, line } = g(rng(7))
      return line.replace('$', value)
    })
    const sent = await other.substitute(lines.join('\n'))
    return { text: sent.text, count: sent.replaced.reduce((n, r) => n + r.count, 0) }
  }

  it('should report every repeat of a foreign stand-in, in every request that meets it', async () => {
    const leaked = await leakedStandIns('repeat')
    const answer = Array.from({ length: 4 }, () => leaked.text).join('\n')
    // The second request of the tenant and a request of another tenant read what the first inspected
    // (or inspect afresh): each must see the same stand-ins.
    for (const [requestId, tenant] of [
      ['repeat-1', 'acme'],
      ['repeat-2', 'acme'],
      ['repeat-3', 'initech'],
    ] as const) {
      const back = await (await open(requestId, tenant)).restore(answer)
      expect(back.foreign, requestId).toHaveLength(4 * leaked.count)
      expect(back.text).toBe(answer)
    }
  })

  it('should still report a foreign stand-in whose reading the memory dropped mid-answer', async () => {
    // A stand-in first, then more distinct look-alikes than the memory holds: the look-alikes push
    // the stand-in's reading out of the shared memory before the answer's verdict is assembled.
    const leaked = await leakedStandIns('evicted')
    const r = rng(99)
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
    const lookAlikes = Array.from({ length: 5_000 }, () =>
      Array.from({ length: 24 }, () => alphabet[Math.floor(r() * alphabet.length)]).join(''),
    )
    const answer = `${leaked.text}\n${lookAlikes.join(' ')}`
    const back = await (await open('evicted-1')).restore(answer)
    expect(back.foreign).toHaveLength(leaked.count)
    expect(back.text).toBe(answer)
  }, 60_000)
})
