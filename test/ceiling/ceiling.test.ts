import { describe, expect, it } from 'vitest'
import { ceilingFor, decideCeiling, maxEstimateWithin, withDrift } from '../../src/ceiling/ceiling'
import { countTokens } from '../../src/ceiling/count'
import { promptPieces, templateOverhead } from '../../src/ceiling/prompt'
import { utf8Length } from '../../src/ceiling/utf8'
import { prose, rng } from './gen'

const GLM = { contextWindow: 1_048_576, kvPoolTokens: 681_280 }

describe('ceilingFor', () => {
  it('should take the real pool when it is smaller than the advertised window', () => {
    expect(ceilingFor(GLM, 4_096)).toBe(681_280 - 4_096)
  })

  it('should take the window when the pool is larger', () => {
    expect(ceilingFor({ contextWindow: 131_072, kvPoolTokens: 2_040_000 }, 0)).toBe(131_072)
  })
})

describe('maxEstimateWithin', () => {
  it('should give the largest estimate whose adjusted figure still fits', () => {
    for (const [ceiling, drift, overhead] of [
      [1_257, 0.25, 7],
      [677_184, 0.1, 11],
      [100, 0.15, 3],
      [681_280, 0.07, 0],
    ] as const) {
      const max = maxEstimateWithin(ceiling, drift, overhead)
      expect(withDrift(max, drift) + overhead).toBeLessThanOrEqual(ceiling)
      expect(withDrift(max + 1, drift) + overhead).toBeGreaterThan(ceiling)
    }
  })

  it('should be -1 when the overhead alone exceeds the ceiling', () => {
    expect(maxEstimateWithin(10, 0.1, 11)).toBe(-1)
  })
})

describe('ceiling decision', () => {
  const text = prose(rng(11), 3_000)
  const pieces = promptPieces({ messages: [{ role: 'user', content: text }] })
  const overhead = templateOverhead(pieces)
  const drift = 0.25

  it('should fit a prompt exactly at the ceiling, counted exactly', async () => {
    const exact = await countTokens(pieces.texts)
    const at = withDrift(exact, drift) + overhead
    expect(utf8Length(text)).toBeGreaterThan(at) // bytes cannot decide: a real count is needed
    const decision = await decideCeiling(pieces, at, drift)
    expect(decision).toEqual({
      fits: true,
      estimatedTokens: exact,
      adjustedTokens: at,
      ceiling: at,
      method: 'count',
      exact: true,
    })
  })

  it('should fit a prompt one token under the ceiling', async () => {
    const at = withDrift(await countTokens(pieces.texts), drift) + overhead
    const decision = await decideCeiling(pieces, at + 1, drift)
    expect(decision).toMatchObject({ fits: true, adjustedTokens: at, method: 'count' })
  })

  it('should reject a prompt one token over the ceiling, stopping the count there', async () => {
    const exact = await countTokens(pieces.texts)
    const at = withDrift(exact, drift) + overhead
    const decision = await decideCeiling(pieces, at - 1, drift)
    expect(decision.fits).toBe(false)
    expect(decision.method).toBe('early-exit')
    expect(decision.exact).toBe(false)
    expect(decision.adjustedTokens).toBeGreaterThan(at - 1)
    expect(decision.estimatedTokens).toBeLessThanOrEqual(exact) // stopped, never over-read
  })

  it('should apply the drift margin: a prompt that fits without it may not fit with it', async () => {
    const exact = await countTokens(pieces.texts)
    const ceiling = exact + overhead
    expect((await decideCeiling(pieces, ceiling, 0)).fits).toBe(true)
    expect((await decideCeiling(pieces, ceiling, 0.1)).fits).toBe(false)
  })

  it('should decide on bytes exactly at the byte boundary and count one byte past it', async () => {
    const small = promptPieces({ prompt: 'The pool was smaller than the window.' })
    const bytes = utf8Length('The pool was smaller than the window.')
    const smallOverhead = templateOverhead(small)
    const at = withDrift(bytes, drift) + smallOverhead
    const onBytes = await decideCeiling(small, at, drift)
    expect(onBytes).toMatchObject({ fits: true, method: 'bytes', estimatedTokens: bytes })
    const counted = await decideCeiling(small, at - 1, drift)
    expect(counted).toMatchObject({ fits: true, method: 'count', exact: true })
    expect(counted.estimatedTokens).toBeLessThan(bytes)
  })

  it('should refuse the incident-sized prompt against the real pool and not the window', async () => {
    const long = {
      texts: ['user', 'lorem ipsum '.repeat(400_000)],
      messages: 1,
      tools: 0,
      nonTextParts: 0,
    }
    const decision = await decideCeiling(long, ceilingFor(GLM, 4_096), 0.1)
    expect(decision).toMatchObject({ fits: false, method: 'early-exit', ceiling: 677_184 })
    const window = ceilingFor({ ...GLM, kvPoolTokens: GLM.contextWindow }, 4_096)
    expect((await decideCeiling(long, window, 0.1)).fits).toBe(true)
  })

  it('should charge non-text parts to the overhead', async () => {
    const image = promptPieces({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
    })
    expect((await decideCeiling(image, 1_100, 0)).fits).toBe(true)
    expect((await decideCeiling(image, 1_000, 0)).fits).toBe(false)
  })

  it('should refuse a negative or non-finite drift and a non-finite ceiling', async () => {
    await expect(decideCeiling(pieces, 1_000, -0.1)).rejects.toThrow(/drift/)
    await expect(decideCeiling(pieces, 1_000, Number.NaN)).rejects.toThrow(/drift/)
    await expect(decideCeiling(pieces, Number.POSITIVE_INFINITY, 0.1)).rejects.toThrow(/ceiling/)
  })
})
