import { countTokens as libraryCount } from 'gpt-tokenizer/encoding/o200k_base'
import { describe, expect, it } from 'vitest'
import { decideCeiling, type Margins } from '../../src/core/ceiling/ceiling'
import { countTokens } from '../../src/core/ceiling/count'
import { estimateTexts, scanFamily } from '../../src/core/ceiling/estimate'
import { promptPieces, templateOverhead } from '../../src/core/ceiling/prompt'
import { utf8Length } from '../../src/core/ceiling/utf8'
import { mixedTexts, prose, rng } from '../ceiling/gen'
import { tokenizerLoaded } from '../ceiling/loaded'

const PLAIN = { disallowedSpecial: new Set<string>() }
const margins: Margins = () => 0.1

// The same core, unchanged, on Node 22 (the bench runs here too).
describe('token ceiling on Node', () => {
  it('should decide a small prompt on bytes before the tokenizer is ever loaded', async () => {
    expect(tokenizerLoaded()).toBe(false)
    const decision = await decideCeiling(
      promptPieces({ prompt: 'Hei på deg 😀' }),
      677_184,
      margins,
    )
    expect(decision).toMatchObject({ fits: true, method: 'bytes' })
    expect(tokenizerLoaded()).toBe(false)
  })

  it('should count exactly like gpt-tokenizer and never above the byte bound', async () => {
    for (const text of mixedTexts(21, 300, 60)) {
      const tokens = await countTokens([text])
      expect(tokens).toBe(libraryCount(text, PLAIN))
      expect(tokens).toBeLessThanOrEqual(utf8Length(text))
    }
    expect(tokenizerLoaded()).toBe(true)
  })

  it('should fit at the ceiling and reject one under it', async () => {
    const pieces = promptPieces({ prompt: prose(rng(22), 2_000) })
    const half: Margins = () => 0.5
    let charged = templateOverhead(pieces)
    for (const figures of Object.values((await estimateTexts(pieces.texts)).classes)) {
      charged += Math.ceil((figures?.bound ?? 0) * 1.5)
    }
    expect(await decideCeiling(pieces, charged, half)).toMatchObject({
      fits: true,
      method: 'count',
    })
    expect((await decideCeiling(pieces, charged - 1, half)).fits).toBe(false)
  })

  it('should stop early on a 5M-character prompt', async () => {
    const huge = prose(rng(23), 900_000)
    // The ceiling's count (its family scan) with a limit: the text read is what its o200k figure
    // covers, about the limit's worth, not the prompt's ~1.2M tokens.
    const stopped = await scanFamily([huge], undefined, 2_000)
    expect(stopped.within).toBe(false)
    expect(stopped.o200k).toBeLessThan((await countTokens([huge])) / 200)
  })
})
