import { countTokens as libraryCount } from 'gpt-tokenizer/encoding/o200k_base'
import { describe, expect, it } from 'vitest'
import { decideCeiling, type Margins } from '../../src/ceiling/ceiling'
import {
  countTokens,
  countWithinDetailed,
  tokenizerLoaded,
  tokenizerRequests,
} from '../../src/ceiling/count'
import { estimateTexts } from '../../src/ceiling/estimate'
import { promptPieces, templateOverhead } from '../../src/ceiling/prompt'
import { utf8Length } from '../../src/ceiling/utf8'
import { mixedTexts, prose, rng } from '../ceiling/gen'

const PLAIN = { disallowedSpecial: new Set<string>() }
const margins: Margins = () => 0.1

// The same core, unchanged, on Node 22 (the bench runs here too).
describe('token ceiling on Node', () => {
  it('should decide a small prompt on bytes before the tokenizer is ever loaded', async () => {
    const before = tokenizerRequests()
    const decision = await decideCeiling(
      promptPieces({ prompt: 'Hei på deg 😀' }),
      677_184,
      margins,
    )
    expect(decision).toMatchObject({ fits: true, method: 'bytes' })
    expect(tokenizerRequests()).toBe(before)
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
    const stopped = await countWithinDetailed([huge], 2_000)
    expect(stopped.within).toBe(false)
    expect(stopped.scannedUnits).toBeLessThan(huge.length / 200)
  })
})
