import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { guardAi } from '../../src'
import { learnedMinimumMs } from '../../src/core/calibration/baseline'
import { MemoryCalibration } from '../../src/core/calibration/learned'
import type { AiRunner } from '../../src/core/call/upstream'
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
  it("should raise the margin of the prompt's script class at once when the upstream counts more, so the next long prompt is refused", async () => {
    const upstream = overcounting()
    const calibration = new MemoryCalibration()
    const ai = guardAi(upstream, {
      secret: SECRET,
      models: { [MODEL]: PROFILE },
      ceiling: { calibration },
    })
    const prompt = chat(document('TENANT-A', 40_000))
    await ai.run(MODEL, prompt)
    expect(upstream.calls).toBe(1)
    const { drift } = calibration.snapshot(MODEL)
    expect(drift.latin).toBeGreaterThan(0.3)
    // The raise belongs to the class the report spoke about: no other script's ceiling shrinks.
    expect(drift.cyrillic).toBeUndefined()
    const error = await rejection(ai.run(MODEL, prompt))
    expect(error.code).toBe('context_length_exceeded')
    expect(upstream.calls).toBe(1)
  }, 30_000)

  it('should raise a script class at once from an engine refusal that states its count, and no other class', async () => {
    // Russian prose: the engine (a tokenizer outside the family) counts it three times the bound.
    const words = ['привет', 'данные', 'отчёт', 'квартал', 'система', 'решение', 'вопрос', 'работа']
    const russian = Array.from({ length: 12_000 }, (_, i) => words[(i * 7) % words.length]).join(
      ' ',
    )
    const calibration = new MemoryCalibration()
    let calls = 0
    const refusing: AiRunner = {
      run: async () => {
        calls++
        throw new Error(
          'AiError: 5021: The estimated number of input and maximum output tokens (150256) exceeded this model context window limit (200000).',
        )
      },
    }
    const ai = guardAi(refusing, {
      secret: SECRET,
      models: { [MODEL]: PROFILE },
      ceiling: { calibration },
    })
    const first = await rejection(ai.run(MODEL, chat(russian, { max_tokens: 256 })))
    expect(first.status).toBe(400)
    expect(calls).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 0))
    const { drift } = calibration.snapshot(MODEL)
    expect(drift.cyrillic).toBeGreaterThan(1)
    expect(drift.latin).toBeUndefined()
    // The same prompt is now refused by the ceiling, before the engine, naming the script.
    const second = await rejection(ai.run(MODEL, chat(russian, { max_tokens: 256 })))
    expect(second.code).toBe('context_length_exceeded')
    expect(second.message).toMatch(/Cyrillic/i)
    expect(calls).toBe(1)
    // English is untouched: a long English prompt still reaches the engine.
    await rejection(ai.run(MODEL, chat(document('TENANT-A', 20_000))))
    expect(calls).toBe(2)
  }, 30_000)

  it('should not learn from short prompts, nor lower the profile floor', async () => {
    const calibration = new MemoryCalibration()
    const ai = guardAi(overcounting(), {
      secret: SECRET,
      models: { [MODEL]: PROFILE },
      ceiling: { calibration },
    })
    await ai.run(MODEL, chat('a short question'))
    expect(calibration.snapshot(MODEL).drift).toEqual({})
  })
})

describe('GuardState (Durable Object)', () => {
  const ns = (env as unknown as { GUARD_STATE: DurableObjectNamespace<GuardState> }).GUARD_STATE

  it('should share learned margins and timing baselines through storage', async () => {
    const stub = ns.get(ns.idFromName('test-calibration'))
    expect((await stub.snapshot('m')).drift).toEqual({})
    await stub.observeTokens('m', {
      classes: { latin: 100_000 },
      overhead: 0,
      actual: 150_000,
      tenant: 'a',
    })
    const { drift } = await stub.snapshot('m')
    expect(drift.latin).toBeGreaterThan(0.5)
    expect(drift.cyrillic).toBeUndefined()
    const sample = (tenant: string, ttftMs: number) =>
      stub.observeTiming('m', { scriptClass: 'latin', uncachedTokens: 300_000, ttftMs, tenant })
    for (let i = 0; i < 8; i++) await sample('a', 3_000 + i * 100)
    // One tenant alone never sets the bar, however many samples it sends.
    expect(learnedMinimumMs((await stub.snapshot('m')).baseline, 'latin', 300_000)).toBe(0)
    await sample('b', 3_400)
    await sample('b', 3_600)
    await sample('c', 3_800)
    await sample('c', 4_000)
    const { baseline } = await stub.snapshot('m')
    // Tenant a keeps its newest 4 samples (3.4–3.7 s): the lowest of all tenants is 3.4 s, half is 1.7 s.
    expect(learnedMinimumMs(baseline, 'latin', 300_000)).toBeCloseTo(1_700, 0)
    // Other scripts learn nothing from Latin traffic.
    expect(learnedMinimumMs(baseline, 'georgian', 300_000)).toBe(0)
    const report = await stub.all()
    expect(Object.keys(report)).toEqual(['m'])
    expect(report.m?.margins.latin).toBeGreaterThan(0.5)
  })
})
