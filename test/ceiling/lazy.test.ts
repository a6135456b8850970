import { describe, expect, it } from 'vitest'
import { decideCeiling } from '../../src/core/ceiling/ceiling'
import { promptPieces } from '../../src/core/ceiling/prompt'
import { tokenizerLoaded } from './loaded'

const margins = () => 0.05

// Its own file: nothing here loads the tokenizer (or the family table) before the bytes-path
// assertions run.
describe('lazy tokenizer', () => {
  it('should decide a small prompt on bytes without loading the tokenizer', async () => {
    expect(tokenizerLoaded()).toBe(false)
    const pieces = promptPieces({
      messages: [{ role: 'user', content: 'Hei! 中文 😀 ქართული '.repeat(500) }],
    })
    const decision = await decideCeiling(pieces, 677_184, margins)
    expect(decision).toMatchObject({ fits: true, method: 'bytes', exact: false })
    expect(decision.classes.georgian?.bound).toBe(500 * 7 * 3)
    expect(tokenizerLoaded()).toBe(false)
  })

  it('should reject on the fixed overhead alone without loading the tokenizer', async () => {
    const pieces = { texts: ['user', 'x'], messages: 1, tools: 0, nonTextParts: 2 }
    const decision = await decideCeiling(pieces, 1_000, margins)
    expect(decision).toMatchObject({ fits: false, method: 'early-exit' })
    expect(tokenizerLoaded()).toBe(false)
  })

  it('should load the tokenizer once a prompt is too long for the byte bound', async () => {
    const pieces = promptPieces({ prompt: 'The pool is smaller than the window. '.repeat(200) })
    const decision = await decideCeiling(pieces, 3_000, margins)
    expect(decision).toMatchObject({ fits: true, method: 'count', exact: true })
    expect(tokenizerLoaded()).toBe(true)
  })
})
