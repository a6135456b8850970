import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { GuardError, guardAi } from '../../src'
import { chat, counted, document, readAll, rejection } from '../support/prompts'
import { SURFACES } from '../support/surfaces'
import { recordVerdicts } from '../support/verdicts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'test-canary-secret-0123456789abcdef-xyz'

/** An engine fast enough for tests: the guard's profile says 4M tokens/s is the physical limit. */
function engine(mode: 'fixed' | 'pd-abort-leak' = 'fixed') {
  return new SimEngine({ mode, prefillTokensPerSecond: 2_000_000, decodeTokensPerSecond: Infinity })
}

/** No echo and no prefix marker: the upstream reads exactly the client's prompt (byte-identical test). */
const models = {
  [MODEL]: {
    maxPrefillTokensPerSecond: 4_000_000,
    echo: 'scan-only' as const,
    cacheIsolation: 'off' as const,
  },
}

describe('token ceiling', () => {
  for (const [surfaceName, surface] of SURFACES) {
    for (const tokens of [700_000, 1_000_000]) {
      it(`should refuse a ${tokens.toLocaleString('en-US')}-token prompt before any upstream call (${surfaceName})`, async () => {
        const upstream = counted(engine('pd-abort-leak').binding('b'))
        const verdicts = recordVerdicts()
        const send = surface(upstream, {
          secret: SECRET,
          models,
          hooks: { onVerdict: verdicts.onVerdict },
        })
        const out = await send('b', MODEL, chat(document('TENANT-B', tokens)))
        expect(out.status).toBe(400)
        expect(out.code).toBe('context_length_exceeded')
        const message = (JSON.parse(out.body) as { error: { message: string } }).error.message
        expect(message).toContain('681,280')
        expect(message).toContain('1,048,576')
        expect(message).toMatch(/rejects rather than truncates/)
        expect(upstream.calls).toBe(0)
        // The operator sees the refusal too (only its reason: no prompt text).
        expect(verdicts.events.map((v) => [v.tenant, v.action, v.reasons])).toEqual([
          ['b', 'reject', ['context_length_exceeded']],
        ])
      }, 30_000)
    }

    it(`should pass a 300,000-token prompt through byte-identical, whole and streamed (${surfaceName})`, async () => {
      const request = chat(document('TENANT-A', 300_000), { max_tokens: 64 })
      for (const stream of [false, true]) {
        const inputs = { ...request, stream }
        const direct = await engine().binding('a').run(MODEL, inputs)
        const guarded = await surface(engine().binding('a'), { secret: SECRET, models })(
          'a',
          MODEL,
          inputs,
        )
        expect(guarded.status).toBe(200)
        const expected = stream
          ? await readAll(direct as ReadableStream<Uint8Array>)
          : JSON.stringify(direct)
        expect(guarded.body).toBe(expected)
        expect(guarded.text).toContain('TENANT-A ledger entry')
      }
    }, 60_000)
  }

  it('should reject with the GuardError itself through guardAi', async () => {
    const upstream = counted(engine('pd-abort-leak').binding('b'))
    const { onVerdict } = recordVerdicts()
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'b', models, hooks: { onVerdict } })
    const error = await rejection(ai.run(MODEL, chat(document('TENANT-B', 700_000))))
    expect(error).toBeInstanceOf(GuardError)
    expect(error.status).toBe(400)
    expect(upstream.calls).toBe(0)
  }, 30_000)

  it('should count the output reserve: a prompt that fits alone is refused with a huge max_tokens', async () => {
    const upstream = counted(engine().binding('a'))
    const { onVerdict } = recordVerdicts()
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'a', models, hooks: { onVerdict } })
    const inputs = chat(document('TENANT-A', 100_000), { max_tokens: 600_000 })
    const error = await rejection(ai.run(MODEL, inputs))
    expect(error.code).toBe('context_length_exceeded')
    expect(error.message).toContain('600,000 reserved for output')
    expect(upstream.calls).toBe(0)
  }, 30_000)

  it('should clamp max_tokens instead when overflow is clamp-output and the prompt alone fits', async () => {
    const upstream = counted(engine().binding('a'))
    const ai = guardAi(upstream, {
      secret: SECRET,
      tenant: 'a',
      models,
      ceiling: { overflow: 'clamp-output' },
    })
    const out = (await ai.run(
      MODEL,
      chat(document('TENANT-A', 100_000), { max_tokens: 600_000 }),
    )) as {
      choices: { message: { content: string } }[]
    }
    expect(upstream.calls).toBe(1)
    expect(out.choices[0]!.message.content).toContain('TENANT-A')
  }, 30_000)

  it('should refuse a model without a profile by default, naming it', async () => {
    const upstream = counted(engine().binding('a'))
    const ai = guardAi(upstream, { secret: SECRET })
    const error = await rejection(ai.run('@cf/unknown/model', chat('hello')))
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain('@cf/unknown/model')
    expect(upstream.calls).toBe(0)
  })
})

describe('guard options', () => {
  const upstream = { run: async () => ({}) }
  it('should name a missing or short secret', () => {
    expect(() => guardAi(upstream, { secret: 'short' })).toThrow(/"secret"/)
    expect(() => guardAi(upstream, {} as never)).toThrow(/"secret"/)
  })
  it('should name a negative pool', () => {
    expect(() =>
      guardAi(upstream, { secret: SECRET, models: { [MODEL]: { kvPoolTokens: -1 } } }),
    ).toThrow(/kvPoolTokens/)
  })
  it('should accept a valid configuration', () => {
    expect(guardAi(upstream, { secret: SECRET, models }).run).toBeTypeOf('function')
  })
})
