/**
 * @module Scripted upstreams for reliability tests: SSE streams that stall, break or carry foreign text,
 * each recording whether the guard cancelled it.
 */
import { CANARY_PATTERN, GuardError } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/core/canary'

/** The model every reliability test guards (the built-in glm-5.3 profile). */
export const MODEL = '@cf/zai-org/glm-5.3'
/** The canary secret of the reliability tests (never appears in any output, checked by the tests). */
export const SECRET = 'reliability-canary-secret-0123456789abcdef'

const utf8 = new TextEncoder()

/** One SSE `data:` event as bytes. */
export function sse(data: string): Uint8Array {
  return utf8.encode(`data: ${data}\n\n`)
}

/** A chat-completions chunk with this delta. */
export function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return JSON.stringify({
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: 1,
    model: MODEL,
    choices: [{ index: 0, delta, finish_reason: finish }],
  })
}

/** A stream that records whether it was cancelled and how many chunks were pulled from it. */
export interface Recorded {
  stream: ReadableStream<Uint8Array>
  cancelled: () => boolean
  pulled: () => number
}

/**
 * A byte stream of `parts`, then: `close` (a normal end), `hang` (never another byte) or `error`
 * (the connection breaks). Pull-based, so `pulled()` shows how far a reader got.
 *
 * @example
 * const up = scripted([sse(chunk({ content: 'hi' }))], 'hang')
 */
export function scripted(parts: Uint8Array[], end: 'close' | 'hang' | 'error' = 'close'): Recorded {
  let cancelled = false
  let at = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at < parts.length) {
        controller.enqueue(parts[at++]!)
        return
      }
      if (end === 'close') controller.close()
      else if (end === 'error') controller.error(new TypeError('Network connection lost.'))
      else return new Promise<void>(() => {}) // hang: never resolves, never enqueues
    },
    cancel() {
      cancelled = true
    },
  })
  return { stream, cancelled: () => cancelled, pulled: () => at }
}

/** The canary the guard injected into a request (the last one in its messages), or ''. */
export function injectedCanary(inputs: Record<string, unknown>): string {
  const text = JSON.stringify(inputs.messages ?? inputs.prompt ?? '')
  return [...text.matchAll(CANARY_PATTERN)].at(-1)?.[0] ?? ''
}

/** A canary minted under {@link SECRET} for another request of `tenant`: proof of a leak if it shows up. */
export async function foreignCanary(
  tenant = 'tenant-a',
  requestId = 'someone-else',
): Promise<string> {
  return mintCanary(await importCanaryKey(SECRET), { requestId, tenant })
}

/**
 * An upstream answering every call with a stream built from the request (so it can echo the canary
 * like a model that read the prompt's end); every stream it made is kept for inspection.
 *
 * @example
 * const up = streaming((own) => [sse(chunk({ content: `${own}\nHi` })), sse('[DONE]')])
 */
export function streaming(
  events: (own: string, inputs: Record<string, unknown>) => Uint8Array[],
  end: 'close' | 'hang' | 'error' = 'close',
): AiRunner & { streams: Recorded[] } {
  const streams: Recorded[] = []
  return {
    streams,
    run: async (_model, inputs) => {
      const recorded = scripted(events(injectedCanary(inputs), inputs), end)
      streams.push(recorded)
      return recorded.stream
    },
  }
}

/** An upstream answering every call with `answer(own canary)` as a whole object. */
export function whole(
  answer: (own: string, inputs: Record<string, unknown>) => unknown,
): AiRunner & { calls: number } {
  const upstream = {
    calls: 0,
    run: async (_model: string, inputs: Record<string, unknown>) => {
      upstream.calls++
      return answer(injectedCanary(inputs), inputs)
    },
  }
  return upstream
}

/** What a guarded call ended in: a released value (stream read to its end) or a GuardError. */
export type Settled = { ok: true; body: string } | { ok: false; error: GuardError; body?: string }

/**
 * Runs a guarded call and reads a released stream to its end; a stream that errors after release
 * counts as an error (with what was received before it).
 *
 * @example
 * const r = await settle(ai.run(MODEL, { messages, stream: true }))
 */
export async function settle(call: Promise<unknown>): Promise<Settled> {
  let out: unknown
  try {
    out = await call
  } catch (error) {
    if (error instanceof GuardError) return { ok: false, error }
    throw error
  }
  if (!(out instanceof ReadableStream)) return { ok: true, body: JSON.stringify(out) }
  const reader = (out as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let body = ''
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      body += decoder.decode(r.value, { stream: true })
    }
  } catch (error) {
    if (error instanceof GuardError) return { ok: false, error, body }
    throw error
  }
  return { ok: true, body }
}

/** A chat request with one user message. */
export function ask(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messages: [{ role: 'user', content: text }], ...extra }
}
