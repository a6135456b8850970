import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { guardAi, guardInfo } from '../../src'
import { chat, counted, document } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'via-stream-test-secret-0123456789abcdef'

describe('whole answers to long prompts, fetched as streams', () => {
  it('should return the same object, byte for byte, as the upstream answers whole', async () => {
    // Long enough for timing to judge (60k tokens at the 200,000 tok/s bound is 300 ms), so the guard
    // asks the upstream for a stream, times its first token, and reassembles the whole answer.
    const inputs = chat(document('TENANT-A', 60_000), { max_tokens: 200 })
    const fresh = () => {
      const clock = new VirtualClock()
      return {
        clock,
        engine: new SimEngine({ mode: 'fixed', decodeTokensPerSecond: 100 }, { clock }),
      }
    }
    const a = fresh()
    const direct = await a.engine.binding('a').run(MODEL, inputs)
    const b = fresh()
    const binding = b.engine.binding('a')
    const sent: Record<string, unknown>[] = []
    const upstream = counted({
      run: (model: string, body: Record<string, unknown>) => {
        sent.push(body)
        return binding.run(model, body)
      },
    })
    const ai = guardAi(upstream, {
      secret: SECRET,
      tenant: 'a',
      // Without the tenant's prefix marker, so the upstream reads exactly the client's prompt.
      models: { [MODEL]: { echo: 'scan-only', cacheIsolation: 'off' } },
      hooks: { now: () => b.clock.now() },
    })
    const guarded = await ai.run(MODEL, inputs)
    expect(upstream.calls).toBe(1)
    expect(sent[0]?.stream).toBe(true)
    expect(b.engine.stats().recent.at(-1)?.outcome).toBe('served')
    expect(JSON.stringify(guarded)).toBe(JSON.stringify(direct))
    expect(guardInfo(guarded)?.attempts).toBe(1)
  }, 60_000)
})
