import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import { describe, expect, it } from 'vitest'
import {
  INSTRUCTION,
  loadPromptBuilder,
  mintNeedle,
  NEEDLE_PATTERN,
  seededRng,
} from '../../src/tools/probe'

const PLAIN = { disallowedSpecial: new Set<string>() }

describe('probe prompts', () => {
  it('should be exactly the asked o200k length, per gpt-tokenizer itself', async () => {
    const builder = await loadPromptBuilder()
    const lengths = [
      builder.minTokens,
      builder.minTokens + 1,
      128,
      1000,
      1024,
      4097,
      65_536,
      200_003,
    ]
    for (const [i, tokens] of lengths.entries()) {
      const prompt = await builder.build(tokens, seededRng(1000 + i))
      expect(prompt.tokens).toBe(tokens)
      expect(countTokens(prompt.text, PLAIN)).toBe(tokens)
    }
  })

  it('should put a fresh needle on the very first and the very last line, and the ask before it', async () => {
    const builder = await loadPromptBuilder()
    const prompt = await builder.build(2048, seededRng(3))
    const lines = prompt.text.split('\n')
    expect(lines[0]).toBe(prompt.startNeedle)
    expect(lines.at(-1)).toBe(prompt.endNeedle)
    expect(lines.at(-2)).toBe(INSTRUCTION)
    expect(prompt.startNeedle).not.toBe(prompt.endNeedle)
    // The needles appear once each; the instruction names their shape but no needle.
    expect([...prompt.text.matchAll(NEEDLE_PATTERN)].map((m) => m[0])).toEqual([
      prompt.startNeedle,
      prompt.endNeedle,
    ])
    // Every filler line carries the prompt's tag, so a quoted span of it is attributable.
    const filler = lines.slice(1, -2)
    expect(filler.length).toBeGreaterThan(100)
    for (const line of filler) {
      expect(line.startsWith(`${prompt.tag} `)).toBe(true)
      expect(line.length).toBeLessThan(260)
    }
    expect(prompt.tag).toMatch(/^ref\d{9}$/)
  })

  it('should replay under the same seed and differ under another', async () => {
    const builder = await loadPromptBuilder()
    const a = await builder.build(3000, seededRng(42))
    const b = await builder.build(3000, seededRng(42))
    const c = await builder.build(3000, seededRng(43))
    expect(b.text).toBe(a.text)
    expect(c.startNeedle).not.toBe(a.startNeedle)
    expect(c.text).not.toBe(a.text)
    // One generator, two prompts: fresh needles every time.
    const rng = seededRng(42)
    const first = await builder.build(3000, rng)
    const second = await builder.build(3000, rng)
    expect(second.startNeedle).not.toBe(first.startNeedle)
    expect(second.tag).not.toBe(first.tag)
  })

  it('should refuse a length below its minimum, and accept the minimum', async () => {
    const builder = await loadPromptBuilder()
    await expect(builder.build(builder.minTokens - 1, seededRng(1))).rejects.toThrow(RangeError)
    await expect(builder.build(1.5 as number, seededRng(1))).rejects.toThrow(/at least/)
    expect((await builder.build(builder.minTokens, seededRng(1))).tokens).toBe(builder.minTokens)
  })

  it('should mint needles of the documented shape', () => {
    const rng = seededRng(9)
    const needles = new Set(Array.from({ length: 1000 }, () => mintNeedle(rng)))
    expect(needles.size).toBe(1000)
    for (const n of needles) expect(n).toMatch(/^NEEDLE-[0-9A-HJKMNP-TV-Z]{10}$/)
  })
})
