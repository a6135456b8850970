import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import { GuardError, guardAi } from '../../src'
import { openAiHttpUpstream } from '../../src/core/adapters'
import { hasCanary, LEAK, leakScenario } from '../support/leak-scenario'
import { chat, document, readAll, rejection, sseText } from '../support/prompts'
import { captureWarnings } from '../support/verdicts'

/** The adapter in front of the simulator's OpenAI-compatible HTTP surface, in-process (no socket). */
function overHttp(engine: SimEngine, calls: Request[] = []) {
  const handle = simFetchHandler(engine)
  return openAiHttpUpstream({
    baseUrl: 'http://sim.test/v1/',
    apiKey: 'account',
    headers: { 'x-deployment': 'glm-pool-a' },
    fetch: async (url, init) => {
      const request = new Request(url, init)
      calls.push(request.clone())
      return handle(request)
    },
  })
}

// Every test builds its own guards on purpose: guardAi's notice about many option sets is expected.
captureWarnings(/guardAi was called with more than \d+ different option sets/)

/**
 * vLLM/SGLang request fields a client must never get to the engine: the first three can make it copy
 * the prompt's final directive (a valid echo) into an answer; logprobs put text where the scanner
 * does not look; templates, documents and raw change what the model reads beyond what was counted.
 */
const DANGEROUS: Record<string, unknown> = {
  echo: true,
  add_generation_prompt: false,
  continue_final_message: true,
  prompt_logprobs: 5,
  logprobs: true,
  top_logprobs: 5,
  return_tokens_as_token_ids: true,
  chat_template: '{{ messages[0].content }}',
  chat_template_kwargs: { enable_thinking: false },
  documents: [{ title: 'x', text: 'TENANT-B secret' }],
  raw: true,
  truncate_prompt_tokens: 8,
  kv_transfer_params: { do_remote_decode: true },
  guided_regex: '.*',
  n: 2,
}

/** A server double that always answers `status` with `body`. */
function answering(status: number, body: string, type = 'application/json') {
  return openAiHttpUpstream({
    baseUrl: 'http://vllm.test/v1',
    fetch: async () => new Response(body, { status, headers: { 'content-type': type } }),
  })
}

/** A self-hosted model's profile: only the operator knows the pool their engine was started with. */
const SELF_HOSTED = {
  m: {
    contextWindow: 32_768,
    kvPoolTokens: 16_384,
    maxPrefillTokensPerSecond: 100_000,
    tokenizerDrift: 0.1,
    defaultOutputReserve: 1_024,
  },
}

/** A whole answer as JSON text, a stream as its reasoning and content texts (SSE splits undone). */
async function delivered(out: unknown): Promise<{ raw: string; text: string }> {
  if (!(out instanceof ReadableStream))
    return { raw: JSON.stringify(out), text: JSON.stringify(out) }
  const raw = await readAll(out)
  const { reasoning, content } = sseText(raw)
  return { raw, text: reasoning + content }
}

leakScenario('OpenAI-compatible HTTP', (engine) => overHttp(engine))

describe('openAiHttpUpstream', () => {
  const fast = { prefillTokensPerSecond: Number.POSITIVE_INFINITY, decodeTokensPerSecond: Infinity }

  it('should answer with the binding shapes: the same completion object and the same SSE bytes', async () => {
    const inputs = chat(document('TENANT-A', 500), { max_tokens: 64 })
    for (const stream of [false, true]) {
      const viaBinding = await new SimEngine(fast).binding('account').run(LEAK.model, {
        ...inputs,
        stream,
      })
      const viaHttp = await overHttp(new SimEngine(fast)).run(LEAK.model, { ...inputs, stream })
      expect(viaHttp instanceof ReadableStream).toBe(stream)
      const got = await delivered(viaHttp)
      expect(got.raw).toBe((await delivered(viaBinding)).raw)
      expect(got.text).toContain('TENANT-A ledger entry')
    }
  })

  it('should send the model, inputs, key and headers, and map a Workers AI prompt to messages', async () => {
    const calls: Request[] = []
    await overHttp(new SimEngine(fast), calls).run(
      LEAK.model,
      { prompt: 'Summarise TENANT-A', max_tokens: 8 },
      { extraHeaders: { 'x-session-affinity': 's-1' }, gateway: { id: 'ignored' } },
    )
    const sent = calls[0]!
    expect(sent.url).toBe('http://sim.test/v1/chat/completions')
    expect(sent.headers.get('authorization')).toBe('Bearer account')
    expect(sent.headers.get('x-deployment')).toBe('glm-pool-a')
    expect(sent.headers.get('x-session-affinity')).toBe('s-1')
    expect(await sent.json()).toEqual({
      model: LEAK.model,
      max_tokens: 8,
      messages: [{ role: 'user', content: 'Summarise TENANT-A' }],
    })
  })

  it('should forward only chat-completions fields: nothing that makes the engine copy the prompt or answer elsewhere', async () => {
    const calls: Request[] = []
    const allowed = {
      max_tokens: 16,
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      stop: ['END'],
      presence_penalty: 0.1,
      frequency_penalty: 0.1,
      stream_options: { include_usage: true },
    }
    await overHttp(new SimEngine(fast), calls).run(LEAK.model, {
      ...chat('Summarise TENANT-A'),
      ...allowed,
      ...DANGEROUS,
    })
    const sent = (await calls[0]!.json()) as Record<string, unknown>
    expect(Object.keys(sent).filter((field) => field in DANGEROUS)).toEqual([])
    expect(sent).toEqual({ model: LEAK.model, ...chat('Summarise TENANT-A'), ...allowed })
    // Each on its own too: no field rides along because another one is present or absent.
    for (const [field, value] of Object.entries(DANGEROUS)) {
      const alone: Request[] = []
      await overHttp(new SimEngine(fast), alone).run(LEAK.model, {
        ...chat('Summarise TENANT-A'),
        [field]: value,
      })
      expect([field, await alone[0]!.json()]).toEqual([
        field,
        { model: LEAK.model, ...chat('Summarise TENANT-A') },
      ])
    }
  })

  it('should send Workers AI guided_json as the OpenAI json_schema response format', async () => {
    const calls: Request[] = []
    const schema = { type: 'object', properties: { total: { type: 'number' } } }
    await overHttp(new SimEngine(fast), calls).run(LEAK.model, {
      ...chat('Sum TENANT-A'),
      guided_json: schema,
    })
    const sent = (await calls[0]!.json()) as Record<string, unknown>
    expect(sent.guided_json).toBeUndefined()
    expect(sent.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'guided_json', schema },
    })
  })

  it('should never let a client field that copies the prompt reach the engine through the guard', async () => {
    const engine = new SimEngine(fast)
    for (const [field, value] of Object.entries(DANGEROUS)) {
      const calls: Request[] = []
      const ai = guardAi(overHttp(engine, calls), { secret: LEAK.secret, tenant: 'a' })
      const outcome = await ai
        .run(LEAK.model, chat(document('TENANT-A', 300), { max_tokens: 160, [field]: value }))
        .then(
          (out) => ({ status: 200, text: JSON.stringify(out) }),
          (error: GuardError) => ({ status: error.status, text: error.message }),
        )
      // Refused up front by the guard, or answered without the field: never sent.
      expect([field, outcome.status]).toEqual([field, expect.toBeOneOf([200, 400])])
      for (const call of calls) {
        const sent = (await call.json()) as Record<string, unknown>
        expect([field, Object.hasOwn(sent, field)]).toEqual([field, false])
      }
      if (outcome.status === 200) expect(outcome.text).toContain('TENANT-A ledger entry')
    }
  })

  it('should refuse a base URL that is not http(s), naming the option', () => {
    expect(() => openAiHttpUpstream({ baseUrl: 'localhost:30000' })).toThrow(/"baseUrl"/)
    expect(() => openAiHttpUpstream({ baseUrl: 'https://api.example/v1' })).not.toThrow()
  })

  it('should turn HTTP errors into errors the guard maps like the binding: 429, 400, else 502', async () => {
    const cases: [ReturnType<typeof answering>, number, RegExp][] = [
      [
        answering(429, '{"error":{"message":"Too many requests","code":"rate_limited"}}'),
        429,
        /HTTP 429.*Too many requests/,
      ],
      [
        answering(
          400,
          '{"object":"error","message":"Input length (20000 tokens) exceeds the maximum allowed length (8186 tokens).","code":400}',
        ),
        400,
        /exceeds the maximum allowed length/,
      ],
      [
        answering(400, '{"error":{"message":"unknown field foo","code":"invalid_request"}}'),
        502,
        /HTTP 400.*unknown field foo/,
      ],
      [answering(503, '<html>Bad gateway</html>', 'text/html'), 502, /HTTP 503.*Bad gateway/],
    ]
    for (const [upstream, status, message] of cases) {
      const ai = guardAi(upstream, { secret: LEAK.secret, tenant: 'a', models: SELF_HOSTED })
      const error = await rejection(ai.run('m', chat('hi')))
      expect(error.code).toBe('upstream_error')
      expect(error.status).toBe(status)
      expect(error.message).toMatch(message)
    }
  })

  it('should carry the simulator length refusal through as 400 and its capacity error as 429', async () => {
    const engine = new SimEngine({ ...fast, mode: 'fixed', poolTokens: 4_096 })
    const models = { [LEAK.model]: { contextWindow: 16_384, kvPoolTokens: 16_384 } }
    const ai = guardAi(overHttp(engine), { secret: LEAK.secret, tenant: 'a', models })
    const tooLong = await rejection(ai.run(LEAK.model, chat(document('TENANT-A', 6_000))))
    expect(tooLong.status).toBe(400)
    expect(tooLong.message).toMatch(/exceeds the maximum allowed length/)
    const released = await ai.run(LEAK.model, chat(document('TENANT-A', 1_000)))
    expect(JSON.stringify(released)).toContain('TENANT-A')
  })

  it('should throw network errors, which the guard reports as 502 with nothing released', async () => {
    const upstream = openAiHttpUpstream({
      baseUrl: 'http://down.test/v1',
      fetch: () => Promise.reject(new TypeError('fetch failed: connection refused')),
    })
    await expect(upstream.run('m', chat('hi'))).rejects.toThrow(/connection refused/)
    const ai = guardAi(upstream, { secret: LEAK.secret, tenant: 'a', models: SELF_HOSTED })
    const error = await rejection(ai.run('m', chat('hi')))
    expect(error).toBeInstanceOf(GuardError)
    expect(error.status).toBe(502)
  })
})

describe('token ceiling over HTTP', () => {
  const engine = () =>
    new SimEngine({ ...LEAK.sim, mode: 'pd-abort-leak', decodeTokensPerSecond: Infinity })
  // No echo and no prefix marker: the engine reads exactly the client's prompt (byte-identical test).
  const models = {
    [LEAK.model]: {
      ...LEAK.sim,
      kvPoolTokens: 8_192,
      echo: 'scan-only' as const,
      cacheIsolation: 'off' as const,
    },
  }

  it('should refuse a prompt over the configured pool before any HTTP request', async () => {
    const calls: Request[] = []
    const ai = guardAi(overHttp(engine(), calls), { secret: LEAK.secret, tenant: 'b', models })
    const error = await rejection(ai.run(LEAK.model, chat(document('TENANT-B', 12_000))))
    expect(error.code).toBe('context_length_exceeded')
    expect(error.message).toContain('8,192')
    expect(calls).toHaveLength(0)
  })

  it('should pass an in-pool prompt through byte-identical, whole and streamed', async () => {
    const inputs = chat(document('TENANT-A', 3_500), { max_tokens: 64 })
    for (const stream of [false, true]) {
      const unguarded = await overHttp(engine()).run(LEAK.model, { ...inputs, stream })
      const guarded = await guardAi(overHttp(engine()), {
        secret: LEAK.secret,
        tenant: 'a',
        models,
      }).run(LEAK.model, { ...inputs, stream })
      const released = await delivered(guarded)
      expect(released.raw).toBe((await delivered(unguarded)).raw)
      expect(released.text).toContain('TENANT-A ledger entry')
      expect(hasCanary(released.raw)).toBe(false)
    }
  })
})
