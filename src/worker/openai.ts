/**
 * @module The OpenAI-compatible surface: request mapping, legacy-to-chat answers, error bodies (the
 * Worker's own refusals, and errors inside streams).
 */
import { type ErrorBody, errorBody, GuardError } from '../errors'
import { type Frame, parseFrame } from '../format/frames'
import { type SseEvent, sseDecoder, sseEncoder } from '../format/sse'

/**
 * Splits an OpenAI chat-completions body into the Workers AI model and inputs. Workers AI's chat
 * models take the same fields, so everything but `model` and the OpenAI-only bookkeeping passes on.
 *
 * @example
 * const { model, inputs } = fromOpenAi(await readJsonObject(req, limit))
 */
export function fromOpenAi(body: Record<string, unknown>): {
  model: string
  inputs: Record<string, unknown>
} {
  const { model, user: _user, n, store: _store, metadata: _metadata, ...inputs } = body
  if (typeof model !== 'string' || model === '') {
    throw new GuardError('invalid_request', '"model" must be a Workers AI model name.', {
      param: 'model',
    })
  }
  if (!Array.isArray(inputs.messages)) {
    throw new GuardError('invalid_request', '"messages" must be an array of chat messages.', {
      param: 'messages',
    })
  }
  if (n !== undefined && n !== null && n !== 1) {
    throw new GuardError(
      'invalid_request',
      'Only one choice per request ("n": 1) can be verified.',
      {
        param: 'n',
      },
    )
  }
  return { model, inputs }
}

/**
 * A whole answer as an OpenAI `chat.completion`: chat-shaped answers pass unchanged; legacy
 * `{ response }` answers are wrapped, stamped `created` from `now` (ms since epoch).
 *
 * @example
 * return c.json(toChatCompletion(await ai.run(model, inputs), model))
 */
export function toChatCompletion(
  output: unknown,
  model: string,
  now: () => number = Date.now,
): unknown {
  if (output === null || typeof output !== 'object') {
    throw new GuardError('upstream_error', 'The upstream answer is not an object.')
  }
  const record = output as Record<string, unknown>
  if (Array.isArray(record.choices)) return record
  const message: Record<string, unknown> = { role: 'assistant', content: record.response ?? null }
  if (Array.isArray(record.tool_calls) && record.tool_calls.length > 0) {
    message.tool_calls = record.tool_calls.map((call, index) => {
      const c = (call ?? {}) as Record<string, unknown>
      const args = c.arguments
      return {
        id: `call_${index}`,
        type: 'function',
        function: {
          name: c.name,
          arguments: typeof args === 'string' ? args : JSON.stringify(args),
        },
      }
    })
  }
  return {
    id: `chatcmpl-${crypto.randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
    ...(record.usage ? { usage: record.usage } : {}),
  }
}

/**
 * A guarded SSE stream as OpenAI `chat.completion.chunk` events; legacy `{ response }` events are
 * rewritten (stamped `created` from `now`, ms since epoch), chat events pass unchanged.
 *
 * @example
 * return new Response(toChatChunks(stream, model), { headers: SSE_HEADERS })
 */
export function toChatChunks(
  stream: ReadableStream<Uint8Array>,
  model: string,
  now: () => number = Date.now,
): ReadableStream<Uint8Array> {
  const id = `chatcmpl-${crypto.randomUUID()}`
  const created = Math.floor(now() / 1000)
  return stream
    .pipeThrough(sseDecoder())
    .pipeThrough(
      new TransformStream<SseEvent, SseEvent>({
        transform(event, controller) {
          const frame = parseFrame(event)
          controller.enqueue(
            frame.format === 'legacy' ? legacyChunk(frame, id, created, model) : event,
          )
        },
      }),
    )
    .pipeThrough(sseEncoder())
}

function legacyChunk(frame: Frame, id: string, created: number, model: string): SseEvent {
  const json = frame.json ?? {}
  const delta: Record<string, unknown> = {}
  if (frame.texts.content !== undefined && frame.texts.content !== '')
    delta.content = frame.texts.content
  const chunk: Record<string, unknown> = {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: json.usage && !frame.texts.content ? [] : [{ index: 0, delta, finish_reason: null }],
  }
  if (json.usage) chunk.usage = json.usage
  return { data: JSON.stringify(chunk) }
}

/** Response headers of an SSE stream. */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
} as const

/**
 * Ends a client stream with an OpenAI-style error event instead of a broken connection when the guard
 * stops it (a quarantine after release, a truncated upstream). Pull-based, so backpressure holds.
 *
 * @example
 * new Response(withErrorEvent(guarded), { headers: SSE_HEADERS })
 */
export function withErrorEvent(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = stream.getReader()
  const encoder = new TextEncoder()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read()
        if (next.done) controller.close()
        else controller.enqueue(next.value)
      } catch (error) {
        const guardError =
          error instanceof GuardError
            ? error
            : new GuardError('upstream_error', 'The stream failed; the answer is incomplete.')
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(errorBody(guardError))}\n\n`))
        controller.close()
      }
    },
    async cancel(reason) {
      // The client went away: stop the upstream too, so nothing is left running.
      await reader.cancel(reason)
    },
  })
}

/** What the Worker refuses by itself, before any guard runs; none is a {@link GuardError} code. */
export type RefusalCode =
  /** `/v1/*` without a known tenant key (OpenAI's own code for it). */
  | 'invalid_api_key'
  /** `/admin/*` without the admin secret, or with admin routes off. */
  | 'unauthorized'
  /** No such route, or no such incident. */
  | 'not_found'

/**
 * The body of a refusal the Worker makes by itself (an unknown key, a missing route): the shape of
 * {@link errorBody}, so OpenAI clients read it like any guard error.
 *
 * @example
 * return c.json(refusalBody('not_found', 'No such incident.', 'id'), 404)
 */
export function refusalBody(
  code: RefusalCode,
  message: string,
  param: string | null = null,
): ErrorBody {
  return { error: { message, type: 'invalid_request_error', code, param } }
}
