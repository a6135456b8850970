import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { CANARY_PATTERN, guardAi } from '../../src'
import { chat, document, readAll, sseText } from '../support/prompts'

/** Workers AI's older models answer `{ response }` and stream `data: {"response": …}`. */
const LEGACY = '@cf/meta/llama-3.1-8b-instruct'
const SECRET = 'legacy-test-canary-secret-0123456789abcdef'
const profile = {
  contextWindow: 16_384,
  kvPoolTokens: 16_384,
  maxPrefillTokensPerSecond: 800_000,
  tokenizerDrift: 0.1,
  defaultOutputReserve: 256,
}
const SIM = {
  poolTokens: 8_192,
  contextWindow: 16_384,
  prefillTokensPerSecond: 400_000,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
}

function setup() {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...SIM, mode: 'pd-abort-leak' }, { clock })
  const runner = (tenant: string) =>
    guardAi(engine.binding('account'), {
      secret: SECRET,
      tenant,
      models: { [LEGACY]: profile },
      timing: { minEvidenceMs: 5 },
      hooks: { now: () => clock.now() },
    })
  return { runner }
}

describe('the legacy { response } format', () => {
  it('should release its own answer without the canary, whole and streamed', async () => {
    const { runner } = setup()
    const whole = (await runner('a').run(LEGACY, chat(document('TENANT-A', 2_000)))) as {
      response: string
    }
    expect(whole.response).toContain('TENANT-A')
    expect(whole.response).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))
    const body = await readAll(
      (await runner('a').run(
        LEGACY,
        chat(document('TENANT-A', 2_000), { stream: true }),
      )) as ReadableStream<Uint8Array>,
    )
    expect(body).toContain('"response"')
    expect(sseText(body).content).toContain('TENANT-A')
    expect(body).not.toMatch(/cnry/i)
  }, 30_000)

  it('should withhold a leaked legacy answer', async () => {
    const { runner } = setup()
    await runner('a').run(LEGACY, chat(document('TENANT-A', 6_000)))
    for (const stream of [false, true]) {
      const error = await runner('b')
        // About 12,100 tokens for the simulated model (Qwen3): over the pool, under the wrong ceiling.
        .run(LEGACY, chat(document('TENANT-B', 9_300), { stream }))
        .then(
          () => undefined,
          (e: unknown) => e as { code?: string },
        )
      expect(error?.code).toBe('response_quarantined')
    }
  }, 30_000)
})
