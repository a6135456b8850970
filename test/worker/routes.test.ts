import { beforeEach, describe, expect, it } from 'vitest'
import { CANARY_PATTERN } from '../../src'
import { chat, document, sseText } from '../support/prompts'
import { get, KEY_A, post, sim } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'

beforeEach(async () => {
  await sim.reset({
    mode: 'fixed',
    prefillTokensPerSecond: 500_000,
    decodeTokensPerSecond: Infinity,
  })
})

describe('the Worker', () => {
  it('should report health without a key', async () => {
    const res = await get('/health')
    expect(await res.json()).toEqual({ ok: true, service: 'workers-ai-guard' })
  })

  it('should refuse an unknown key with 401 and make no upstream call', async () => {
    const before = (await sim.stats()).requests.total
    for (const key of [undefined, 'not-a-real-key-123']) {
      const res = await post('/v1/chat/completions', { model: MODEL, ...chat('hi') }, key)
      expect(res.status).toBe(401)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key')
    }
    expect((await sim.stats()).requests.total).toBe(before)
  })

  it('should answer /v1/chat/completions with the tenant own content, canary stripped', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: MODEL, ...chat(document('TENANT-A', 400)) },
      KEY_A,
    )
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      object: string
      choices: { message: { content: string } }[]
    }
    expect(body.object).toBe('chat.completion')
    expect(body.choices[0]!.message.content).toContain('TENANT-A')
    expect(JSON.stringify(body)).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))
  })

  it('should stream OpenAI chunks with the tenant content and no canary', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: MODEL, stream: true, ...chat(document('TENANT-A', 400)) },
      KEY_A,
    )
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    const text = await res.text()
    const { content, events } = sseText(text)
    expect(content).toContain('TENANT-A')
    expect(events.every((e) => (e as { object?: string }).object === 'chat.completion.chunk')).toBe(
      true,
    )
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    expect(text).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))
  })

  it('should serve the native Workers AI shape at /ai/run/<model>', async () => {
    const res = await post(`/ai/run/${MODEL}`, chat(document('TENANT-A', 400)), KEY_A)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { choices: { message: { content: string } }[] }
    expect(body.choices[0]!.message.content).toContain('TENANT-A')
  })

  for (const tokens of [700_000, 1_000_000]) {
    it(`should refuse a ${tokens}-token prompt with the figures and never call the simulator`, async () => {
      const before = (await sim.stats()).requests.total
      const res = await post(
        '/v1/chat/completions',
        { model: MODEL, ...chat(document('TENANT-A', tokens)) },
        KEY_A,
      )
      expect(res.status).toBe(400)
      const body = (await res.json()) as { error: { code: string; message: string; type: string } }
      expect(body.error.code).toBe('context_length_exceeded')
      expect(body.error.type).toBe('invalid_request_error')
      expect(body.error.message).toContain('681,280')
      expect((await sim.stats()).requests.total).toBe(before)
    }, 60_000)
  }

  it('should pass a 300,000-token prompt through, whole and streamed', async () => {
    // Room for the reasoning the model spends first, and a visible answer quoting the prompt.
    const request = { model: MODEL, max_tokens: 400, ...chat(document('TENANT-A', 300_000)) }
    const whole = await post('/v1/chat/completions', request, KEY_A)
    expect(whole.status).toBe(200)
    const body = (await whole.json()) as {
      choices: { message: { content: string } }[]
      usage: { prompt_tokens: number }
    }
    expect(body.choices[0]!.message.content).toContain('TENANT-A ledger')
    expect(body.usage.prompt_tokens).toBeGreaterThan(250_000)
    const streamed = await post('/v1/chat/completions', { ...request, stream: true }, KEY_A)
    expect(streamed.status).toBe(200)
    expect(sseText(await streamed.text()).content).toContain('TENANT-A ledger')
  }, 60_000)

  it('should answer bad input with clear 4xx errors', async () => {
    const cases: [unknown, number, string][] = [
      ['{"model": ', 400, 'not valid JSON'],
      [[1, 2], 400, 'JSON object'],
      [{ messages: [] }, 400, '"model"'],
      [{ model: MODEL, messages: 'hi' }, 400, '"messages"'],
      [{ model: MODEL, ...chat('hi'), max_tokens: -5 }, 400, 'max_tokens'],
      [{ model: MODEL, ...chat('hi'), stream: 'yes' }, 400, 'stream'],
    ]
    for (const [body, status, message] of cases) {
      const res = await post('/v1/chat/completions', body, KEY_A)
      expect(res.status).toBe(status)
      const parsed = (await res.json()) as { error: { message: string; code: string } }
      expect(parsed.error.message).toContain(message)
    }
  })
})
