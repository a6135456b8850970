import { describe, expect, it } from 'vitest'
import { ceilingFor } from '../../src/core/ceiling/ceiling'
import { estimateTexts } from '../../src/core/ceiling/estimate'
import { promptPieces } from '../../src/core/ceiling/prompt'
import { GuardError } from '../../src/core/errors'
import { admit } from '../../src/core/plan/preflight'
import type { ModelProfile } from '../../src/core/vocabulary/options'
import { prose, rng } from './gen'

const MODEL = '@cf/zai-org/glm-5.3'
const PROFILE: ModelProfile = {
  contextWindow: 1_048_576,
  kvPoolTokens: 681_280,
  maxPrefillTokensPerSecond: 200_000,
  tokenizerDrift: 0.03, // the recommended built-in margin on top of the family bound
  defaultOutputReserve: 4_096,
  echo: 'require',
  directive: 'reply-first',
  cacheIsolation: 'off',
}
const SMALL: ModelProfile = { ...PROFILE, contextWindow: 40_000, kvPoolTokens: 20_000 }

const GEORGIAN =
  'ვინაიდან ადამიანთა ოჯახის ყველა წევრისათვის დამახასიათებელი ღირსების და თანასწორი და ' +
  'განუყოფელი უფლებების აღიარება წარმოადგენს თავისუფლების, სამართლიანობის და მშვიდობის საფუძველს. '
const HINDI =
  'चूंकि मानव परिवार के सभी सदस्यों के जन्मजात गौरव और समान तथा अविच्छिन्न अधिकार की स्वीकृति ही ' +
  'विश्व-शान्ति, न्याय और स्वतन्त्रता की बुनियाद है। '

async function refusal(promise: Promise<unknown>): Promise<GuardError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof GuardError) return error
    throw error
  }
  throw new Error('admitted')
}

describe('admit', () => {
  it('should refuse a Georgian prompt o200k counts far below the pool, and say why', async () => {
    // ~4k o200k tokens: 0.1 (o200k + 10%) admitted it into a 20k pool; the family counts ~27k.
    const pieces = promptPieces({ prompt: GEORGIAN.repeat(70) })
    const estimate = await estimateTexts(pieces.texts)
    expect(estimate.o200k * 1.1).toBeLessThan(ceilingFor(SMALL, 4_096))
    const error = await refusal(
      admit({
        profile: SMALL,
        model: MODEL,
        pieces,
        maxTokens: undefined,
        learned: {},
        overflow: 'reject',
      }),
    )
    expect(error.code).toBe('context_length_exceeded')
    expect(error.message).toMatch(/mostly Georgian script \(\d+% of the estimate\)/)
    expect(error.message).toMatch(/splits about \d+\.\d× finer than English/)
  })

  it('should explain a Hindi refusal the same way', async () => {
    const error = await refusal(
      admit({
        profile: SMALL,
        model: MODEL,
        pieces: promptPieces({ prompt: HINDI.repeat(150) }),
        maxTokens: undefined,
        learned: {},
        overflow: 'reject',
      }),
    )
    expect(error.message).toMatch(/mostly Devanagari script/)
  })

  it('should admit English at 95% of the ceiling, and report the family estimate', async () => {
    const text = prose(rng(51), 12_000)
    const pieces = promptPieces({ prompt: text })
    const estimate = await estimateTexts(pieces.texts)
    const profile = { ...SMALL, kvPoolTokens: Math.ceil(estimate.o200k / 0.95) + 4_096 }
    const admission = await admit({
      profile,
      model: MODEL,
      pieces,
      maxTokens: undefined,
      learned: {},
      overflow: 'reject',
    })
    expect(admission).toMatchObject({ method: 'count', estimated: estimate.bound, drift: 0.03 })
    expect(admission.estimate?.lower).toBeLessThanOrEqual(estimate.o200k)
    expect(admission.margins.latin).toBe(0.03)
  })

  it("should apply a class's learned margin only to that class", async () => {
    const text = prose(rng(52), 12_000)
    const pieces = promptPieces({ prompt: text })
    const estimate = await estimateTexts(pieces.texts)
    const profile = { ...SMALL, kvPoolTokens: Math.ceil(estimate.bound * 1.04) + 20 + 4_096 }
    // A Russian or Georgian raise leaves English alone; an English raise does not.
    const learned = { cyrillic: 0.9, georgian: 2 }
    await expect(
      admit({ profile, model: MODEL, pieces, maxTokens: undefined, learned, overflow: 'reject' }),
    ).resolves.toBeTruthy()
    const raised = await refusal(
      admit({
        profile,
        model: MODEL,
        pieces,
        maxTokens: undefined,
        learned: { latin: 0.5 },
        overflow: 'reject',
      }),
    )
    expect(raised.message).toMatch(/50% tokenizer margin/)
    // A learned figure that is not a number is ignored; the profile's floor still applies.
    const floor = await admit({
      profile,
      model: MODEL,
      pieces,
      maxTokens: undefined,
      learned: { latin: Number.NaN },
      overflow: 'reject',
    })
    expect(floor.margins.latin).toBe(0.03)
  })

  it('should clamp the output instead of refusing when only the reserve overflows', async () => {
    const pieces = promptPieces({ prompt: prose(rng(53), 6_000) })
    const admission = await admit({
      profile: SMALL,
      model: MODEL,
      pieces,
      maxTokens: 19_000,
      learned: {},
      overflow: 'clamp-output',
    })
    expect(admission.clampTo).toBeGreaterThan(256)
    expect(admission.clampTo).toBeLessThan(19_000)
  })

  it('should decide a small prompt on bytes, with no estimate', async () => {
    const admission = await admit({
      profile: PROFILE,
      model: MODEL,
      pieces: promptPieces({ prompt: 'Hei' }),
      maxTokens: 100,
      learned: {},
      overflow: 'reject',
    })
    expect(admission).toMatchObject({ method: 'bytes', estimated: 3 })
    expect(admission.estimate).toBeUndefined()
  })
})
