import o200k, { countTokens as libraryCount } from 'gpt-tokenizer/encoding/o200k_base'
import { describe, expect, it } from 'vitest'
import { estimateTexts, loadFamily, scanFamily } from '../../src/core/ceiling/estimate'
import { SCRIPT_CLASSES } from '../../src/core/ceiling/script'
import { utf8Length } from '../../src/core/ceiling/utf8'
import { prose, randomCodePoints, randomUnicode, rng } from './gen'

const PLAIN = { disallowedSpecial: new Set<string>() }

/** Tokens added once per class present (docs/how-it-decides.md, "The ceiling holds in every language"). */
const CLASS_SLACK = 2

describe('family table', () => {
  it('should give every o200k token an expansion of at least one token', async () => {
    const table = (await loadFamily()).expansion
    // It ends where o200k's ordinary tokens end: the last id decodes, the next is not in its BPE.
    expect(() => o200k.decode([table.length - 1])).not.toThrow()
    expect(() => o200k.decode([table.length])).toThrow()
    expect(table.every((e) => e >= 1)).toBe(true)
  })
})

describe('family estimate', () => {
  it("should be at least o200k's own count, with the lower figure at most it", async () => {
    const next = rng(31)
    for (let i = 0; i < 60; i++) {
      const text =
        i % 3 === 0
          ? prose(next, 80)
          : i % 3 === 1
            ? randomUnicode(next, 40)
            : randomCodePoints(next, 40)
      const e = await estimateTexts([text])
      expect(e.bound).toBeGreaterThanOrEqual(libraryCount(text, PLAIN))
      expect(e.lower).toBeLessThanOrEqual(e.o200k)
      let bound = 0
      for (const figures of Object.values(e.classes)) bound += figures?.bound ?? 0
      expect(bound).toBe(e.bound)
    }
  })

  it('should count o200k exactly for text without long pre-tokens', async () => {
    const text = prose(rng(32), 500)
    const e = await estimateTexts(['user', text])
    expect(e).toMatchObject({
      o200k: libraryCount(text, PLAIN) + libraryCount('user', PLAIN),
      exact: true,
    })
  })

  it('should attribute each piece to its script and add the slack once per class', async () => {
    const e = await estimateTexts(['Hello ქართული'])
    expect(Object.keys(e.classes).sort()).toEqual(['georgian', 'latin'])
    expect(e.classes.latin?.bound).toBe(1 + CLASS_SLACK) // "Hello": one token in every tokenizer
  })

  it('should charge a lone surrogate 3 (its WTF-8 bytes), not one U+FFFD token', async () => {
    const e = await estimateTexts(['\ud835'.repeat(10)])
    expect(e.bound).toBeGreaterThanOrEqual(30)
    expect(e.lower).toBe(0)
  })

  it('should estimate a text NFC changes as NFC too, class by class', async () => {
    // क़ (U+0958) is a composition exclusion: NFC makes it क + ़, which Qwen3 tokenizes.
    const precomposed = '\u0958'.repeat(50)
    const e = await estimateTexts([precomposed])
    const decomposed = await estimateTexts([precomposed.normalize('NFC')])
    expect(e.bound).toBeGreaterThanOrEqual(decomposed.bound)
    // Musical symbols: 4 bytes each, 12 bytes after NFC.
    const notes = await estimateTexts(['\u{1D160}'.repeat(50)])
    expect(notes.bound).toBeGreaterThanOrEqual(50 * 6)
  })

  it('should count long pre-tokens in chunks, far below their bytes', async () => {
    const thai = 'ทุกคนมีสิทธิโดยเสมอภาคเต็มที่ในอันที่จะได้รับการพิจารณาที่เป็นธรรม'.repeat(50)
    const e = await estimateTexts([thai])
    expect(e.exact).toBe(false)
    expect(e.bound).toBeLessThan(utf8Length(thai) / 3)
  })

  it('should stop early on a 5M-character prompt, reading about the limit', async () => {
    const huge = prose(rng(33), 900_000)
    const started = performance.now()
    const stopped = await scanFamily([huge], undefined, 2_000)
    expect(stopped.within).toBe(false)
    expect(stopped.charged).toBeGreaterThan(2_000)
    expect(stopped.o200k).toBeLessThan(2_100)
    expect(performance.now() - started).toBeLessThan(2_000)
    const run = await scanFamily(['a'.repeat(5_000_000)], undefined, 2_000)
    expect(run.within).toBe(false)
  })

  it('should know every class by name', async () => {
    const e = await estimateTexts(['x'])
    for (const name of Object.keys(e.classes)) expect(SCRIPT_CLASSES).toContain(name)
  })
})
