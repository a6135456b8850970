import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { guardAi } from '../../src'
import { chat, counted, document, rejection } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'cutoff-test-canary-secret-0123456789abcdef'

function setup() {
  const clock = new VirtualClock()
  const engine = new SimEngine({ mode: 'fixed', decodeTokensPerSecond: 100 }, { clock })
  const upstream = counted(engine.binding('a'))
  const ai = guardAi(upstream, { secret: SECRET, tenant: 'a', hooks: { now: () => clock.now() } })
  return { upstream, ai }
}

describe('an output limit too small for the echo', () => {
  for (const stream of [false, true]) {
    it(`should withhold once, without retrying or an incident, and tell the client to raise max_tokens (${stream ? 'stream' : 'whole'})`, async () => {
      const { upstream, ai } = setup()
      // GLM-5.3 reasons first: 20 tokens end inside the reasoning, before any visible reply.
      const error = await rejection(
        ai.run(MODEL, chat(document('TENANT-A', 500), { max_tokens: 20, stream })),
      )
      // A client error, not a leak: 400 naming max_tokens, nothing of the answer, no incident id.
      expect([error.status, error.code, error.param]).toEqual([
        400,
        'invalid_request',
        'max_tokens',
      ])
      expect(error.message).toMatch(/Raise max_tokens/)
      expect(error.message).not.toContain('TENANT-A')
      expect(error.incidentId).toBeUndefined()
      expect(upstream.calls).toBe(1)
    })
  }

  it('should release the same request with room to answer', async () => {
    const { upstream, ai } = setup()
    const out = (await ai.run(MODEL, chat(document('TENANT-A', 500), { max_tokens: 400 }))) as {
      choices: { message: { content: string } }[]
    }
    expect(out.choices[0]!.message.content).toContain('TENANT-A')
    expect(upstream.calls).toBe(1)
  })
})
