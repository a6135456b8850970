/**
 * A settled reservation through the Worker: once the engine has a long prompt its reservation lowers
 * (another long prompt gets in), and a retry of it (a lone missing echo) takes its full charge back
 * first, or is refused with admission's 503 when that no longer fits — nothing sent, nothing released.
 * Long prompts may use 27 MiB less the small floor (8) and the memo's facts of the prompts (about 1.5
 * per body byte): 16–19 MiB. A 0.5 MiB prompt at its full charge (6.5) fits beside a settled 1.5 MiB
 * one (5.5), but that one's full charge (17.5) does not fit beside the settled 0.5 MiB one (2.5).
 */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { SimEngine } from '../../sim/engine'
import type { AiRunner } from '../../src/core/call/upstream'
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { chat } from '../support/prompts'
import { KEY_A, KEY_B } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'
const MIB = 1024 * 1024
const VARS: Partial<Env> = {
  GUARD_MEMORY_BUDGET_BYTES: String(27 * MIB),
  // Long enough for the first prompt's count however loaded the machine; its end fails the test.
  GUARD_ADMISSION_WAIT_MS: '60000',
}
const FAST = { mode: 'fixed', prefillTokensPerSecond: Number.POSITIVE_INFINITY } as const

/** A gate the engine waits at until the test opens it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {}
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { opened, open }
}

/**
 * The engine: prompts carrying `slip` ignore the echo directive on their first call (retried);
 * `before(mark)` runs before a call with that mark is answered (the test holds calls there).
 */
function engine(slip: string, before: (mark: string) => Promise<void>, calls: string[]): AiRunner {
  const slipping = new SimEngine({ ...FAST, echoIgnoreRate: 1 }).binding()
  const honest = new SimEngine(FAST).binding()
  return {
    async run(model, inputs, options) {
      const mark = /MARK-\w+/.exec(JSON.stringify(inputs))?.[0] ?? ''
      const first = !calls.includes(mark)
      calls.push(mark)
      await before(mark)
      return (mark === slip && first ? slipping : honest).run(model, inputs, options)
    },
  }
}

/** A prompt of `chars` through the Worker's app over `bindings`, with its Content-Length (so it may wait). */
function ask(bindings: Env, key: string, mark: string, chars: number): Promise<Response> {
  const body = JSON.stringify({ model: MODEL, ...chat(`${mark} ${english(mark.length, chars)}`) })
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} }
  return Promise.resolve(
    createApp().fetch(
      new Request('http://guard.test/v1/chat/completions', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': String(new TextEncoder().encode(body).byteLength),
        },
        body,
      }),
      bindings,
      ctx as unknown as ExecutionContext,
    ),
  )
}

describe('a settled reservation and its retry through the Worker', () => {
  it('should let a second long prompt in once the first is settled, and refuse the first one’s retry with 503', async () => {
    const calls: string[] = []
    const twoIn = gate()
    const oneAnswered = gate()
    const AI = engine(
      'MARK-ONE',
      async (mark) => {
        // The first call waits for the second prompt's call (it gets in only once the first has
        // settled), or for the second's answer (refused: the test fails, it does not hang).
        if (mark === 'MARK-ONE') await twoIn.opened
        if (mark === 'MARK-TWO') {
          twoIn.open()
          await oneAnswered.opened
        }
      },
      calls,
    )
    const bindings = { ...(env as unknown as Env), ...VARS, AI } as Env
    const first = ask(bindings, KEY_A, 'MARK-ONE', 1.5 * MIB)
    const second = ask(bindings, KEY_B, 'MARK-TWO', MIB / 2).finally(twoIn.open)
    const one = await first
    oneAnswered.open()
    const other = await second
    expect(other.status).toBe(200)
    expect(await other.text()).not.toMatch(/cnry_/)
    // Its retry needs 8 MiB more beside the second prompt: refused before it is sent.
    expect(one.status).toBe(503)
    expect(one.headers.get('retry-after')).toBeTruthy()
    expect(await one.text()).not.toMatch(/cnry_|MARK-ONE/)
    expect(calls).toEqual(['MARK-ONE', 'MARK-TWO'])
  }, 120_000)

  it('should take the full charge back and serve the retry when it fits', async () => {
    const calls: string[] = []
    const AI = engine('MARK-ONE', async () => {}, calls)
    const bindings = { ...(env as unknown as Env), ...VARS, AI } as Env
    const one = await ask(bindings, KEY_A, 'MARK-ONE', MIB)
    expect(one.status).toBe(200)
    const text = await one.text()
    expect(text).not.toMatch(/cnry_/)
    expect(calls).toEqual(['MARK-ONE', 'MARK-ONE'])
  }, 120_000)
})
