import { describe, expect, it } from 'vitest'
import {
  ceilingFor,
  decideCeiling,
  finerThanEnglish,
  type Margins,
} from '../../src/core/ceiling/ceiling'
import { type ClassFigures, estimateTexts } from '../../src/core/ceiling/estimate'
import { type PromptPieces, promptPieces, templateOverhead } from '../../src/core/ceiling/prompt'
import type { ScriptClass } from '../../src/core/ceiling/script'
import { utf8Length } from '../../src/core/ceiling/utf8'
import { prose, rng } from './gen'

const GLM = { contextWindow: 1_048_576, kvPoolTokens: 681_280 }

/** The same margin for every class. */
const uniform =
  (margin: number): Margins =>
  () =>
    margin

/** What decideCeiling charges for these class figures: Σ ceil(bound × (1 + margin)). */
function charged(classes: Partial<Record<ScriptClass, ClassFigures>>, margins: Margins): number {
  let total = 0
  for (const [cls, figures] of Object.entries(classes) as [ScriptClass, ClassFigures][]) {
    total += Math.ceil(figures.bound * (1 + margins(cls)))
  }
  return total
}

const GEORGIAN =
  'ვინაიდან ადამიანთა ოჯახის ყველა წევრისათვის დამახასიათებელი ღირსების და თანასწორი და ' +
  'განუყოფელი უფლებების აღიარება წარმოადგენს თავისუფლების, სამართლიანობის და მშვიდობის საფუძველს. '

describe('ceilingFor', () => {
  it('should take the real pool when it is smaller than the advertised window', () => {
    expect(ceilingFor(GLM, 4_096)).toBe(681_280 - 4_096)
  })

  it('should take the window when the pool is larger', () => {
    expect(ceilingFor({ contextWindow: 131_072, kvPoolTokens: 2_040_000 }, 0)).toBe(131_072)
  })
})

describe('margin rounding at the ceiling', () => {
  // Each class is charged ceil(figure × (1 + margin)): the largest prompt that fits is the one whose
  // charged figure plus the overhead is exactly the ceiling, whatever the margin's rounding.
  const pieces = promptPieces({ messages: [{ role: 'user', content: prose(rng(14), 1_000) }] })
  const overhead = templateOverhead(pieces)

  it('should fit exactly at the charged figure and not one token below it, for every margin', async () => {
    const estimate = await estimateTexts(pieces.texts)
    for (const margin of [0.25, 0.1, 0.15, 0.07]) {
      const at = charged(estimate.classes, uniform(margin)) + overhead
      expect(await decideCeiling(pieces, at, uniform(margin))).toMatchObject({
        fits: true,
        adjustedTokens: at,
      })
      expect((await decideCeiling(pieces, at - 1, uniform(margin))).fits).toBe(false)
    }
  })

  it('should reject when the overhead alone exceeds the ceiling, before counting', async () => {
    const decision = await decideCeiling(pieces, overhead - 1, uniform(0.1))
    expect(decision).toMatchObject({ fits: false, method: 'early-exit', estimatedTokens: 0 })
  })
})

describe('ceiling decision', () => {
  const text = prose(rng(11), 3_000)
  const pieces = promptPieces({ messages: [{ role: 'user', content: text }] })
  const overhead = templateOverhead(pieces)
  const margins = uniform(0.25)

  it('should fit a prompt exactly at the ceiling, charged the family bound plus margins', async () => {
    const estimate = await estimateTexts(pieces.texts)
    const at = charged(estimate.classes, margins) + overhead
    expect(utf8Length(text)).toBeGreaterThan(at) // bytes cannot decide: a real count is needed
    const decision = await decideCeiling(pieces, at, margins)
    expect(decision).toMatchObject({
      fits: true,
      estimatedTokens: estimate.bound,
      adjustedTokens: at,
      ceiling: at,
      method: 'count',
      exact: true,
      classes: estimate.classes,
    })
    expect(decision.drivers[0]).toBe('latin')
    expect(estimate.bound).toBeGreaterThanOrEqual(estimate.o200k)
  })

  it('should fit a prompt one token under the ceiling', async () => {
    const at = charged((await estimateTexts(pieces.texts)).classes, margins) + overhead
    const decision = await decideCeiling(pieces, at + 1, margins)
    expect(decision).toMatchObject({ fits: true, adjustedTokens: at, method: 'count' })
  })

  it('should reject a prompt one token over the ceiling', async () => {
    const estimate = await estimateTexts(pieces.texts)
    const at = charged(estimate.classes, margins) + overhead
    const decision = await decideCeiling(pieces, at - 1, margins)
    expect(decision.fits).toBe(false)
    expect(decision.adjustedTokens).toBeGreaterThan(at - 1)
    expect(decision.estimatedTokens).toBeLessThanOrEqual(estimate.bound) // never over-read
  })

  it('should apply the margin: a prompt that fits without it may not fit with it', async () => {
    const estimate = await estimateTexts(pieces.texts)
    const ceiling = estimate.bound + overhead
    expect((await decideCeiling(pieces, ceiling, uniform(0))).fits).toBe(true)
    expect((await decideCeiling(pieces, ceiling, uniform(0.1))).fits).toBe(false)
  })

  it("should apply each class's own margin: Georgian's raise never moves English", async () => {
    const mixed = promptPieces({
      messages: [
        { role: 'system', content: prose(rng(12), 4_000) },
        { role: 'user', content: GEORGIAN.repeat(60) },
      ],
    })
    const estimate = await estimateTexts(mixed.texts)
    const georgianRaised: Margins = (cls) => (cls === 'georgian' ? 0.5 : 0.05)
    const at = charged(estimate.classes, uniform(0.05)) + templateOverhead(mixed)
    const base = await decideCeiling(mixed, at, uniform(0.05))
    expect(base).toMatchObject({ fits: true, method: 'count' })
    const raised = await decideCeiling(mixed, at, georgianRaised)
    expect(raised.fits).toBe(false)
    expect(raised.drivers[0]).toBe('georgian')
    // An English-only prompt is charged exactly as before the Georgian raise.
    const english = promptPieces({ prompt: prose(rng(13), 4_000) })
    const e = await estimateTexts(english.texts)
    const englishAt = charged(e.classes, uniform(0.05)) + templateOverhead(english)
    expect(await decideCeiling(english, englishAt, georgianRaised)).toMatchObject({
      fits: true,
      adjustedTokens: englishAt,
    })
  })

  it('should charge Georgian many times its o200k count, and name it as the driver', async () => {
    const georgian = promptPieces({ prompt: GEORGIAN.repeat(200) })
    const estimate = await estimateTexts(georgian.texts)
    expect(estimate.bound / estimate.o200k).toBeGreaterThan(5)
    const decision = await decideCeiling(georgian, estimate.o200k * 2, uniform(0.05))
    expect(decision).toMatchObject({ fits: false })
    expect(decision.drivers).toEqual(['georgian'])
    expect(await finerThanEnglish('georgian')).toBeGreaterThan(5)
  })

  it('should decide on bytes exactly at the byte boundary and count one byte past it', async () => {
    const sentence = 'The pool was smaller than the window.'
    const small = promptPieces({ prompt: sentence })
    const onBytes = await decideCeiling(small, 10_000, margins)
    expect(onBytes).toMatchObject({ fits: true, method: 'bytes' })
    expect(onBytes.estimatedTokens).toBe(utf8Length(sentence))
    // Bytes per class, each with its class's margin: letters, spaces, the full stop.
    expect(onBytes.classes.latin?.bound).toBe(sentence.replace(/[^A-Za-z]/g, '').length)
    expect(onBytes.classes.whitespace?.bound).toBe(6)
    const at = onBytes.adjustedTokens
    expect(await decideCeiling(small, at, margins)).toMatchObject({ fits: true, method: 'bytes' })
    const counted = await decideCeiling(small, at - 1, margins)
    expect(counted).toMatchObject({ fits: true, method: 'count', exact: true })
    expect(counted.estimatedTokens).toBeLessThan(onBytes.estimatedTokens)
  })

  it('should charge the bytes of the NFC form when NFC lengthens the text (Qwen3 normalizes)', async () => {
    // U+1D160 is 4 bytes; its NFC form is three code points, 12 bytes.
    const notes = '\u{1D160}'.repeat(100)
    const decision = await decideCeiling(promptPieces({ prompt: notes }), 2_000, uniform(0))
    expect(decision.method).toBe('bytes')
    expect(decision.estimatedTokens).toBeGreaterThanOrEqual(1_200)
  })

  it('should refuse the incident-sized prompt against the real pool and not the window', async () => {
    const long: PromptPieces = {
      texts: ['user', 'the cache pool '.repeat(250_000)], // 750k tokens in every tokenizer
      messages: 1,
      tools: 0,
      nonTextParts: 0,
    }
    const decision = await decideCeiling(long, ceilingFor(GLM, 4_096), uniform(0.05))
    expect(decision).toMatchObject({ fits: false, method: 'early-exit', ceiling: 677_184 })
    const window = ceilingFor({ ...GLM, kvPoolTokens: GLM.contextWindow }, 4_096)
    expect((await decideCeiling(long, window, uniform(0.05))).fits).toBe(true)
  })

  it('should charge non-text parts to the overhead', async () => {
    const image = promptPieces({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
    })
    expect((await decideCeiling(image, 1_100, uniform(0))).fits).toBe(true)
    expect((await decideCeiling(image, 1_000, uniform(0))).fits).toBe(false)
  })

  it('should refuse a negative or non-finite margin and a non-finite ceiling', async () => {
    await expect(decideCeiling(pieces, 1_000, uniform(-0.1))).rejects.toThrow(/margin/)
    await expect(decideCeiling(pieces, 1_000, uniform(Number.NaN))).rejects.toThrow(/margin/)
    await expect(decideCeiling(pieces, Number.POSITIVE_INFINITY, margins)).rejects.toThrow(
      /ceiling/,
    )
  })
})
