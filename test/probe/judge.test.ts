import { describe, expect, it } from 'vitest'
import { judgeAnswer, minTtftMs, type ProbeAnswer } from '../../src/tools/probe'

const prompt = {
  tokens: 700_000,
  startNeedle: 'NEEDLE-AAAAAAAAAA',
  endNeedle: 'NEEDLE-BBBBBBBBBB',
  tag: 'ref123456789',
}
const earlier = new Map([
  ['NEEDLE-CCCCCCCCCC', 3],
  ['REF987654321', 3],
  ['NEEDLE-DDDDDDDDDD', 4],
])

function reply(extra: Partial<ProbeAnswer> = {}): ProbeAnswer {
  return {
    reasoning: 'The first line says NEEDLE-AAAAAAAAAA.',
    content: 'NEEDLE-AAAAAAAAAA NEEDLE-BBBBBBBBBB',
    ttftMs: 4_000,
    totalMs: 4_100,
    promptTokens: 700_010,
    finishReason: 'stop',
    streamed: true,
    ...extra,
  }
}
const judge = (answer: ProbeAnswer) => judgeAnswer({ prompt, answer, earlier, maxPrefill: 200_000 })

describe('probe judgement', () => {
  it('should pass an answer with both needles, a real prefill time and a full count', () => {
    const j = judge(reply())
    expect(j).toMatchObject({ kind: 'ok', missing: [], foreign: [], impossibleTtft: false })
    expect(j.minTtftMs).toBe(3_500)
  })

  it('should accept needles in any case and in the reasoning as well as the content', () => {
    expect(judge(reply({ content: 'needle-bbbbbbbbbb' })).kind).toBe('ok')
  })

  it('should flag foreign content when an earlier request’s needle or tag is quoted', () => {
    const j = judge(
      reply({
        reasoning: 'It opens with “ref987654321 river stone”',
        content: 'NEEDLE-DDDDDDDDDD',
      }),
    )
    expect(j.kind).toBe('foreign-content')
    expect(j.foreign).toEqual([
      { marker: 'REF987654321', step: 3 },
      { marker: 'NEEDLE-DDDDDDDDDD', step: 4 },
    ])
    expect(j.detail).toContain('#3, #4')
    // Foreign content outranks the missing needles it comes with.
    expect(j.missing).toEqual(['start', 'end'])
  })

  it('should not call a needle-shaped string nobody sent a leak', () => {
    const j = judge(reply({ content: 'NEEDLE-AAAAAAAAAA NEEDLE-BBBBBBBBBB NEEDLE-ZZZZZZZZZZ' }))
    expect(j.kind).toBe('ok')
    expect(j.unknownNeedles).toEqual(['NEEDLE-ZZZZZZZZZZ'])
  })

  it('should flag an impossible TTFT, and not one that a real prefill allows', () => {
    const fast = judge(reply({ ttftMs: 0.02 }))
    expect(fast.kind).toBe('impossible-ttft')
    expect(fast.detail).toContain('≥ 3500.0 ms')
    expect(judge(reply({ ttftMs: 3_500 })).kind).toBe('ok')
    // Reported cached tokens need no prefill.
    expect(judge(reply({ ttftMs: 100, cachedTokens: 690_000 })).kind).toBe('ok')
    // No token, no timing verdict (the missing needles decide).
    expect(judge(reply({ ttftMs: null, content: '', reasoning: '' })).kind).toBe('missing-needle')
    // An infinite bound switches the check off.
    const off = judgeAnswer({ prompt, answer: reply({ ttftMs: 0 }), earlier, maxPrefill: Infinity })
    expect(off).toMatchObject({ kind: 'ok', minTtftMs: 0 })
    expect(minTtftMs(1_000, 0)).toBe(0)
  })

  it('should flag a missing start or end needle by name', () => {
    const noEnd = judge(reply({ content: 'NEEDLE-AAAAAAAAAA' }))
    expect(noEnd).toMatchObject({ kind: 'missing-needle', missing: ['end'] })
    expect(noEnd.detail).toBe('the answer lacks the end needle')
    const noStart = judge(reply({ reasoning: '', content: 'NEEDLE-BBBBBBBBBB' }))
    expect(noStart).toMatchObject({ kind: 'missing-needle', missing: ['start'] })
    const empty = judge(reply({ reasoning: '', content: '' }))
    expect(empty.detail).toBe('the answer lacks both needles (the answer was empty)')
  })

  it('should flag a count under 80% of the tokens sent, and not one at or above it', () => {
    const cut = judge(reply({ promptTokens: 512_000 }))
    expect(cut.kind).toBe('usage-mismatch')
    expect(cut.detail).toContain('512,000 prompt tokens for 700,000 sent')
    expect(judge(reply({ promptTokens: 560_000 })).kind).toBe('ok')
    expect(judge(reply({ promptTokens: undefined })).kind).toBe('ok')
  })
})
