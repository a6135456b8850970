import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import {
  loadPromptBuilder,
  type ProbeTransportError,
  runnerTransport,
  seededRng,
  urlTransport,
} from '../../src/tools/probe'

const GLM = '@cf/zai-org/glm-5.3'

function sse(events: unknown[], tail = 'data: [DONE]\n\n'): Response {
  const body = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + tail
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
}

async function failure(promise: Promise<unknown>): Promise<ProbeTransportError> {
  try {
    await promise
  } catch (error) {
    return error as ProbeTransportError
  }
  throw new Error('expected the request to fail')
}

const REQUEST = { prompt: 'hello', maxTokens: 64 }

describe('probe transports', { timeout: 20_000 }, () => {
  it('should stream from an OpenAI-compatible URL: both needles, usage, TTFT, bearer key', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine({ poolTokens: 65_536, decodeTokensPerSecond: Infinity }, { clock })
    const handle = simFetchHandler(engine)
    const seen: Request[] = []
    const transport = urlTransport({
      url: 'https://user:pw@sim.test/v1/',
      apiKey: 'probe-account',
      model: GLM,
      now: () => clock.now(),
      fetch: async (input, init) => {
        const request = new Request(input, init)
        const body = await request.text()
        seen.push(new Request(request.url, { headers: request.headers, method: 'POST', body }))
        return await handle(
          new Request(request.url, { headers: request.headers, method: 'POST', body }),
        )
      },
    })
    expect(transport.target).toBe('https://sim.test/v1/chat/completions')
    const prompt = await (await loadPromptBuilder()).build(4096, seededRng(2))
    const answer = await transport.send({ prompt: prompt.text, maxTokens: 512 })
    expect(seen[0]?.url).toBe('https://user:pw@sim.test/v1/chat/completions')
    expect(seen[0]?.headers.get('authorization')).toBe('Bearer probe-account')
    const body = (await seen[0]?.json()) as Record<string, unknown>
    expect(body).toMatchObject({ model: GLM, max_tokens: 512, stream: true, temperature: 0 })
    expect(`${answer.reasoning}${answer.content}`).toContain(prompt.startNeedle)
    expect(answer.content).toContain(prompt.endNeedle)
    expect(answer.streamed).toBe(true)
    expect(answer.promptTokens).toBe(engine.stats().recent[0]?.promptTokens)
    // The virtual clock moved by the simulated prefill: 50,000 tok/s.
    expect(answer.ttftMs).toBeCloseTo(((answer.promptTokens ?? 0) / 50_000) * 1000, 3)
    expect(answer.finishReason).toBe('stop')
  })

  it('should time the first token of any kind, reasoning included, under either field name', async () => {
    let t = 0
    const transport = urlTransport({
      url: 'http://x/v1',
      model: 'm',
      now: () => t,
      fetch: async () => {
        t = 100
        const events = [
          { choices: [{ index: 0, delta: { role: 'assistant' } }] },
          { choices: [{ index: 0, delta: { reasoning: 'thinking NEEDLE-1' } }] },
          { choices: [{ index: 0, delta: { content: ' NEEDLE-2' }, finish_reason: 'stop' }] },
          { choices: [], usage: { prompt_tokens: 7, prompt_tokens_details: { cached_tokens: 3 } } },
        ]
        return sse(events)
      },
    })
    const answer = await transport.send(REQUEST)
    expect(answer).toMatchObject({
      reasoning: 'thinking NEEDLE-1',
      content: ' NEEDLE-2',
      ttftMs: 100,
      promptTokens: 7,
      cachedTokens: 3,
      finishReason: 'stop',
    })
  })

  it('should read a whole JSON answer, timing it as an upper bound', async () => {
    const transport = urlTransport({
      url: 'http://x/v1/chat/completions',
      model: 'm',
      fetch: async () =>
        Response.json({
          choices: [{ index: 0, message: { content: 'A B', reasoning_content: 'r' } }],
          usage: { prompt_tokens: 9 },
        }),
    })
    const answer = await transport.send(REQUEST)
    expect(answer).toMatchObject({
      content: 'A B',
      reasoning: 'r',
      promptTokens: 9,
      streamed: false,
    })
    expect(answer.ttftMs).toBe(answer.totalMs)
  })

  it('should turn error statuses into typed errors with the server’s message', async () => {
    const respond = (res: Response) =>
      urlTransport({ url: 'http://x/v1', model: 'm', fetch: async () => res }).send(REQUEST)
    const denied = await failure(
      respond(Response.json({ error: { message: 'Invalid API key' } }, { status: 401 })),
    )
    expect(denied).toMatchObject({ kind: 'http', status: 401, fatal: true, retryable: false })
    expect(denied.message).toBe('HTTP 401: Invalid API key')
    const tooLong = await failure(
      respond(
        Response.json({ error: { message: 'Input length (N tokens) exceeds' } }, { status: 400 }),
      ),
    )
    expect(tooLong).toMatchObject({ status: 400, fatal: false, retryable: false })
    const busy = await failure(respond(new Response('upstream overloaded', { status: 503 })))
    expect(busy).toMatchObject({ status: 503, retryable: true, fatal: false })
    expect(busy.message).toBe('HTTP 503: upstream overloaded')
  })

  it('should call a refused connection a network error and a hung one a timeout', async () => {
    const down = await failure(
      urlTransport({
        url: 'http://x/v1',
        model: 'm',
        fetch: async () => {
          throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') })
        },
      }).send(REQUEST),
    )
    expect(down).toMatchObject({ kind: 'network', retryable: true })
    expect(down.message).toBe('fetch failed: connect ECONNREFUSED')
    const hung = await failure(
      urlTransport({
        url: 'http://x/v1',
        model: 'm',
        timeoutMs: 20,
        fetch: (_input, init) =>
          new Promise((_resolve, reject) =>
            init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
          ),
      }).send(REQUEST),
    )
    expect(hung).toMatchObject({ kind: 'timeout', retryable: false })
    expect(hung.message).toBe('no complete answer within 20 ms')
  })

  it('should reject a stream cut short, an in-band error event, and a bad URL', async () => {
    const cut = await failure(
      urlTransport({
        url: 'http://x/v1',
        model: 'm',
        fetch: async () =>
          sse([{ choices: [{ index: 0, delta: { content: 'A' } }] }], 'data: {"cho'),
      }).send(REQUEST),
    )
    expect(cut).toMatchObject({ kind: 'malformed', message: 'the answer stream was cut short' })
    const inBand = await failure(
      urlTransport({
        url: 'http://x/v1',
        model: 'm',
        fetch: async () => sse([{ error: { message: 'engine crashed' } }]),
      }).send(REQUEST),
    )
    expect(inBand).toMatchObject({ kind: 'upstream', message: 'engine crashed' })
    expect(() => urlTransport({ url: 'localhost:8787', model: 'm' })).toThrow(/^url must be/)
    expect(() => urlTransport({ url: 'ftp://x/v1', model: 'm' })).toThrow(/http\(s\)/)
  })

  it('should drive a binding in process, in both Workers AI formats, and keep thrown messages', async () => {
    const engine = new SimEngine({
      poolTokens: 8192,
      prefillTokensPerSecond: Infinity,
      decodeTokensPerSecond: Infinity,
    })
    const chat = await runnerTransport(engine.binding('a'), { model: GLM }).send({
      prompt: 'NEEDLE-0000000001\nsome filler\nNEEDLE-0000000002',
      maxTokens: 256,
    })
    expect(chat.reasoning).toContain('NEEDLE-0000000001')
    expect(chat.content).toContain('NEEDLE-0000000002')
    const legacy = await runnerTransport(engine.binding('a'), {
      model: '@cf/meta/llama-3.1-8b-instruct',
    }).send({ prompt: 'line one\nNEEDLE-0000000003', maxTokens: 256 })
    expect(legacy.reasoning).toBe('')
    expect(legacy.content).toContain('NEEDLE-0000000003')
    engine.configure({ mode: 'fixed' })
    const over = await failure(
      runnerTransport(engine.binding('a'), { model: GLM }).send({
        prompt: 'word '.repeat(9000),
        maxTokens: 16,
      }),
    )
    expect(over).toMatchObject({ kind: 'upstream' })
    expect(over.message).toMatch(/5021/)
    const guardLike = await failure(
      runnerTransport(
        {
          run: async () => {
            throw Object.assign(new Error('too long'), { status: 400 })
          },
        },
        { model: GLM },
      ).send(REQUEST),
    )
    expect(guardLike).toMatchObject({ kind: 'http', status: 400, message: '400: too long' })
  })
  it('should recognise a workers-ai-guard endpoint by its headers and its own refusals only', async () => {
    const reply = (res: Response) =>
      urlTransport({ url: 'http://guard.test/v1', model: GLM, fetch: async () => res })
    const ok = sse([{ choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] }])
    ok.headers.set('x-guard-request-id', 'r-1')
    expect((await reply(ok).send(REQUEST)).guard).toBe('response-header')
    expect(
      (await reply(sse([{ choices: [{ index: 0, delta: { content: 'hi' } }] }])).send(REQUEST))
        .guard,
    ).toBeUndefined()

    const error = (code: string, message: string, status: number, headers = {}) =>
      Response.json({ error: { message, type: 'x', code, param: null } }, { status, headers })
    const refused = await failure(
      reply(
        error(
          'context_length_exceeded',
          'This request needs 70,000 tokens … Shorten the prompt or lower max_tokens; the guard rejects rather than truncates, so the question is never changed silently.',
          400,
        ),
      ).send(REQUEST),
    )
    expect(refused).toMatchObject({ kind: 'http', status: 400, guard: 'refusal' })
    const withheld = await failure(
      reply(error('response_quarantined', 'withheld', 502, { 'x-guard-incident-id': 'i-1' })).send(
        REQUEST,
      ),
    )
    expect(withheld.guard).toBe('quarantine')
    // The engine's own refusal (the simulator, Workers AI) carries the same code, not the guard's words.
    const engine = await failure(
      reply(
        error(
          'context_length_exceeded',
          'AiError: 5021: Input length (70000 tokens) exceeds the maximum allowed length (65530 tokens)',
          400,
        ),
      ).send(REQUEST),
    )
    expect(engine.guard).toBeUndefined()
  })
  it('should call a connection closed mid-answer a network error (retried), not a bad answer', async () => {
    const cut = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(
          new TextEncoder().encode('data: {"choices":[{"index":0,"delta":{}}]}\n\n'),
        )
      },
      pull(controller) {
        controller.error(new TypeError('terminated', { cause: new Error('other side closed') }))
      },
    })
    const transport = urlTransport({
      url: 'http://x/v1',
      model: GLM,
      fetch: async () => new Response(cut, { headers: { 'content-type': 'text/event-stream' } }),
    })
    const error = await failure(transport.send(REQUEST))
    expect(error).toMatchObject({ kind: 'network', retryable: true, fatal: false })
    expect(error.message).toBe('the connection closed mid-answer: terminated')
  })
})
