import { countTokens as libraryCount } from 'gpt-tokenizer/encoding/o200k_base'
import { describe, expect, it } from 'vitest'
import { decideCeiling, type Margins } from '../../src/core/ceiling/ceiling'
import { chunkEnd, countTokens, LONG_PIECE_UNITS } from '../../src/core/ceiling/count'
import { estimateTexts, scanFamily } from '../../src/core/ceiling/estimate'
import { type PromptPieces, templateOverhead } from '../../src/core/ceiling/prompt'
import { utf8Length } from '../../src/core/ceiling/utf8'
import { mixedTexts, prose, randomCodePoints, randomUnicode, rng } from './gen'

const PLAIN = { disallowedSpecial: new Set<string>() }

describe('utf8Length', () => {
  it('should equal TextEncoder on every kind of code unit, lone surrogates included', () => {
    for (const text of mixedTexts(1, 300, 40)) {
      expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length)
    }
  })
})

describe('token counting', () => {
  it('should count special-token text as plain text instead of throwing', async () => {
    const text = 'before <|endoftext|> after <|im_start|>'
    const tokens = await countTokens([text])
    expect(tokens).toBe(libraryCount(text, PLAIN))
    // As plain text each marker is several tokens, never the single control token.
    expect(tokens).toBeGreaterThan((await countTokens(['before  after '])) + 2)
  })

  it('should agree with gpt-tokenizer exactly on ordinary and hostile text', async () => {
    const next = rng(2)
    for (let i = 0; i < 200; i++) {
      const text = i % 3 === 0 ? prose(next, 60) : randomUnicode(next, 50)
      expect(await countTokens([text])).toBe(libraryCount(text, PLAIN))
    }
  })

  it('should sum over several texts', async () => {
    expect(await countTokens(['user', 'Hello, world'])).toBe(
      libraryCount('user', PLAIN) + libraryCount('Hello, world', PLAIN),
    )
  })

  it('should never count more tokens than UTF-8 bytes (property over random Unicode)', async () => {
    const next = rng(3)
    for (let i = 0; i < 400; i++) {
      const text = i % 2 ? randomUnicode(next, 1 + (i % 80)) : randomCodePoints(next, 1 + (i % 80))
      expect(await countTokens([text])).toBeLessThanOrEqual(utf8Length(text))
    }
  })

  it('should count a pathological pre-token in chunks instead of merging it whole', async () => {
    // 200,000 spaces are one pre-token; gpt-tokenizer needs minutes to merge it whole.
    const text = `${' '.repeat(200_000)}x`
    const started = performance.now()
    const tokens = await countTokens([text])
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(tokens).toBeGreaterThanOrEqual(200_000 / LONG_PIECE_UNITS)
    expect(tokens).toBeLessThanOrEqual(utf8Length(text))
    // The ceiling's scan of the same text says it was counted in chunks, not o200k's exact count.
    expect((await estimateTexts([text])).exact).toBe(false)
  })

  it('should count a pre-token at the cap exactly', async () => {
    const text = '-'.repeat(LONG_PIECE_UNITS)
    expect(await countTokens([text])).toBe(libraryCount(text, PLAIN))
    expect((await estimateTexts([text])).exact).toBe(true)
  })

  it('should never split a surrogate pair between chunks', () => {
    const piece = `${'a'.repeat(LONG_PIECE_UNITS - 1)}😀b`
    const end = chunkEnd(piece, 0)
    expect(end).toBe(LONG_PIECE_UNITS - 1)
    expect(chunkEnd(piece, end)).toBe(piece.length)
  })

  it('should count Thai, whose pre-tokens are long, within a few percent', async () => {
    // Thai is written without spaces: o200k's regex makes pre-tokens of 100+ characters (this one
    // is 1,300 long; UDHR Thai chunked at 32 units counts 2.9% more than o200k's exact count).
    const thai = 'ทุกคนมีสิทธิโดยเสมอภาคเต็มที่ในอันที่จะได้รับการพิจารณาที่เป็นธรรมและเปิดเผย'.repeat(20)
    const chunked = await countTokens([thai])
    const exact = libraryCount(thai, PLAIN)
    expect(chunked).toBeGreaterThanOrEqual(exact)
    expect(chunked / exact).toBeLessThan(1.1)
  })
})

// The ceiling counts with a limit in its family scan (estimate.ts), over the same o200k pre-tokens
// and chunks as the count above: with charge 1 per class its figure is the family bound.
describe('early exit', () => {
  const next = rng(4)
  const huge = prose(next, 900_000) // ~5.5M characters
  const limit = 1_000

  it('should stop a 5M-character input after about limit tokens of text', async () => {
    expect(huge.length).toBeGreaterThan(5_000_000)
    const stopped = await scanFamily([huge], undefined, limit)
    expect(stopped.within).toBe(false)
    expect(stopped.charged).toBeGreaterThan(limit)
    // The work done: the text behind about limit tokens, not the input (~1.2M o200k tokens).
    expect(stopped.o200k).toBeLessThanOrEqual(limit)
    const full = await countTokens([huge])
    expect(full / stopped.o200k).toBeGreaterThan(400)
  })

  it('should stop on a huge run of one character without merging it', async () => {
    const stopped = await scanFamily(['a'.repeat(5_000_000)], undefined, limit)
    expect(stopped.within).toBe(false)
    expect(stopped.charged).toBeGreaterThan(limit)
  })

  // Whether a figure is within a limit is the ceiling's decision: margins 0, so it charges the
  // family bound plus the template overhead, and says when it did not count to the end.
  const exactly: Margins = () => 0
  const piecesOf = (texts: string[]): PromptPieces => ({
    texts,
    messages: 0,
    tools: 0,
    nonTextParts: 0,
  })

  it('should return the exact count when the input is within the limit', async () => {
    const text = prose(rng(5), 300)
    const estimate = await estimateTexts([text])
    expect(estimate).toMatchObject({ o200k: libraryCount(text, PLAIN), exact: true })
    const pieces = piecesOf([text])
    const at = estimate.bound + templateOverhead(pieces)
    expect(await decideCeiling(pieces, at, exactly)).toMatchObject({
      fits: true,
      method: 'count',
      exact: true,
      estimatedTokens: estimate.bound,
    })
    expect((await decideCeiling(pieces, at - 1, exactly)).fits).toBe(false)
  })

  it('should carry the limit across texts', async () => {
    const texts = ['first text here', 'and the second']
    const both = (await estimateTexts(texts)).bound
    const pieces = piecesOf(texts)
    const at = both + templateOverhead(pieces)
    expect(await decideCeiling(pieces, at, exactly)).toMatchObject({
      fits: true,
      method: 'count',
      estimatedTokens: both,
    })
    expect((await decideCeiling(pieces, at - 1, exactly)).fits).toBe(false)
    // Each text alone fits that smaller ceiling: only the figure carried across both passes it.
    for (const text of texts) {
      expect((await decideCeiling(piecesOf([text]), at - 1, exactly)).fits).toBe(true)
    }
  })
})
