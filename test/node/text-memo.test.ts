import { describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { prng } from '../../sim/random'
import { decideCeiling } from '../../src/core/ceiling/ceiling'
import { estimateTexts, type TextTally } from '../../src/core/ceiling/estimate'
import { promptPieces } from '../../src/core/ceiling/prompt'
import { memoSlot, TextMemo } from '../../src/core/memo/text-memo'
import {
  FINGERPRINT_DEFAULTS,
  fingerprintKey,
  printPrompt,
  Shingler,
  type TextPrint,
} from '../../src/plugins/foreign-content'
import { importStandInKey, resolveSecrets } from '../../src/plugins/secrets'
import { substituteSecrets } from '../../src/plugins/secrets/prompt-secrets'
import { randomUnicode } from '../ceiling/gen'
import { GENERATORS, rng } from '../secrets/generate'

const SECRET = 'text-memo-test-secret-0123456789abcdef'
const TALLY = memoSlot<TextTally>('tally')
const PRINT = memoSlot<TextPrint>('print')
const KEY = fingerprintKey(new Uint8Array(32).fill(7))
const PARAMS = { n: FINGERPRINT_DEFAULTS.n, w: FINGERPRINT_DEFAULTS.w }
const MIB = 1024 * 1024

/** Long texts of every kind the count treats apart: prose, mixed scripts, NFC-changing, inexact. */
function texts(seed: number): string[] {
  const next = prng(seed)
  return [
    english(seed, 3_000),
    randomUnicode(next, 1_500),
    // Devanagari nukta letters: NFC makes them longer, the count charges the larger form.
    `${'क़ख़ग़ '.repeat(600)}${english(seed + 1, 500)}`,
    // A run of ASCII letters longer than any word: charged its bytes, the estimate not exact.
    `${'x'.repeat(4_000)} ${english(seed + 2, 2_500)}`,
    // Lone surrogates are charged their WTF-8 bytes.
    `${'\ud835 '.repeat(1_200)}`,
  ]
}

async function memoOf(budgetBytes = 16 * MIB) {
  return new TextMemo(SECRET, { budgetBytes })
}

/** Every shingle hash a text makes: what `contains` must answer yes to. */
function shingles(text: string): number[] {
  const out: number[] = []
  new Shingler(KEY, { n: PARAMS.n }).read(text, true, (hash) => out.push(hash))
  return out
}

describe('text memo', () => {
  it('should give the same family estimate remembered as counted, in any mix and order', async () => {
    const memo = await memoOf()
    for (const seed of [1, 2, 3]) {
      const all = ['system', ...texts(seed), 'user', 'short text']
      const fresh = await estimateTexts(all)
      // Cold: nothing remembered yet, everything kept; warm: the long texts come from the memo.
      for (const round of ['cold', 'warm']) {
        const request = memo.forRequest('acme')
        await request.know(all)
        expect(await estimateTexts(all, request.facts(TALLY)), `${seed} ${round}`).toEqual(fresh)
      }
      // Resent in another order with a new text among them: what is remembered still adds up.
      const mixed = [english(seed + 40, 2_500), ...all.slice().reverse()]
      const request = memo.forRequest('acme')
      await request.know(mixed)
      expect(await estimateTexts(mixed, request.facts(TALLY))).toEqual(await estimateTexts(mixed))
    }
    expect(memo.stats().hits).toBeGreaterThan(0)
  })

  it('should make the same ceiling decision remembered as counted, near the limit too', async () => {
    const memo = await memoOf()
    const margins = () => 0.03
    const doc = `${english(21, 30_000)}\n${randomUnicode(prng(21), 2_000)}`
    const fresh = async (messages: unknown[], ceiling: number) =>
      decideCeiling(promptPieces({ messages }), ceiling, margins)
    const remembered = async (messages: unknown[], ceiling: number) => {
      const pieces = promptPieces({ messages })
      const request = memo.forRequest('acme')
      return decideCeiling(pieces, ceiling, margins, () =>
        request.know(pieces.texts).then(() => request.facts(TALLY)),
      )
    }
    const alone = [{ role: 'user', content: doc }]
    // A ceiling the bytes alone cannot clear, so the ceiling counts: its charged figure, exactly.
    const counted = await fresh(alone, 16_000)
    expect(counted).toMatchObject({ method: 'count', fits: true })
    const exact = counted.adjustedTokens
    // The document fits alone at its exact figure and not one token under it, remembered or not.
    for (const ceiling of [exact, exact - 1, exact + 100, Math.floor(exact / 2)]) {
      const expected = await fresh(alone, ceiling)
      for (const round of ['cold', 'warm']) {
        const decision = await remembered(alone, ceiling)
        expect(decision.fits, `${round} ${ceiling}`).toBe(expected.fits)
        expect(decision.method).toBe(expected.method)
        if (expected.fits) expect(decision).toEqual(expected)
        // A refusal's figures say where counting stopped: a remembered text is added whole, so they
        // can only be more complete (never lower) than a count that stopped inside it.
        else expect(decision.adjustedTokens).toBeGreaterThanOrEqual(expected.adjustedTokens)
      }
    }
    // Remembered as fitting, then resent with a second long text: the pair no longer fits.
    const pair = [...alone, { role: 'user', content: english(22, 8_000) }]
    const decision = await remembered(pair, exact + 100)
    expect(decision).toMatchObject({ fits: false, method: 'early-exit' })
    expect((await fresh(pair, exact + 100)).fits).toBe(false)
    expect((await remembered(pair, 1e9)).adjustedTokens).toBe(
      (await fresh(pair, 1e9)).adjustedTokens,
    )
  })

  it('should scan for secrets only texts not found clean before, and never let a secret through', async () => {
    const memo = await memoOf()
    const services = {
      secrets: resolveSecrets({ high: 'substitute', medium: 'detect' }),
      standInKey: () => importStandInKey(SECRET),
    }
    const card = GENERATORS['card-number']!(rng(3))
    const ssn = GENERATORS['us-ssn']!(rng(4))
    const clean = english(41, 6_000)
    const withSecrets = `${english(42, 3_000)}\n${card.line.replace('$', card.value)}\n${ssn.line.replace('$', ssn.value)}\n${english(43, 3_000)}`
    const inputs = {
      messages: [
        { role: 'system', content: clean },
        { role: 'user', content: withSecrets },
      ],
    }
    const request = { requestId: 'r1', tenant: 'acme', model: '@cf/zai-org/glm-5.3' }
    const run = (sent: Record<string, unknown>, tenant = 'acme') =>
      substituteSecrets(services, { ...request, tenant }, sent, memo.forRequest(tenant))
    const sentTexts = (out: { inputs: Record<string, unknown> }) =>
      (out.inputs.messages as { content: string }[]).map((m) => m.content)
    for (const round of ['cold', 'warm']) {
      const out = await run(inputs)
      const [system, user] = sentTexts(out)
      expect(system, round).toBe(clean)
      expect(user).not.toContain(card.value)
      expect(user).toContain(ssn.value) // medium confidence: counted, sent as it is
      expect(out.secrets!.substituted).toEqual({ 'card-number': 1 })
      expect(out.secrets!.detected).toEqual({ 'us-ssn': 1 })
    }
    const hits = memo.stats().hits
    expect(hits).toBeGreaterThan(0)
    // The clean text, remembered, resent with a secret appended: a new text, scanned and substituted.
    const appended = await run({
      messages: [{ role: 'user', content: `${clean}\n${card.line.replace('$', card.value)}` }],
    })
    expect(sentTexts(appended)[0]).not.toContain(card.value)
    expect(appended.secrets!.substituted).toEqual({ 'card-number': 1 })
    // Another tenant's texts are its own to scan: nothing of acme's is taken for it.
    const before = memo.stats().hits
    await run(inputs, 'globex')
    expect(memo.stats().hits).toBe(before)
  })

  it('should give the same print remembered as printed: fingerprints and own shingles', async () => {
    const memo = await memoOf()
    const all = [...texts(4), 'a short system prompt', english(9, 900)]
    const fresh = printPrompt(KEY, all, PARAMS)
    for (const round of ['cold', 'warm']) {
      const request = memo.forRequest('acme')
      await request.know(all)
      const print = printPrompt(KEY, all, PARAMS, request.facts(PRINT))
      expect(new Set(print.selected), round).toEqual(new Set(fresh.selected))
      expect(print.selected.length).toBe(fresh.selected.length)
      expect(print.units).toBe(fresh.units)
      for (const text of all) {
        for (const hash of shingles(text)) expect(print.contains(hash)).toBe(true)
      }
      // A text not in the prompt: the same answers both ways (no shingle is made up).
      for (const hash of shingles(english(77, 3_000))) {
        expect(print.contains(hash)).toBe(fresh.contains(hash))
      }
    }
  })

  it("should never hand one tenant another tenant's facts", async () => {
    const memo = await memoOf()
    const shared = texts(5)
    const acme = memo.forRequest('acme')
    await acme.know(shared)
    await estimateTexts(shared, acme.facts(TALLY))
    expect(shared.every((text) => acme.facts(TALLY).get(text) !== undefined)).toBe(true)
    // The same texts sent by another tenant: nothing found, so nothing is faster for it either.
    const globex = memo.forRequest('globex')
    await globex.know(shared)
    expect(shared.map((text) => globex.facts(TALLY).get(text))).toEqual(shared.map(() => undefined))
  })

  it('should remember facts only of long texts, and nothing before the digests are known', async () => {
    const memo = await memoOf()
    const long = english(11, 5_000)
    const request = memo.forRequest('acme')
    const facts = request.facts(TALLY)
    facts.keep(long, {} as TextTally, 100)
    expect(facts.remembers(long)).toBe(false)
    expect(memo.stats().entries).toBe(0)
    await request.know([long, 'hi'])
    expect(facts.remembers(long)).toBe(true)
    expect(facts.remembers('hi')).toBe(false)
  })

  it('should tell texts apart by every character, not by length or start', async () => {
    const memo = await memoOf()
    const base = english(12, 6_000)
    // A long text and one of the same length that differs only at its end (or only at its start).
    const twins = [base, `${base.slice(0, -1)}!`, `!${base.slice(1)}`]
    const request = memo.forRequest('acme')
    await request.know(twins)
    request.facts(TALLY).keep(base, { exact: true } as TextTally, 100)
    expect(request.facts(TALLY).get(twins[1]!)).toBeUndefined()
    expect(request.facts(TALLY).get(twins[2]!)).toBeUndefined()
    expect(request.facts(TALLY).get(base)).toEqual({ exact: true })
  })

  it('should stay within its budget and let no tenant hold more than its share', async () => {
    const budget = 256 * 1024
    const memo = await memoOf(budget)
    // A flooder sends many distinct long texts; a quiet tenant sends one.
    const quiet = memo.forRequest('quiet')
    await quiet.know([english(13, 3_000)])
    quiet.facts(TALLY).keep(english(13, 3_000), { exact: true } as TextTally, 1_000)
    for (let i = 0; i < 200; i++) {
      const text = english(100 + i, 2_500)
      const flood = memo.forRequest('flooder')
      await flood.know([text])
      flood.facts(PRINT).keep(text, {} as TextPrint, 4_000)
      expect(memo.stats().bytes).toBeLessThanOrEqual(budget)
    }
    // The flooder is held to half the budget, so the quiet tenant's text is still there.
    const again = memo.forRequest('quiet')
    await again.know([english(13, 3_000)])
    expect(again.facts(TALLY).get(english(13, 3_000))).toEqual({ exact: true })
    // A fact larger than a share is never kept.
    const huge = english(14, 3_000)
    const big = memo.forRequest('big')
    await big.know([huge])
    big.facts(PRINT).keep(huge, {} as TextPrint, budget)
    expect(big.facts(PRINT).get(huge)).toBeUndefined()
  })

  it('should charge tenant names too: long ids cannot grow it past its budget', async () => {
    const budget = 64 * 1024
    const memo = await memoOf(budget)
    const text = english(50, 2_500)
    for (let i = 0; i < 500; i++) {
      const tenant = `${'t'.repeat(2_000)}-${i}`
      const request = memo.forRequest(tenant)
      await request.know([text])
      request.facts(TALLY).keep(text, { exact: true } as TextTally, 100)
      expect(memo.stats().bytes).toBeLessThanOrEqual(budget)
    }
    // About 4 KB of name each: a dozen or so tenants fit, never all 500.
    expect(memo.stats().tenants).toBeLessThan(20)
    expect(memo.stats().tenants).toBeGreaterThan(5)
  })

  it('should evict the least recently used tenant first when the budget is full', async () => {
    const budget = 64 * 1024
    const memo = await memoOf(budget)
    const keep = async (tenant: string, text: string) => {
      const request = memo.forRequest(tenant)
      await request.know([text])
      request.facts(TALLY).keep(text, { exact: true } as TextTally, 10_000)
      return request
    }
    const old = english(20, 2_500)
    await keep('old', old)
    for (let i = 0; i < 6; i++) await keep(`t${i}`, english(30 + i, 2_500))
    const oldAgain = memo.forRequest('old')
    await oldAgain.know([old])
    expect(oldAgain.facts(TALLY).get(old)).toBeUndefined()
    expect(memo.stats().bytes).toBeLessThanOrEqual(budget)
  })

  it('should digest at most a bounded number of texts per request (the rest computed afresh)', async () => {
    // The bound docs/how-it-decides.md states: at most 256 texts digested per request.
    const MAX_TEXTS_PER_REQUEST = 256
    const memo = await memoOf()
    const many = Array.from({ length: MAX_TEXTS_PER_REQUEST + 40 }, (_, i) =>
      english(500 + i, 2_100),
    )
    const request = memo.forRequest('acme')
    await request.know(many)
    const facts = request.facts(TALLY)
    expect(many.filter((text) => facts.remembers(text)).length).toBe(MAX_TEXTS_PER_REQUEST)
    // The estimate is the same either way: the texts past the bound are counted as usual.
    expect(await estimateTexts(many, facts)).toEqual(await estimateTexts(many))
  })

  it('should compute everything afresh when its key cannot be made (never fail a request)', async () => {
    const memo = new TextMemo('too short', { budgetBytes: MIB })
    const all = texts(6)
    const request = memo.forRequest('acme')
    await expect(request.know(all)).resolves.toBeUndefined()
    expect(await estimateTexts(all, request.facts(TALLY))).toEqual(await estimateTexts(all))
    expect(memo.stats().entries).toBe(0)
  })
})
