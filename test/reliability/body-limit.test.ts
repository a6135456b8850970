import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { chat } from '../support/prompts'
import { KEY_A, KEY_B } from '../support/worker'
import { MODEL } from './properties'
import { openAiError } from './support'

/** A request as the Workers runtime hands it to a fetch handler. */
type IncomingRequest = Parameters<typeof worker.fetch>[0]

/**
 * The Worker refuses a body over MAX_BODY_BYTES with 413 as soon as it has seen one byte too many: it
 * never buffers a client's body past the limit (a slow-drip or endless upload must not grow memory).
 */
const LIMIT = 1024
/**
 * The default: 16 MiB, from the largest prompt glm-5.3's ceiling admits (677,184 tokens) times the
 * most bytes per token real text needs as JSON (21.9 fully \u-escaped, 9.65 as UTF-8; see
 * src/worker/config.ts and `npm run bench -- body`).
 */
const DEFAULT_LIMIT = 16 * 1024 * 1024
const CHUNK = 256
const limited = { ...(env as unknown as Env), MAX_BODY_BYTES: String(LIMIT) }

/** An endless JSON-ish body, one chunk per pull, counting what was pulled. */
function endlessBody(): { stream: ReadableStream<Uint8Array>; pulledBytes: () => number } {
  const utf8 = new TextEncoder()
  let pulled = 0
  const head = utf8.encode(`{"model":"${MODEL}","messages":[{"role":"user","content":"`)
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const chunk = pulled === 0 ? head : utf8.encode('a'.repeat(CHUNK))
        pulled += chunk.byteLength
        controller.enqueue(chunk)
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, pulledBytes: () => pulled }
}

async function fetchWorker(request: Request, workerEnv: Env = limited): Promise<Response> {
  const ctx = createExecutionContext()
  const res = await worker.fetch(request as IncomingRequest, workerEnv, ctx)
  await waitOnExecutionContext(ctx)
  return res
}

function chatRequest(body: BodyInit, headers: Record<string, string> = {}): Request {
  return new Request('http://guard.test/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json', ...headers },
    body,
  })
}

describe('request body limit', { timeout: 30_000 }, () => {
  it('should refuse an endless streamed body with 413 without reading far past the limit', async () => {
    const body = endlessBody()
    const res = await fetchWorker(chatRequest(body.stream))
    const { error } = openAiError(await res.text())
    expect([res.status, error.code]).toEqual([413, 'invalid_request'])
    expect(error.message).toContain(String(LIMIT))
    // At most the chunk that crossed the limit, plus one the runtime may have read ahead.
    expect(body.pulledBytes()).toBeLessThanOrEqual(LIMIT + 2 * CHUNK)
  })

  it('should refuse a declared Content-Length over the limit before reading the body', async () => {
    const text = JSON.stringify({ model: MODEL, ...chat('x'.repeat(4 * LIMIT)) })
    const res = await fetchWorker(chatRequest(text))
    const { error } = openAiError(await res.text())
    expect([res.status, error.code]).toEqual([413, 'invalid_request'])
  })

  it('should refuse on both model routes', async () => {
    const res = await fetchWorker(
      new Request(`http://guard.test/ai/run/${MODEL}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY_A}` },
        body: endlessBody().stream,
      }),
    )
    expect(res.status).toBe(413)
  })

  it('should accept a body just under the limit and answer it', async () => {
    const base = JSON.stringify({ model: MODEL, ...chat('TENANT-A ') })
    const text = JSON.stringify({
      model: MODEL,
      ...chat(`TENANT-A ${'b'.repeat(LIMIT - base.length - 1)}`),
    })
    expect(new TextEncoder().encode(text).byteLength).toBeLessThanOrEqual(LIMIT)
    const res = await fetchWorker(chatRequest(text))
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('TENANT-A')
  })

  it('should refuse one byte over the default limit (sized to the largest admissible prompt) with 413', async () => {
    const defaults = env as unknown as Env
    expect(defaults.MAX_BODY_BYTES).toBeUndefined()
    const base = JSON.stringify({ model: MODEL, ...chat('') })
    const over = JSON.stringify({
      model: MODEL,
      ...chat('a'.repeat(DEFAULT_LIMIT + 1 - base.length)),
    })
    expect(new TextEncoder().encode(over).byteLength).toBe(DEFAULT_LIMIT + 1)
    const res = await fetchWorker(chatRequest(over), defaults)
    const { error } = openAiError(await res.text())
    expect([res.status, error.code]).toEqual([413, 'invalid_request'])
    expect(error.message).toContain(String(DEFAULT_LIMIT))
  })

  it('should count bytes, not characters: multi-byte text over the limit is refused', async () => {
    // 400 characters of 3 bytes each: under the limit in characters, over it in bytes.
    const text = JSON.stringify({ model: MODEL, ...chat('中'.repeat(400)) })
    expect(text.length).toBeLessThan(LIMIT)
    const stream = new Blob([text]).stream() // no Content-Length: only the byte count can refuse it
    const res = await fetchWorker(chatRequest(stream))
    expect(res.status).toBe(413)
  })
})

describe('request body pace', { timeout: 30_000 }, () => {
  /** A fresh isolate's bindings (its own memory ledger) with a short grace, as tests use. */
  const paced = (): Env => ({
    ...(env as unknown as Env),
    BODY_GRACE_MS: '400',
    BODY_MIN_BYTES_PER_SECOND: '65536',
  })

  /** `promise`, or 'pending' when it has not settled within `ms`. */
  function within<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
    return Promise.race([
      promise,
      new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms)),
    ])
  }

  /** A body that sends its first bytes, then one byte a second (until cancelled). */
  function dripBody(head: string) {
    let cancelled = false
    let timer: ReturnType<typeof setInterval> | undefined
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(head))
        timer = setInterval(() => controller.enqueue(new TextEncoder().encode('a')), 1_000)
      },
      cancel() {
        cancelled = true
        if (timer !== undefined) clearInterval(timer)
      },
    })
    return { stream, cancelled: () => cancelled }
  }

  it('should answer 408 to a 1 byte/s upload declaring 3.7 MB, then let a waiting prompt in', async () => {
    const bindings = paced()
    const drip = dripBody(`{"model":"${MODEL}","messages":[{"role":"user","content":"`)
    const slow = fetchWorker(chatRequest(drip.stream, { 'content-length': '3700000' }), bindings)
    // While it drips, its declared size holds the isolate's budget: another tenant's ~300 KB prompt
    // waits its turn.
    const prompt = JSON.stringify({ model: MODEL, ...chat(`TENANT-B ${'word '.repeat(60_000)}`) })
    const tenantB = { authorization: `Bearer ${KEY_B}` }
    // Its length declared, as HTTP clients send it: a body without one is charged as it grows and
    // refused, not queued, when it outgrows what is free.
    const sized = {
      ...tenantB,
      'content-length': String(new TextEncoder().encode(prompt).byteLength),
    }
    const early = fetchWorker(chatRequest(prompt, sized), bindings)
    expect(await within(early, 100)).toBe('pending')
    const res = await within(slow, 10_000)
    expect(res === 'pending' ? 'pending' : res.status).toBe(408)
    if (res === 'pending') return
    const { error } = openAiError(await res.text())
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain('too slowly')
    expect(drip.cancelled()).toBe(true)
    // What it reserved is back: the waiting prompt is let in and answered, and so is the next.
    const waited = await early
    expect(waited.status).toBe(200)
    expect(await waited.text()).toContain('TENANT-B')
    const after = await fetchWorker(chatRequest(prompt, tenantB), bindings)
    expect(after.status).toBe(200)
    expect(await after.text()).toContain('TENANT-B')
  })

  it('should let a body through that keeps its pace, however it is chunked', async () => {
    const bindings = paced()
    const text = JSON.stringify({ model: MODEL, ...chat(`TENANT-A ${'x '.repeat(20_000)}`) })
    const bytes = new TextEncoder().encode(text)
    let at = 0
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (at >= bytes.length) return controller.close()
        // 4 KiB every 20 ms: 200 KiB/s, over the 64 KiB/s floor, taking longer than the grace.
        await new Promise((r) => setTimeout(r, 20))
        controller.enqueue(bytes.slice(at, at + 4096))
        at += 4096
      },
    })
    const res = await fetchWorker(chatRequest(stream), bindings)
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('TENANT-A')
  })

  it('should refuse a chunked body that starts fast and then stalls', async () => {
    const bindings = paced()
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // 8 KiB at once, then nothing: an attacker front-loading to pass the grace.
        if (sent === 0) {
          sent = 8192
          controller.enqueue(
            new TextEncoder().encode(`{"model":"${MODEL}","x":"${'a'.repeat(8000)}`),
          )
          return
        }
        await new Promise(() => {})
      },
    })
    const res = await within(fetchWorker(chatRequest(stream), bindings), 10_000)
    expect(res === 'pending' ? 'pending' : res.status).toBe(408)
  })
})
