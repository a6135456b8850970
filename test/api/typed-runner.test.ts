import { Hono } from 'hono'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { type AiAnswer, aiGuard, sseResponse } from '../../src'
import { hasCanary } from '../support/leak-scenario'
import { document, sseText } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'typed-runner-canary-secret-0123456789abcdef'

/** A Hono app whose handler uses c.var.ai's typed results, no casts: what the README shows. */
function app() {
  const engine = new SimEngine({ decodeTokensPerSecond: Number.POSITIVE_INFINITY })
  const hono = new Hono()
  hono.use(
    '/chat',
    aiGuard({ secret: SECRET, tenant: 'alice', upstream: () => engine.binding('a') }),
  )
  hono.post('/chat', async (c) => {
    const { question, stream } = await c.req.json<{ question: string; stream?: boolean }>()
    const messages = [{ role: 'user', content: question }]
    if (stream === true) {
      const bytes = await c.var.ai.run(MODEL, { messages, stream: true })
      expectTypeOf(bytes).toEqualTypeOf<ReadableStream<Uint8Array>>()
      return sseResponse(bytes)
    }
    const answer = await c.var.ai.run(MODEL, { messages })
    expectTypeOf(answer).toEqualTypeOf<AiAnswer>()
    // Typed: the text is read without a cast.
    return c.json({ text: answer.choices?.[0]?.message.content ?? null })
  })
  return hono
}

function ask(hono: Hono, body: unknown): Promise<Response> {
  return Promise.resolve(
    hono.request('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )
}

describe("c.var.ai's typed results and sseResponse", () => {
  it('should give a whole answer as a typed object, canary removed', async () => {
    const res = await ask(app(), { question: document('ALICE', 400) })
    expect(res.status).toBe(200)
    const { text } = (await res.json()) as { text: string | null }
    expect(text).toContain('ALICE ledger entry')
    expect(hasCanary(text ?? '')).toBe(false)
  })

  it('should send a stream as SSE with the guard request id', async () => {
    const res = await ask(app(), { question: document('ALICE', 400), stream: true })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(res.headers.get('x-guard-request-id')).toBeTruthy()
    const body = await res.text()
    expect(sseText(body).content).toContain('ALICE')
    expect(hasCanary(body)).toBe(false)
  })

  // Must not fire: a stream the guard never saw carries no request id, only the SSE headers.
  it('should add no request id to a stream that is not the guard’s', async () => {
    const res = sseResponse(new Response('data: [DONE]\n\n').body!, { status: 200 })
    expect(res.headers.get('x-guard-request-id')).toBeNull()
    expect(res.headers.get('cache-control')).toBe('no-cache')
  })
})
