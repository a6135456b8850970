import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import worker from '../../sim/worker'
import { GLM, readSse, secretLines } from './helpers'

// SELF is the guard Worker, so the simulator's HTTP surface is tested by calling its handler directly:
// `simFetchHandler(engine)` on a fresh engine, and the Worker's default export (its module engine).
function sim() {
  return simFetchHandler(
    new SimEngine({
      poolTokens: 4096,
      prefillTokensPerSecond: Infinity,
      decodeTokensPerSecond: Infinity,
    }),
  )
}
function chat(body: Record<string, unknown>, account?: string): Request {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (account) headers.authorization = `Bearer ${account}`
  return new Request('http://sim/v1/chat/completions', {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: GLM, ...body }),
  })
}
const post = (path: string, body?: unknown) =>
  new Request(`http://sim${path}`, {
    method: 'POST',
    body: body === undefined ? '' : JSON.stringify(body),
  })

describe('simulator HTTP surface', () => {
  it('should serve OpenAI chat completions, with the bearer token as the cache account', async () => {
    const handle = sim()
    const messages = [{ role: 'user', content: secretLines('A', 40) }]
    const first = await handle(chat({ messages }, 'tenant-a'))
    expect(first.status).toBe(200)
    const body = (await first.json()) as {
      object: string
      choices: { message: { content: string } }[]
    }
    expect(body.object).toBe('chat.completion')
    expect(body.choices[0]!.message.content).toContain('SECRET-A')
    const same = (await (await handle(chat({ messages }, 'tenant-a'))).json()) as {
      usage: { prompt_tokens_details: { cached_tokens: number } }
    }
    const other = (await (await handle(chat({ messages }, 'tenant-b'))).json()) as typeof same
    expect(same.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0)
    expect(other.usage.prompt_tokens_details.cached_tokens).toBe(0)
  })

  it('should scope the cache by a cache_salt body field, and refuse an empty one with a 400', async () => {
    const handle = sim()
    const messages = [{ role: 'user', content: secretLines('A', 40) }]
    type Body = { usage: { prompt_tokens_details: { cached_tokens: number } } }
    const hit = async (body: Record<string, unknown>) =>
      ((await (await handle(chat(body, 'gateway'))).json()) as Body).usage.prompt_tokens_details
        .cached_tokens
    expect(await hit({ messages, cache_salt: 'tenant-a-salt' })).toBe(0)
    expect(await hit({ messages, cache_salt: 'tenant-b-salt' })).toBe(0)
    expect(await hit({ messages })).toBe(0)
    expect(await hit({ messages, cache_salt: 'tenant-a-salt' })).toBeGreaterThan(0)
    const empty = await handle(chat({ messages, cache_salt: '' }, 'gateway'))
    expect(empty.status).toBe(400)
    const error = ((await empty.json()) as { error: { message: string } }).error
    expect(error.message).toContain("'cache_salt' must be a non-empty string")
  })

  it('should stream SSE when stream is true', async () => {
    const res = await sim()(
      chat({ messages: [{ role: 'user', content: 'stream please' }], stream: true }, 'a'),
    )
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const read = await readSse(res.body)
    expect(read.content).toContain('stream please')
    expect(read.done).toBe(true)
  })

  it('should map an over-length prompt in fixed mode to a 400 OpenAI error with SGLang’s text', async () => {
    const handle = sim()
    expect((await handle(post('/sim/config', { mode: 'fixed' }))).status).toBe(200)
    const res = await handle(
      chat({ messages: [{ role: 'user', content: 'x '.repeat(5000) }] }, 'b'),
    )
    expect(res.status).toBe(400)
    const body = (await res.json()) as { error: Record<string, unknown> }
    expect(body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
      param: 'messages',
    })
    expect(body.error.message).toMatch(
      /Input length \(\d+ tokens\) exceeds the maximum allowed length \(4090 tokens\)/,
    )
  })

  it('should map a window refusal to a 400 stating prompt + max_tokens', async () => {
    const handle = sim()
    await handle(post('/sim/config', { contextWindow: 3000 }))
    const res = await handle(
      chat({ messages: [{ role: 'user', content: 'x '.repeat(5000) }], max_tokens: 50 }, 'b'),
    )
    expect(res.status).toBe(400)
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('context_length_exceeded')
    const n = await new SimEngine().countTokens({
      messages: [{ role: 'user', content: 'x '.repeat(5000) }],
    })
    expect(body.error.message).toBe(
      `AiError: 5021: The estimated number of input and maximum output tokens (${n + 50}) exceeded this model context window limit (3000).`,
    )
  })

  it('should answer the same over-length prompt with a 200 in pd-abort-leak mode', async () => {
    const handle = sim()
    await handle(chat({ messages: [{ role: 'user', content: secretLines('A', 100) }] }, 'a'))
    const res = await handle(
      chat({ messages: [{ role: 'user', content: 'x '.repeat(5000) }] }, 'b'),
    )
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('SECRET-A')
  })

  it('should map capacity exhaustion to 429', async () => {
    const handle = sim()
    await handle(post('/sim/config', { queueTimeoutMs: 20, mode: 'fixed' }))
    const held = await handle(
      chat({ messages: [{ role: 'user', content: secretLines('A', 110) }], stream: true }, 'a'),
    )
    const res = await handle(
      chat({ messages: [{ role: 'user', content: secretLines('B', 80) }] }, 'b'),
    )
    expect(res.status).toBe(429)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('capacity_exceeded')
    await held.body?.cancel()
  })

  it('should configure, report and reset over /sim/*, with Infinity as a string', async () => {
    const handle = sim()
    const config = await handle(
      post('/sim/config', {
        mode: 'truncate',
        decodeTokensPerSecond: 'Infinity',
        tokenizer: 'llama3',
      }),
    )
    expect(((await config.json()) as { config: Record<string, unknown> }).config).toMatchObject({
      mode: 'truncate',
      decodeTokensPerSecond: 'Infinity',
      tokenizer: 'llama3',
    })
    await handle(chat({ messages: [{ role: 'user', content: 'hi' }] }, 'a'))
    const stats = (await (await handle(new Request('http://sim/sim/stats'))).json()) as {
      requests: { total: number; byMode: Record<string, number> }
      pool: { totalPages: number }
    }
    expect(stats.requests.total).toBe(1)
    expect(stats.requests.byMode.truncate).toBe(1)
    expect(stats.pool.totalPages).toBe(64)
    const reset = (await (await handle(post('/sim/reset'))).json()) as {
      config: { mode: string; tokenizer: string }
    }
    expect(reset.config).toMatchObject({ mode: 'pd-abort-leak', tokenizer: 'qwen3' })
    const after = (await (await handle(new Request('http://sim/sim/stats'))).json()) as typeof stats
    expect(after.requests.total).toBe(0)
  })

  it('should refuse bad config, bad JSON, a missing model and unknown routes', async () => {
    const handle = sim()
    const bad = await handle(post('/sim/config', { poolTokens: -1 }))
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(
      /poolTokens/,
    )
    const tokenizer = await handle(post('/sim/config', { tokenizer: 'o200k' }))
    expect(tokenizer.status).toBe(400)
    expect(((await tokenizer.json()) as { error: { message: string } }).error.message).toMatch(
      /tokenizer must be one of qwen3, deepseek_v3, llama3, gemma3, cl100k/,
    )
    const json = await handle(
      new Request('http://sim/v1/chat/completions', { method: 'POST', body: '{' }),
    )
    expect(json.status).toBe(400)
    const noModel = await handle(
      new Request('http://sim/v1/chat/completions', { method: 'POST', body: '{"messages":[]}' }),
    )
    expect(((await noModel.json()) as { error: { param: string } }).error.param).toBe('model')
    expect((await handle(new Request('http://sim/nope'))).status).toBe(404)
  })

  it('should serve the same routes from the Worker’s default export', async () => {
    expect(
      (
        await worker.fetch(
          post('/sim/reset', { poolTokens: 4096, decodeTokensPerSecond: 'Infinity' }),
        )
      ).status,
    ).toBe(200)
    const res = await worker.fetch(
      chat({ messages: [{ role: 'user', content: 'via default export' }] }, 'a'),
    )
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('via default export')
  })
})
