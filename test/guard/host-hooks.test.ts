/**
 * The host's memory hooks on a request's attempts: `prefilling` once the engine has each attempt's
 * prompt and the guard's work on it is done (the Worker lowers the request's reservation then), and
 * `retrying` before a retry builds its prompt again — which the host may refuse, and then nothing more
 * is sent and nothing is released.
 */
import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { createGuard, GuardError } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { chat } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'host-hooks-test-secret-0123456789abcdef'
const FAST = { mode: 'fixed', prefillTokensPerSecond: Number.POSITIVE_INFINITY } as const

/** An engine whose first `slips` calls ignore the echo directive (a lone missing echo: retried). */
function engine(slips: number, log: string[]): AiRunner {
  const slipping = new SimEngine({ ...FAST, echoIgnoreRate: 1 }).binding()
  const honest = new SimEngine(FAST).binding()
  let calls = 0
  return {
    run(model, inputs, options) {
      log.push('call')
      return (++calls <= slips ? slipping : honest).run(model, inputs, options)
    },
  }
}

/** One whole request through a guard with the hooks logged; `retrying` may refuse. */
async function request(slips: number, refuseRetry = false) {
  const log: string[] = []
  const pending: Promise<unknown>[] = []
  const guard = createGuard({ secret: SECRET })
  const ai = guard.wrap(engine(slips, log), {
    tenant: 'a',
    waitUntil: (p) => pending.push(p),
    prefilling: () => log.push('prefilling'),
    retrying: () => {
      log.push('retrying')
      if (refuseRetry) {
        throw new GuardError('guard_unavailable', 'No memory for a retry.', {
          retryAfterSeconds: 2,
        })
      }
    },
  })
  const answer = await ai.run(MODEL, chat('Name three rivers of Europe.')).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  )
  await Promise.allSettled(pending)
  return { answer, log }
}

describe('the host’s memory hooks', () => {
  it('should tell the host each time the engine has a prompt, and before a retry builds one', async () => {
    const { answer, log } = await request(1)
    expect(answer).toHaveProperty('value.choices.0.message.content')
    expect(JSON.stringify(answer)).not.toMatch(/cnry_/)
    // The retry is announced before its prompt is built and sent, never after.
    expect(log.filter((e) => e !== 'prefilling')).toEqual(['call', 'retrying', 'call'])
    expect(log.filter((e) => e === 'prefilling')).toHaveLength(2)
  })

  it('should not announce a retry when the first answer is verified', async () => {
    const { answer, log } = await request(0)
    expect(answer).toHaveProperty('value.choices.0.message.content')
    expect(log).toEqual(['call', 'prefilling'])
  })

  it('should send nothing more and release nothing when the host refuses the retry', async () => {
    const { answer, log } = await request(1, true)
    expect(answer).not.toHaveProperty('value')
    expect((answer as { error: GuardError }).error).toMatchObject({
      code: 'guard_unavailable',
      status: 503,
      retryAfterSeconds: 2,
    })
    expect(log.filter((e) => e !== 'prefilling')).toEqual(['call', 'retrying'])
  })
})

describe('the host’s hook on a held answer', () => {
  /** A streamed answer that thinks `reasoning` tokens before its reply, through hooks that log `holding`. */
  async function held(reasoning: number, refuseAt?: number) {
    const told: number[] = []
    const engine = new SimEngine({
      ...FAST,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
      extraReasoningTokens: reasoning,
      tokensPerEvent: 1,
    }).binding()
    const calls: string[] = []
    const counted: AiRunner = {
      run(model, inputs, options) {
        calls.push('call')
        return engine.run(model, inputs, options)
      },
    }
    const guard = createGuard({ secret: SECRET })
    const ai = guard.wrap(counted, {
      tenant: 'a',
      holding: (bytes) => {
        told.push(bytes)
        if (refuseAt !== undefined && bytes >= refuseAt) {
          throw new GuardError('guard_unavailable', 'No memory for this answer.', {
            retryAfterSeconds: 2,
          })
        }
      },
    })
    const outcome = await ai
      .run(MODEL, { ...chat('Think it through, then name three rivers.'), stream: true })
      .then(
        async (out) => ({ text: await new Response(out as ReadableStream).text() }),
        (error: unknown) => ({ error }),
      )
    return { outcome, told, calls }
  }

  it('should tell the host as a long held answer grows, a step at a time', async () => {
    const { outcome, told } = await held(8000)
    expect(outcome).toHaveProperty('text')
    expect((outcome as { text: string }).text).not.toMatch(/cnry_/)
    expect(told.length).toBeGreaterThanOrEqual(2)
    // Growing, a step (256 KiB) or more apart.
    for (let i = 1; i < told.length; i++)
      expect(told[i]! - told[i - 1]!).toBeGreaterThanOrEqual(256 * 1024)
  })

  it('should not bother the host for a short answer', async () => {
    const { outcome, told } = await held(0)
    expect(outcome).toHaveProperty('text')
    expect(told).toEqual([])
  })

  it('should withhold the answer, releasing nothing, when the host refuses what it holds', async () => {
    const { outcome, told, calls } = await held(8000, 256 * 1024)
    expect(outcome).toHaveProperty('error')
    expect((outcome as { error: GuardError }).error).toMatchObject({
      code: 'guard_unavailable',
      status: 503,
    })
    expect(told).toHaveLength(1)
    expect(calls).toEqual(['call'])
  })
})
