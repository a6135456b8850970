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
