/**
 * @module The OpenAI-compatible surface: request mapping, legacy-to-chat answers, error bodies (the
 * Worker's own refusals, and errors inside streams).
 */
import {
  DEFAULT_MAX_EVENT_BYTES,
  type ErrorBody,
  encodeSseEvent,
  errorBody,
  type Frame,
  GuardError,
  parseFrame,
  type SseEvent,
  SseParser,
} from '../core'

/**
 * Splits an OpenAI chat-completions body into the Workers AI model and inputs. Workers AI's chat
 * models take the same fields, so everything but `model` and the OpenAI-only bookkeeping passes on.
 *
 * @example
 * const { model, inputs } = fromOpenAi(await readJsonObject(req, { limit }))
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
  checkRoles(inputs.messages)
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
 * The roles of OpenAI's chat API. Workers AI takes any role string and the chat template renders it
 * as a turn of its own, so a typo (`"wizard"`) reached the model as a role it was never trained on;
 * the OpenAI surface refuses it as OpenAI does. (`/ai/run/<model>` keeps Workers AI's own rule.)
 */
const OPENAI_ROLES: ReadonlySet<unknown> = new Set([
  'system',
  'developer',
  'user',
  'assistant',
  'tool',
  'function',
])

/** A 400 naming `messages[i].role` for the first message whose role OpenAI's API does not have. */
function checkRoles(messages: unknown[]): void {
  messages.forEach((message, i) => {
    if (message === null || typeof message !== 'object') return // the prompt reader names it
    const role = (message as { role?: unknown }).role
    if (OPENAI_ROLES.has(role)) return
    throw new GuardError(
      'invalid_request',
      `messages[${i}].role must be one of ${[...OPENAI_ROLES].join(', ')}.`,
      { param: `messages[${i}].role` },
    )
  })
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

/** Options of {@link openAiSseBody}. */
interface OpenAiSseBodyOptions {
  /**
   * Rewrite legacy `{ response }` events as OpenAI `chat.completion.chunk`s naming this model (the
   * OpenAI surface, when the guard did not report a chat-format stream). Absent, every byte passes
   * as the guard released it.
   */
  chatModel?: string
  /**
   * The clock that stamps rewritten chunks' `created`, in ms since epoch.
   * @default Date.now
   */
  now?: () => number
}

/**
 * A guarded stream as the client's SSE body, in one pull stage (backpressure holds: nothing is read
 * from the guard before the client asks). Chunks pass as the very bytes the guard released, unless
 * `chatModel` asks for legacy events to be rewritten: then each chunk is decoded once, chat events
 * keep their exact text, legacy ones become `chat.completion.chunk`s, and what one chunk yields leaves
 * as one chunk. If the guard stops the stream (a quarantine after release, a truncated upstream), or
 * anything else fails, the client gets an OpenAI-style error event and a clean end instead of a
 * broken connection; a client that goes away cancels the guarded stream.
 *
 * @example
 * const body = openAiSseBody(guarded, guardInfo(guarded)?.format === 'chat' ? {} : { chatModel: model })
 * return new Response(body, { headers: SSE_HEADERS })
 */
export function openAiSseBody(
  guarded: ReadableStream<Uint8Array>,
  options: OpenAiSseBodyOptions = {},
): ReadableStream<Uint8Array> {
  const reader = guarded.getReader()
  const rewriter =
    options.chatModel === undefined
      ? undefined
      : new LegacyRewriter(options.chatModel, options.now ?? Date.now)
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        // Until something can be sent: a chunk that ends inside an event yields nothing yet, and a
        // pull that enqueues nothing would not be called again.
        while (true) {
          const next = await reader.read()
          if (next.done) {
            rewriter?.end()
            controller.close()
            return
          }
          const out = rewriter ? rewriter.push(next.value) : next.value
          if (out !== undefined) {
            controller.enqueue(out)
            return
          }
        }
      } catch (error) {
        // A failure of this stage (bytes that do not decode, an event that does not parse) leaves the
        // guarded stream running: stop it, as a broken pipe would. After the guard's own error it is
        // already errored, and cancelling it again only rejects.
        reader.cancel(error).catch(() => {})
        controller.enqueue(ERROR_UTF8.encode(errorEvent(error)))
        controller.close()
      }
    },
    async cancel(reason) {
      // The client went away: stop the guarded stream too, so nothing is left running.
      await reader.cancel(reason)
    },
  })
}

const ERROR_UTF8 = new TextEncoder()

/** The event that ends a stream the guard (or anything else) stopped, in OpenAI's error shape. */
function errorEvent(error: unknown): string {
  const guardError =
    error instanceof GuardError
      ? error
      : new GuardError('upstream_error', 'The stream failed; the answer is incomplete.')
  return `data: ${JSON.stringify(errorBody(guardError))}\n\n`
}

/**
 * Rewrites the legacy `{ response }` events of a guarded stream as chat chunks, one input chunk at a
 * time; every other event is re-sent as its exact text (re-encoded only when it was not one `data:`
 * line), and lone comment lines (heartbeats) are kept.
 */
class LegacyRewriter {
  // Comments pass (a held stream's heartbeats, see `stream.heartbeatMs`).
  readonly #parser = new SseParser(DEFAULT_MAX_EVENT_BYTES, {
    onComment: (raw) => {
      this.#out += raw
    },
  })
  readonly #utf8 = new TextEncoder()
  readonly #id = `chatcmpl-${crypto.randomUUID()}`
  readonly #created: number
  readonly #model: string
  /** What the chunk being pushed yields so far. */
  #out = ''
  readonly #emit = (event: SseEvent, raw: string | undefined): void => {
    const frame = parseFrame(event)
    this.#out +=
      frame.format === 'legacy'
        ? encodeSseEvent(legacyChunk(frame, this.#id, this.#created, this.#model))
        : (raw ?? encodeSseEvent(event))
  }

  constructor(model: string, now: () => number) {
    this.#model = model
    this.#created = Math.floor(now() / 1000)
  }

  /** The bytes one input chunk yields, or undefined when it ended no event. */
  push(bytes: Uint8Array): Uint8Array | undefined {
    this.#out = ''
    this.#parser.push(bytes, this.#emit)
    return this.#out === '' ? undefined : this.#utf8.encode(this.#out)
  }

  /** The input ended; an unfinished trailing event is dropped, as an SSE client drops it. */
  end(): void {
    this.#parser.end()
  }
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

/** What the Worker refuses by itself, before any guard runs; none is a {@link GuardError} code. */
type RefusalCode =
  /** `/v1/*` without a known tenant key (OpenAI's own code for it). */
  | 'invalid_api_key'
  /** `/admin/*` without the admin secret, or with admin routes off. */
  | 'unauthorized'
  /** `/admin/*` signed in, but the request is cross-site or lacks its CSRF token. */
  | 'forbidden'
  /** No such route, or no such incident. */
  | 'not_found'
  /**
   * `/admin/incidents/:id` (409): the record's withheld text cannot be opened — its key is not held,
   * or the row was altered; the message names the key id and what to do.
   */
  | 'incident_unreadable'
  /** A model the Worker has no profile for (OpenAI's code for an unknown model). */
  | 'model_not_found'
  /** A route that exists, called with a method it does not answer (the `Allow` header names it). */
  | 'method_not_allowed'

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
