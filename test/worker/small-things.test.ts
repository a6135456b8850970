/**
 * @module What a user notices first: the Worker's small surfaces behave as an
 * OpenAI-compatible endpoint's do.
 */
import { env, SELF } from 'cloudflare:test'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { chat, document } from '../support/prompts'
import { get, KEY_A, post, sim } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'

/** An OpenAI chat chunk, as far as these tests read it. */
interface Chunk {
  choices: { delta?: Record<string, string>; finish_reason: string | null }[]
  usage?: unknown
}

beforeEach(async () => {
  await sim.reset({
    mode: 'fixed',
    prefillTokensPerSecond: 500_000,
    decodeTokensPerSecond: Infinity,
  })
})

describe('streamed deltas', () => {
  it('should send no chunk whose delta the guard emptied, and keep role, finish and usage', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: MODEL, stream: true, ...chat(document('TENANT-A', 400)) },
      KEY_A,
    )
    const events = (await res.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice('data: '.length)) as Chunk)
    const blank = events.filter((e) => {
      const delta = e.choices[0]?.delta
      return (
        e.choices.length === 1 &&
        e.choices[0]!.finish_reason === null &&
        delta !== undefined &&
        Object.values(delta).every((v) => v === '')
      )
    })
    expect(blank).toEqual([])
    expect(events[0]!.choices[0]!.delta?.role).toBe('assistant')
    expect(events.some((e) => e.choices[0]?.finish_reason === 'stop')).toBe(true)
    expect(events.some((e) => e.usage !== undefined)).toBe(true)
  })
})

/** An OpenAI error body, as far as these tests read it. */
interface ErrorReply {
  error: { message: string; type: string; code: string; param: string | null }
}

/** The Worker's app over the test bindings with `vars` changed (a fresh guard: one per env object). */
function fetchWith(vars: Partial<Env>, path: string, init?: RequestInit): Promise<Response> {
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} }
  const bindings = { ...(env as unknown as Env), ...vars }
  return Promise.resolve(
    createApp().fetch(
      new Request(`http://guard.test${path}`, init),
      bindings,
      ctx as unknown as ExecutionContext,
    ),
  )
}

describe('GET /v1/models', () => {
  it('should list the guarded models in OpenAI list shape, behind the tenant key', async () => {
    expect((await get('/v1/models')).status).toBe(401)
    const res = await get('/v1/models', KEY_A)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { object: string; data: Record<string, unknown>[] }
    expect(body.object).toBe('list')
    expect(body.data).toContainEqual({
      id: MODEL,
      object: 'model',
      created: 0,
      owned_by: 'zai-org',
    })
  })

  it('should add the models GUARD_MODELS gives a profile', async () => {
    const extra = '@cf/example/tiny-chat'
    const models = JSON.stringify({
      [extra]: {
        contextWindow: 32_768,
        kvPoolTokens: 32_768,
        maxPrefillTokensPerSecond: 50_000,
        tokenizerDrift: 0.1,
        defaultOutputReserve: 1_024,
      },
    })
    const res = await fetchWith({ GUARD_MODELS: models }, '/v1/models', {
      headers: { authorization: `Bearer ${KEY_A}` },
    })
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)
    expect(ids).toContain(extra)
    expect(ids).toContain(MODEL)
  })
})

describe('wrong methods', () => {
  for (const [method, path, allow] of [
    ['GET', '/v1/chat/completions', 'POST'],
    ['PUT', '/v1/chat/completions', 'POST'],
    ['POST', '/v1/models', 'GET'],
    ['GET', `/ai/run/${MODEL}`, 'POST'],
  ] as const) {
    it(`should answer ${method} ${path} with 405, Allow: ${allow} and an OpenAI error`, async () => {
      const res = await SELF.fetch(`http://guard.test${path}`, {
        method,
        headers: { authorization: `Bearer ${KEY_A}` },
      })
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe(allow)
      const body = (await res.json()) as ErrorReply
      expect(body.error.code).toBe('method_not_allowed')
      expect(body.error.type).toBe('invalid_request_error')
      expect(body.error.message).toContain(allow)
    })
  }
})

describe('message roles', () => {
  it('should refuse a role OpenAI does not have, naming messages[i].role, with no upstream call', async () => {
    const before = (await sim.stats()).requests.total
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'wizard', content: 'hi' },
    ]
    const res = await post('/v1/chat/completions', { model: MODEL, messages }, KEY_A)
    expect(res.status).toBe(400)
    const body = (await res.json()) as ErrorReply
    expect(body.error.code).toBe('invalid_request')
    expect(body.error.param).toBe('messages[1].role')
    expect(body.error.message).toContain('user')
    expect((await sim.stats()).requests.total).toBe(before)
  })

  it('should take every OpenAI role', async () => {
    const messages = ['system', 'developer', 'user'].map((role) => ({ role, content: 'hi' }))
    const res = await post('/v1/chat/completions', { model: MODEL, messages }, KEY_A)
    expect(res.status).toBe(200)
  })
})

describe('an unknown model', () => {
  for (const [path, body] of [
    ['/v1/chat/completions', { model: '@cf/example/unknown', ...chat('hi') }],
    ['/ai/run/@cf/example/unknown', chat('hi')],
  ] as const) {
    it(`should answer the tenant 404 model_not_found and log the operator's hint (${path})`, async () => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
      const before = (await sim.stats()).requests.total
      let res: Response
      let logged: string[]
      try {
        res = await post(path, body, KEY_A)
        logged = warn.mock.calls.map((c) => String(c[0])).filter((l) => l.includes('unknown_model'))
      } finally {
        warn.mockRestore()
      }
      expect(res.status).toBe(404)
      const reply = (await res.json()) as ErrorReply
      expect(reply.error).toMatchObject({
        code: 'model_not_found',
        type: 'invalid_request_error',
        param: 'model',
      })
      expect(reply.error.message).toContain('@cf/example/unknown')
      // The tenant is told nothing it cannot act on; the operator's remedy is in the log.
      expect(reply.error.message).not.toContain('GUARD_MODELS')
      expect(logged).toHaveLength(1)
      expect(JSON.parse(logged[0]!)).toMatchObject({ model: '@cf/example/unknown' })
      expect(logged[0]).toContain('GUARD_MODELS')
      expect((await sim.stats()).requests.total).toBe(before)
    })
  }

  // Must not fire: a guarded model is answered, and nothing is logged about it.
  it('should answer a guarded model without the hint', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      const res = await post('/v1/chat/completions', { model: MODEL, ...chat('hi') }, KEY_A)
      expect(res.status).toBe(200)
      expect(warn.mock.calls.filter((c) => String(c[0]).includes('unknown_model'))).toEqual([])
    } finally {
      warn.mockRestore()
    }
  })
})

describe('tool calling through the Worker, on the simulator', () => {
  const tools = [
    {
      type: 'function',
      function: {
        name: 'lookup_order',
        parameters: { type: 'object', properties: { order_id: { type: 'string' } } },
      },
    },
  ]

  it('should deliver the simulated tool call, whole and streamed', async () => {
    // Left to the model (no tool_choice), the simulator calls a tool the user names.
    const ask = chat('Use lookup_order for order 7.')
    const res = await post('/v1/chat/completions', { model: MODEL, ...ask, tools }, KEY_A)
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      choices: {
        message: { tool_calls?: { function: { name: string; arguments: string } }[] }
        finish_reason: string
      }[]
    }
    expect(body.choices[0]!.finish_reason).toBe('tool_calls')
    expect(body.choices[0]!.message.tool_calls?.[0]?.function).toEqual({
      name: 'lookup_order',
      arguments: '{"order_id":"simulated"}',
    })
    const streamed = await post(
      '/v1/chat/completions',
      { model: MODEL, ...ask, tools, stream: true },
      KEY_A,
    )
    const text = await streamed.text()
    expect(streamed.status).toBe(200)
    expect(text).toContain('"name":"lookup_order"')
    expect(text).toContain('"finish_reason":"tool_calls"')
  })

  // Must not fire: without tools, or with tools the request does not ask for, no call.
  it('should answer without a tool call when none is offered or wanted', async () => {
    for (const extra of [{}, { tools }]) {
      const res = await post(
        '/v1/chat/completions',
        { model: MODEL, ...chat('Order 7?'), ...extra },
        KEY_A,
      )
      expect(await res.text()).not.toContain('tool_calls')
    }
  })
})
