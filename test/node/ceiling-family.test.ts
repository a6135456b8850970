import fc from 'fast-check'
import o200k from 'gpt-tokenizer/encoding/o200k_base'
import { beforeAll, describe, expect, it } from 'vitest'
import { decideCeiling } from '../../src/core/ceiling/ceiling'
import { estimateTexts, loadFamily } from '../../src/core/ceiling/estimate'
import { promptPieces } from '../../src/core/ceiling/prompt'
import {
  base64,
  code,
  type Encoder,
  fromPieces,
  GENERATED,
  json,
  loadReferenceFamily,
  mixed,
  REFERENCE_FAMILY,
  type ReferenceName,
  randomScript,
  rng,
  SCRIPT_BLOCKS,
  UDHR_LANGUAGES,
  udhrText,
  urls,
} from './ceiling-corpus'

// The reference family the ceiling must bound (dev dependencies: this file runs on Node only).
const FAMILY = REFERENCE_FAMILY
let encoders: Partial<Record<ReferenceName, Encoder>> = {}
const PLAIN = { disallowedSpecial: new Set<string>() }
// Fixed so failures replay; CEILING_SEED explores others.
const SEED = Number(process.env.CEILING_SEED ?? 13)

function counts(text: string): Record<string, number> {
  const out: Record<string, number> = { o200k: o200k.countTokens(text, PLAIN) }
  for (const name of FAMILY) {
    out[name] = encoders[name]?.encode(text, { add_special_tokens: false }).length ?? Number.NaN
  }
  return out
}

interface Source {
  label: string
  text: string
}

const corpus: Source[] = []

beforeAll(async () => {
  encoders = await loadReferenceFamily()
  const paragraphs: string[] = []
  for (const [code_, label] of UDHR_LANGUAGES) {
    const text = udhrText(code_)
    corpus.push({ label, text })
    paragraphs.push(...text.split('\n').filter((p) => p.length > 200))
  }
  const next = rng(2024)
  corpus.push(
    { label: 'json', text: json(next, 20_000) },
    { label: 'base64', text: base64(next, 20_000) },
    { label: 'urls', text: urls(next, 20_000) },
    { label: 'code', text: code(next, 20_000) },
    { label: 'mixed-script document', text: mixed(next, 30_000, paragraphs) },
  )
  for (const [label, make] of Object.entries(GENERATED))
    corpus.push({ label, text: make(next, 12_000) })
  for (const [label, block] of Object.entries(SCRIPT_BLOCKS)) {
    corpus.push({ label: `random ${label}`, text: randomScript(next, 4_000, block) })
  }
  for (const code_ of ['vie', 'ell_polytonic', 'yor', 'hin']) {
    corpus.push({ label: `${code_} NFD`, text: udhrText(code_).normalize('NFD') })
  }
  // The o200k tokens the family splits most: the adversary's alphabet, run together and spaced.
  const table = (await loadFamily()).expansion
  const decoder = (
    Reflect.get(o200k, 'bytePairEncodingCoreProcessor') as {
      bytePairRankDecoder: unknown[]
    }
  ).bytePairRankDecoder
  const expensive: string[] = []
  decoder.forEach((value, id) => {
    if (typeof value === 'string' && (table[id] ?? 0) >= 6) expensive.push(value)
  })
  corpus.push(
    { label: 'expensive tokens', text: fromPieces(next, 20_000, expensive) },
    {
      label: 'expensive tokens, spaced',
      text: fromPieces(
        next,
        20_000,
        expensive.map((t) => `${t} `),
      ),
    },
  )
}, 120_000)

describe('family bound: at least every reference tokenizer, with no calibration', () => {
  it('should hold a corpus of at least 25 languages and kinds of text', () => {
    expect(UDHR_LANGUAGES.length).toBeGreaterThanOrEqual(25)
    expect(corpus.length).toBeGreaterThanOrEqual(100)
  })

  it('should bound every whole corpus text, on the count path and on the bytes path', async () => {
    const failures: string[] = []
    for (const { label, text } of corpus) {
      const n = counts(text)
      const e = await estimateTexts([text])
      const bytes = await decideCeiling(promptPieces({ prompt: text }), 1e9, () => 0)
      expect(bytes.method).toBe('bytes')
      for (const [name, count] of Object.entries(n)) {
        if (e.bound < count) failures.push(`${label}: bound ${e.bound} < ${name} ${count}`)
        if (bytes.estimatedTokens < count) {
          failures.push(`${label}: bytes ${bytes.estimatedTokens} < ${name} ${count}`)
        }
        if (e.lower > count) failures.push(`${label}: lower ${e.lower} > ${name} ${count}`)
      }
    }
    expect(failures).toEqual([])
  }, 90_000)

  it('should bound random windows of every text at random sizes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 10_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (which, where, size) => {
          const source = corpus[which % corpus.length] as Source
          // Sizes from one character to 8,000, most of them short (where edge effects are largest).
          const length = 1 + Math.floor(size ** 2 * Math.min(source.text.length, 8_000))
          const start = Math.floor(where * Math.max(0, source.text.length - length))
          const text = source.text.slice(start, start + length)
          const e = await estimateTexts([text])
          const n = counts(text)
          for (const [name, count] of Object.entries(n)) {
            if (e.bound < count || e.lower > count) {
              throw new Error(
                `${source.label} [${start}, +${length}]: bound ${e.bound}, lower ${e.lower}, ${name} ${count}: ${JSON.stringify(text.slice(0, 80))}`,
              )
            }
          }
        },
      ),
      { numRuns: 800, seed: SEED },
    )
  }, 90_000)

  it('should bound prompts of several messages in several scripts', async () => {
    const next = rng(7)
    for (let i = 0; i < 20; i++) {
      const messages = Array.from({ length: 1 + Math.floor(next() * 5) }, (_, j) => {
        const source = corpus[Math.floor(next() * corpus.length)] as Source
        const start = Math.floor(next() * source.text.length)
        return {
          role: j % 2 ? 'assistant' : 'user',
          content: source.text.slice(start, start + 3_000),
        }
      })
      const pieces = promptPieces({ messages })
      const e = await estimateTexts(pieces.texts)
      const joined = pieces.texts.join('')
      for (const [name, count] of Object.entries(counts(joined))) {
        expect([name, e.bound >= count]).toEqual([name, true])
      }
    }
  }, 60_000)

  it('should keep English and code close to o200k (the usable context)', async () => {
    const english = udhrText('eng')
    const e = await estimateTexts([english])
    expect(e.bound / e.o200k).toBeLessThan(1.06)
    expect(e.lower / e.o200k).toBeGreaterThan(0.5)
  })
})

describe('known limit: BPE is not additive', () => {
  it('should document the gap on crafted words (about 2× in Llama 3, Cyrillic)', async () => {
    // Llama 3 spends 5 tokens on " характеру" but 1 on " характер" and 1 on "у" (o200k's two
    // tokens): its merges for added words only fire when no earlier-ranked merge took a letter. A
    // text of only such words beats any per-token table. Measured here with the three worst words
    // of the corpus: 2.0×; bench/results/tokenizer-factors.json (craftedContext) has every class
    // (1.1–1.5× with the 30 worst words of each). Natural text never shows it (the property above);
    // what covers a crafted prompt is the class margin that calibration raises on the engine's
    // first stated count, and the guards that hold when a prompt slips past the ceiling.
    const text = ' характеру признаку ограничение'.repeat(300)
    const e = await estimateTexts([text])
    const llama = counts(text).llama3 ?? 0
    expect(llama / e.bound).toBeGreaterThan(1.5)
    expect(llama / e.bound).toBeLessThan(2.2)
  })
})
