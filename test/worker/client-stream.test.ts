import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { errorBody, GuardError } from '../../src/core/errors'
import { guardInfo } from '../../src/core/guard'
import { guardFor } from '../../src/worker/config'
import type { Env } from '../../src/worker/env'
import { openAiSseBody } from '../../src/worker/openai'
import { chat, document } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const utf8 = new TextEncoder()

/** A stream of these chunks, then an end or `error`. */
function source(
  chunks: Uint8Array[],
  error?: unknown,
): ReadableStream<Uint8Array> & { cancelled?: unknown } {
  let at = 0
  const stream: ReadableStream<Uint8Array> & { cancelled?: unknown } = new ReadableStream(
    {
      pull(controller) {
        if (at < chunks.length) controller.enqueue(chunks[at++]!)
        else if (error !== undefined) controller.error(error)
        else controller.close()
      },
      cancel(reason) {
        stream.cancelled = reason ?? 'cancelled'
      },
    },
    { highWaterMark: 0 },
  )
  return stream
}

async function chunksOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = []
  for await (const chunk of stream) out.push(chunk)
  return out
}

function joined(chunks: Uint8Array[]): string {
  const decoder = new TextDecoder()
  return chunks.map((c) => decoder.decode(c, { stream: true })).join('') + decoder.decode()
}

/** The same bytes cut every `size` bytes (across events and inside multi-byte characters). */
function resplit(chunks: Uint8Array[], size: number): Uint8Array[] {
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const c of chunks) {
    all.set(c, at)
    at += c.length
  }
  const out: Uint8Array[] = []
  for (let i = 0; i < all.length; i += size) out.push(all.subarray(i, i + size))
  return out
}

/** The error event the Worker ends a stopped stream with. */
function errorEvent(body: unknown): string {
  return `data: ${JSON.stringify(body)}\n\n`
}

describe('openAiSseBody', () => {
  it('should send a chat-format guarded stream byte-identical, in either mode', async () => {
    const pending: Promise<unknown>[] = []
    const runner = guardFor(env as unknown as Env).wrap(
      (env as unknown as Env).AI as Parameters<ReturnType<typeof guardFor>['wrap']>[0],
      { tenant: 'tenant-a', waitUntil: (p) => void pending.push(p) },
    )
    const guarded = await runner.run(MODEL, {
      stream: true,
      ...chat(`${document('TENANT-A', 400)} Reply with "añadido ✓ 🙂".`),
    })
    expect(guarded).toBeInstanceOf(ReadableStream)
    expect(guardInfo(guarded)?.format).toBe('chat')
    const released = await chunksOf(guarded as ReadableStream<Uint8Array>)
    await Promise.allSettled(pending)
    const text = joined(released)
    expect(text).toContain('TENANT-A')
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)

    // As the OpenAI surface sends a stream the guard reports as chat: the very chunks.
    const passed = await chunksOf(openAiSseBody(source(released)))
    expect(passed.length).toBe(released.length)
    for (const [i, chunk] of passed.entries()) expect(chunk).toBe(released[i])

    // Decoded (the format unknown): chat events keep their exact text whatever the split.
    for (const size of [1 << 20, 7, 1]) {
      const rewritten = await chunksOf(
        openAiSseBody(source(resplit(released, size)), { chatModel: MODEL }),
      )
      expect(joined(rewritten)).toBe(text)
    }
  }, 30_000)

  it('should rewrite legacy events as chat chunks, one output chunk per input chunk', async () => {
    const input = [
      'data: {"response":"Hel"}\n\ndata: {"response":"lo ✓"}\n\n',
      'data: {"response":"","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\nda',
      'ta: [DONE]\n\n',
    ].map((s) => utf8.encode(s))
    const out = await chunksOf(
      openAiSseBody(source(input), { chatModel: 'm', now: () => 1_700_000_000_500 }),
    )
    expect(out.length).toBe(3)
    const events = joined(out)
      .split('\n\n')
      .filter((e) => e !== '')
    expect(events.at(-1)).toBe('data: [DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)))
    const id = chunks[0].id as string
    expect(id).toMatch(/^chatcmpl-/)
    const head = { id, object: 'chat.completion.chunk', created: 1_700_000_000, model: 'm' }
    expect(chunks).toEqual([
      { ...head, choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] },
      { ...head, choices: [{ index: 0, delta: { content: 'lo ✓' }, finish_reason: null }] },
      {
        ...head,
        choices: [],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      },
    ])
  })

  for (const chatModel of [undefined, MODEL]) {
    const mode = chatModel ? 'rewriting' : 'passing'
    it(`should end with the error event after the bytes already sent (${mode})`, async () => {
      const sent = [
        'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"añ"}}]}\n\n',
        'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"b"}}]}\n\n',
      ]
      const quarantined = new GuardError('response_quarantined', 'Withheld.', {
        incidentId: 'inc_1',
      })
      const input = source(
        sent.map((s) => utf8.encode(s)),
        quarantined,
      )
      const out = joined(await chunksOf(openAiSseBody(input, chatModel ? { chatModel } : {})))
      expect(out).toBe(sent.join('') + errorEvent(errorBody(quarantined)))
    })
  }

  it('should report any other failure as upstream_error, after what was sent', async () => {
    const out = joined(
      await chunksOf(openAiSseBody(source([utf8.encode('data: [DONE]\n\n')], new Error('reset')))),
    )
    const [first, last] = out.split('\n\n')
    expect(first).toBe('data: [DONE]')
    expect(JSON.parse(last!.slice('data: '.length))).toMatchObject({
      error: { code: 'upstream_error', message: 'The stream failed; the answer is incomplete.' },
    })
    expect(out.endsWith('\n\n')).toBe(true)
  })

  it('should end with the error event and stop the guarded stream on an event it cannot read', async () => {
    const input = source([
      utf8.encode('data: {"response":"a"}\n\ndata: not json\n\n'),
      utf8.encode('x'),
    ])
    const out = joined(await chunksOf(openAiSseBody(input, { chatModel: 'm' })))
    const events = out.split('\n\n').filter((e) => e !== '')
    expect(events.length).toBe(1)
    expect(JSON.parse(events[0]!.slice('data: '.length)).error.code).toBe('upstream_error')
    expect(input.cancelled).toBeDefined()
  })

  it('should cancel the guarded stream when the client goes away', async () => {
    const input = source([utf8.encode('data: [DONE]\n\n'), utf8.encode('data: [DONE]\n\n')])
    const reader = openAiSseBody(input).getReader()
    await reader.read()
    await reader.cancel('client gone')
    expect(input.cancelled).toBe('client gone')
  })

  it('should cancel cleanly while waiting on the guard', async () => {
    let cancelled: unknown
    // A guard still holding its verdict: nothing to read yet.
    const input = new ReadableStream<Uint8Array>(
      {
        pull: () => new Promise(() => {}),
        cancel(reason) {
          cancelled = reason
        },
      },
      { highWaterMark: 0 },
    )
    const reader = openAiSseBody(input, { chatModel: 'm' }).getReader()
    const pending = reader.read()
    await reader.cancel('client gone')
    expect(await pending).toEqual({ done: true, value: undefined })
    expect(cancelled).toBe('client gone')
    await new Promise((resolve) => setTimeout(resolve, 10))
  })

  it('should read from the guard only as fast as the client reads', async () => {
    let pulls = 0
    const input = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulls++
          controller.enqueue(utf8.encode('data: {"response":"x"}\n\n'))
        },
      },
      { highWaterMark: 0 },
    )
    const reader = openAiSseBody(input, { chatModel: 'm' }).getReader()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(pulls).toBeLessThanOrEqual(1)
    for (let i = 0; i < 5; i++) await reader.read()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(pulls).toBeLessThanOrEqual(6)
    await reader.cancel()
  })

  it('should keep a held stream’s heartbeats when it rewrites, and end a withheld one in the error event', async () => {
    const beat = ': held\n\n'
    const legacy = 'data: {"response":"Hi"}\n\n'
    const kept = joined(
      await chunksOf(
        openAiSseBody(source([utf8.encode(beat), utf8.encode(beat), utf8.encode(legacy)]), {
          chatModel: MODEL,
        }),
      ),
    )
    expect(kept.startsWith(`${beat}${beat}data: `)).toBe(true)
    expect(kept).toContain('"content":"Hi"')
    // Withheld after the beats: the response was already a 200, so the quarantine is the last event.
    const withheld = new GuardError('response_quarantined', 'withheld', { incidentId: 'inc_x' })
    const ended = joined(
      await chunksOf(openAiSseBody(source([utf8.encode(beat)], withheld), { chatModel: MODEL })),
    )
    expect(ended).toBe(`${beat}${errorEvent(errorBody(withheld))}`)
  })
})
