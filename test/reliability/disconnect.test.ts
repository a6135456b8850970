import { createExecutionContext, env } from 'cloudflare:test'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { aiGuard, guardAi } from '../../src'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { chat } from '../support/prompts'
import { KEY_A } from '../support/worker'
import { chunk, MODEL, SECRET, sse, streaming } from './upstreams'

/**
 * A client that goes away mid-stream must take the upstream with it: the guard cancels the upstream
 * stream (so the model stops generating and its KV pages are freed), and nothing keeps pulling.
 * The upstream here answers a long stream and then never ends, so only a cancel can stop it.
 */
const FAST = { firstTokenMs: 2_000, idleMs: 2_000, responseMs: 2_000 }

function endlessAnswer() {
  return streaming(
    (own) => [
      sse(chunk({ reasoning_content: 'Thinking about the plan.' })),
      sse(chunk({ content: `${own}\nTENANT-A answer begins.` })),
      ...Array.from({ length: 50 }, (_, i) => sse(chunk({ content: ` more ${i}` }))),
    ],
    'hang',
  )
}

/** Reads until some text arrives, then cancels, as a browser tab closing would. */
async function readThenDisconnect(body: ReadableStream<Uint8Array>): Promise<string> {
  const reader = body.getReader()
  const first = await reader.read()
  await reader.cancel('client went away')
  return first.done ? '' : new TextDecoder().decode(first.value)
}

/** Waits a little and reports whether the upstream was pulled any further. */
async function stillPulled(pulled: () => number): Promise<boolean> {
  const at = pulled()
  await new Promise((r) => setTimeout(r, 50))
  return pulled() !== at
}

describe('client disconnects mid-stream', { timeout: 30_000 }, () => {
  it('should cancel the upstream when the guardAi stream is cancelled', async () => {
    const upstream = endlessAnswer()
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'tenant-a', timing: { timeouts: FAST } })
    const out = await ai.run(MODEL, chat('hi', { stream: true }))
    expect(out).toBeInstanceOf(ReadableStream)
    const first = await readThenDisconnect(out as ReadableStream<Uint8Array>)
    expect(first).toContain('data:')
    const recorded = upstream.streams[0]!
    expect(recorded.cancelled()).toBe(true)
    expect(recorded.pulled()).toBeLessThan(52) // it never reached the end of what it could send
    expect(await stillPulled(recorded.pulled)).toBe(false)
  })

  it('should not cancel the upstream of a client that reads to the end', async () => {
    const upstream = streaming((own) => [
      sse(chunk({ content: `${own}\nTENANT-A answer.` })),
      sse(chunk({}, 'stop')),
      sse('[DONE]'),
    ])
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'tenant-a' })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    expect(await new Response(out).text()).toContain('TENANT-A answer.')
    expect(upstream.streams[0]!.cancelled()).toBe(false)
  })

  it('should cancel the upstream when a client of the middleware goes away', async () => {
    const upstream = endlessAnswer()
    const app = new Hono()
    app.use(
      '/chat',
      aiGuard({ secret: SECRET, upstream: () => upstream, timing: { timeouts: FAST } }),
    )
    app.post('/chat', async (c) => {
      const out = await c.var.ai.run(MODEL, await c.req.json())
      return new Response(out as ReadableStream<Uint8Array>, {
        headers: { 'content-type': 'text/event-stream' },
      })
    })
    const res = await app.request('/chat', {
      method: 'POST',
      body: JSON.stringify(chat('hi', { stream: true })),
    })
    expect(res.status).toBe(200)
    await readThenDisconnect(res.body!)
    expect(upstream.streams[0]!.cancelled()).toBe(true)
    expect(await stillPulled(upstream.streams[0]!.pulled)).toBe(false)
  })

  for (const path of ['/v1/chat/completions', `/ai/run/${MODEL}`]) {
    it(`should cancel the upstream when a client of the Worker goes away (${path})`, async () => {
      const upstream = endlessAnswer()
      // A fresh env object gets its own guard, bound to this recording upstream.
      const workerEnv = { ...(env as unknown as Env), AI: upstream }
      const body = path.startsWith('/v1')
        ? { model: MODEL, ...chat('hi', { stream: true }) }
        : chat('hi', { stream: true })
      const res = await worker.fetch(
        new Request(`http://guard.test${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY_A}` },
          body: JSON.stringify(body),
        }),
        workerEnv,
        createExecutionContext(),
      )
      expect(res.status).toBe(200)
      expect(await readThenDisconnect(res.body!)).toContain('data:')
      expect(upstream.streams[0]!.cancelled()).toBe(true)
      expect(await stillPulled(upstream.streams[0]!.pulled)).toBe(false)
    })
  }
})
