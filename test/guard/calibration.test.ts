import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { guardAi } from '../../src'
import { MemoryCalibration } from '../../src/calibration'
import { learnedMinimumMs } from '../../src/timing/baseline'
import type { AiRunner } from '../../src/upstream'
import type { GuardState } from '../../src/worker/state'
import { chat, document, rejection } from '../support/prompts'

const MODEL = 'test/calibrated-model'
const SECRET = 'calibration-test-secret-0123456789abcdef'
const PROFILE = {
  contextWindow: 200_000,
  kvPoolTokens: 100_000,
  maxPrefillTokensPerSecond: 1e9,
  tokenizerDrift: 0.05,
  defaultOutputReserve: 256,
  echo: 'off' as const,
}

/** An upstream whose tokenizer counts 110,000 tokens for the prompt (far more than o200k does). */
function overcounting(): AiRunner & { calls: number } {
  const upstream = {
    calls: 0,
    run: async () => {
      upstream.calls++
      return {
        id: 'x',
        object: 'chat.completion',
        created: 1,
        model: MODEL,
        choices: [
          { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 110_000, completion_tokens: 1, total_tokens: 110_001 },
      }
    },
  }
  return upstream
}

describe('calibration', () => {
  it('should raise the margin at once when the upstream counts more, so the next long prompt is refused', async () => {
    const upstream = overcounting()
    const calibration = new MemoryCalibration()
    const ai = guardAi(upstream, { secret: SECRET, models: { [MODEL]: PROFILE }, calibration })
    const prompt = chat(document('TENANT-A', 70_000))
    await ai.run(MODEL, prompt)
    expect(upstream.calls).toBe(1)
    expect(calibration.snapshot(MODEL).drift).toBeGreaterThan(0.3)
    const error = await rejection(ai.run(MODEL, prompt))
    expect(error.code).toBe('context_length_exceeded')
    expect(error.message).toMatch(/3\d% tokenizer margin/)
    expect(upstream.calls).toBe(1)
  }, 30_000)

  it('should not learn from short prompts, nor lower the profile floor', async () => {
    const calibration = new MemoryCalibration()
    const ai = guardAi(overcounting(), {
      secret: SECRET,
      models: { [MODEL]: PROFILE },
      calibration,
    })
    await ai.run(MODEL, chat('a short question'))
    expect(calibration.snapshot(MODEL).drift).toBe(0)
  })
})

describe('GuardState (Durable Object)', () => {
  const ns = (env as unknown as { GUARD_STATE: DurableObjectNamespace<GuardState> }).GUARD_STATE

  it('should share learned drift and timing baselines through storage', async () => {
    const stub = ns.get(ns.idFromName('test-calibration'))
    expect((await stub.snapshot('m')).drift).toBe(0)
    await stub.observeTokens('m', 100_000, 150_000)
    expect((await stub.snapshot('m')).drift).toBeGreaterThan(0.5)
    for (let i = 0; i < 8; i++) await stub.observeTiming('m', 300_000, 3_000 + i * 100)
    const { baseline } = await stub.snapshot('m')
    // Honest prefills took ≥ 3 s for 300k tokens: half the second-fastest is the learned floor.
    expect(learnedMinimumMs(baseline, 300_000)).toBeCloseTo(1_550, 0)
    expect(Object.keys(await stub.all())).toEqual(['m'])
  })
})
