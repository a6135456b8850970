import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import { bodyLimit } from '../../src/worker/config'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { KEY_A, sim } from '../support/worker'
import { MODEL } from './properties'
import { openAiError } from './support'

/**
 * The Worker's shape limits of a request body, as documented (docs/reliability.md, "Bounded per
 * request"; stated in src/worker/body.ts): the figures these tests pin.
 */
const MAX_JSON_VALUES = 262_144
const MAX_JSON_DEPTH = 64

/**
 * Request hygiene over HTTP against the Worker as deployed (default limits): a body's shape is
 * bounded before anything is built from it — a dense body under the byte limit once made 11M values
 * and +1.45 GB of heap in an isolate of 128 MB — and a malformed URL is the client's 400, not a 500.
 */
type IncomingRequest = Parameters<typeof worker.fetch>[0]
const workerEnv = env as unknown as Env
const utf8 = new TextEncoder()
const FAST_SIM = {
  mode: 'fixed' as const,
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
}
const CHUNK = 64 * 1024

async function fetchWorker(request: Request): Promise<Response> {
  const ctx = createExecutionContext()
  const res = await worker.fetch(request as IncomingRequest, workerEnv, ctx)
  await waitOnExecutionContext(ctx)
  return res
}

function chatRequest(body: BodyInit, path = '/v1/chat/completions'): Request {
  return new Request(`http://guard.test${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
    body,
  })
}

/** `head`, then `fill` repeated to about `bytes`, then `tail`, one chunk per pull, counting the pulls. */
function streamed(
  head: string,
  fill: string,
  bytes: number,
  tail: string,
): { stream: ReadableStream<Uint8Array>; pulledBytes: () => number } {
  const chunk = utf8.encode(fill.repeat(Math.floor(CHUNK / fill.length)))
  const chunks = Math.floor((bytes - head.length - tail.length) / chunk.byteLength)
  let sent = -1
  let pulled = 0
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const next =
          sent < 0
            ? utf8.encode(head)
            : sent < chunks
              ? chunk
              : sent === chunks
                ? utf8.encode(tail)
                : null
        sent++
        if (!next) return controller.close()
        pulled += next.byteLength
        controller.enqueue(next)
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, pulledBytes: () => pulled }
}

/** A chat request whose last message is `content` parts (3 values each), plus `extra` fields. */
function partsBody(parts: number, extra = ''): string {
  const part = '{"type":"text","text":"a"}'
  return (
    `{"model":"${MODEL}"${extra},"messages":[{"role":"user","content":[` +
    `{"type":"text","text":"TENANT-A hello"},${Array(parts - 1)
      .fill(part)
      .join(',')}]}]}`
  )
}

describe('bounded request bodies', () => {
  beforeEach(async () => {
    await sim.reset(FAST_SIM)
  })

  it('should refuse a dense body under the byte limit with 400 after reading a bounded part, and serve the next request', async () => {
    const limit = bodyLimit(workerEnv)
    const head = `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"x":[`
    // Millions of values under the byte limit: 2 bytes each.
    const body = streamed(head, '0,', limit - 1024, '0]}')
    const res = await fetchWorker(chatRequest(body.stream))
    const { error } = openAiError(await res.text())
    expect([res.status, error.code]).toEqual([400, 'invalid_request'])
    expect(error.message).toContain(MAX_JSON_VALUES.toLocaleString('en-US'))
    // Refused once the values were counted (2 bytes each), not after the whole upload.
    expect(body.pulledBytes()).toBeLessThanOrEqual(2 * MAX_JSON_VALUES + head.length + 2 * CHUNK)

    const next = await fetchWorker(
      chatRequest(
        JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'TENANT-A hello' }] }),
      ),
    )
    expect(next.status).toBe(200)
    expect(await next.text()).toContain('TENANT-A')
  })

  it('should refuse one value over the limit and answer a body at it', async () => {
    // body, model, messages, the message, role, content: 6 values, then 3 per part; sampling fields
    // (one value each) make up the rest, exactly.
    const parts = Math.floor((MAX_JSON_VALUES - 6) / 3)
    const rest = MAX_JSON_VALUES - 6 - 3 * parts
    const fields = ['"seed":1', '"temperature":0.5', '"top_p":0.9']
    const extra = (n: number) =>
      fields
        .slice(0, n)
        .map((f) => `,${f}`)
        .join('')

    const at = await fetchWorker(chatRequest(partsBody(parts, extra(rest))))
    const text = await at.text()
    expect(at.status, text.slice(0, 300)).toBe(200)
    expect(text).toContain('TENANT-A')

    const res = await fetchWorker(chatRequest(partsBody(parts, extra(rest + 1))))
    const { error } = openAiError(await res.text())
    expect([res.status, error.code]).toEqual([400, 'invalid_request'])
    expect(error.message).toContain(
      `more than ${MAX_JSON_VALUES.toLocaleString('en-US')} JSON values`,
    )
  })

  it(`should refuse nesting deeper than ${MAX_JSON_DEPTH} levels anywhere, after reading only that far, and answer ${MAX_JSON_DEPTH}`, async () => {
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
    const hi = `"messages":[{"role":"user","content":"TENANT-A hi"}]`
    for (const [label, body] of [
      ['an unknown field', `{"model":"${MODEL}",${hi},"x":${nested(MAX_JSON_DEPTH + 1)}}`],
      [
        'a tool schema',
        `{"model":"${MODEL}",${hi},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":${nested(MAX_JSON_DEPTH)}}}}}]}`,
      ],
      [
        'message content',
        `{"model":"${MODEL}","messages":[{"role":"user","content":[{"type":"text","text":"x","y":${nested(MAX_JSON_DEPTH)}}]}]}`,
      ],
    ]) {
      const res = await fetchWorker(chatRequest(body!))
      const { error } = openAiError(await res.text())
      expect([label, res.status, error.code]).toEqual([label, 400, 'invalid_request'])
      expect(error.message, label).toContain(`deeper than ${MAX_JSON_DEPTH} levels`)
    }

    const deep = streamed(`{"model":"${MODEL}",${hi},"x":`, '[', 8 * 1024 * 1024, '')
    const res = await fetchWorker(chatRequest(deep.stream))
    expect(res.status).toBe(400)
    expect(openAiError(await res.text()).error.message).toContain(`deeper than ${MAX_JSON_DEPTH}`)
    expect(deep.pulledBytes()).toBeLessThanOrEqual(2 * CHUNK + 200)

    const ok = await fetchWorker(
      chatRequest(`{"model":"${MODEL}",${hi},"x":${nested(MAX_JSON_DEPTH)}}`),
    )
    expect(ok.status).toBe(200)
    expect(await ok.text()).toContain('TENANT-A')
  })
})

describe('malformed URLs', () => {
  beforeEach(async () => {
    await sim.reset(FAST_SIM)
  })

  it('should answer a model path that does not decode, is empty, too long or has control characters with 400', async () => {
    const hi = JSON.stringify({ messages: [{ role: 'user', content: 'TENANT-A hi' }] })
    for (const path of [
      '/ai/run/%E0%A4%A',
      '/ai/run/%',
      '/ai/run/%zz',
      '/ai/run/%C0%AF',
      '/ai/run/%ED%A0%80',
      '/ai/run/%FF',
      '/ai/run/%40cf%2F%E0%A4',
      '/ai/run/',
      '/ai/run/%00',
      '/ai/run/%40cf%0Aglm',
      `/ai/run/${'m'.repeat(300)}`,
    ]) {
      const res = await fetchWorker(chatRequest(hi, path))
      const { error } = openAiError(await res.text())
      expect([path, res.status, error.code]).toEqual([path, 400, 'invalid_request'])
      expect(error.message, path).toMatch(/model/)
    }
  })

  it('should decode a well-formed model path once and answer it', async () => {
    const hi = JSON.stringify({ messages: [{ role: 'user', content: 'TENANT-A hi' }] })
    const res = await fetchWorker(chatRequest(hi, `/ai/run/${encodeURIComponent(MODEL)}`))
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('TENANT-A')
  })
})
