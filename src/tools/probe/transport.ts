/**
 * @module The two ways the probe reaches a deployment: an OpenAI-compatible URL over fetch, or an
 * in-process runner shaped like the Workers AI binding (the simulator, `guardAi(...)`, `env.AI`).
 *
 * Both stream (`stream: true`) so the first token can be timed, and both hand back the same
 * {@link ProbeAnswer}; everything the search and the judgement do is the same for either.
 */
import type { AiRunner } from '../../core'
import { clip, isObject, type ProbeAnswer, readAnswerObject, readAnswerStream } from './answer'
import { type GuardSign, guardSignOf, guardSignOfThrown } from './guard-sign'
import { messageOf, ProbeTransportError } from './transport-error'

export type { ProbeAnswer } from './answer'

/** One probe request: a single user message and an output cap. */
export interface ProbeRequest {
  /** The whole user message (needles, filler, instruction). */
  prompt: string
  /** `max_tokens` of the request. */
  maxTokens: number
  /** Whether the answer is streamed (the first token can then be timed). @default true */
  stream?: boolean
  /** More fields of the request body (`response_format`, `tools`, `temperature`); they win. */
  extra?: Record<string, unknown>
}

/** Sends probe requests to one deployment. */
export interface ProbeTransport {
  /** What is probed, for the report (a URL, or a name for a runner). Never holds the key. */
  readonly target: string
  /** The model id sent with every request. */
  readonly model: string
  /**
   * Sends one request and reads its answer to the end. Rejects with a `ProbeTransportError` when no
   * answer could be read.
   */
  send(request: ProbeRequest): Promise<ProbeAnswer>
}

/** Options of {@link urlTransport}. */
export interface UrlTransportOptions {
  /** Base URL of an OpenAI-compatible API (`…/v1`); a URL ending in `/chat/completions` is used as is. */
  url: string
  /** Bearer key; sent as `Authorization: Bearer <key>` when given. */
  apiKey?: string
  /** Model id. */
  model: string
  /**
   * Longest wait for one whole answer (a 1M-token prefill can take minutes).
   * @default 600000
   */
  timeoutMs?: number
  /** The fetch to use (tests inject one). @default globalThis.fetch */
  fetch?: typeof fetch
  /** Milliseconds clock for TTFT. @default performance.now */
  now?: () => number
}

/** Options of {@link runnerTransport}. */
export interface RunnerTransportOptions {
  /** Model id passed to `run()`. */
  model: string
  /** Milliseconds clock for TTFT (a `VirtualClock`'s `now` in tests). @default performance.now */
  now?: () => number
  /** Name of the target in the report. @default 'runner' */
  target?: string
}

const defaultNow = (): number =>
  typeof performance !== 'undefined' ? performance.now() : Date.now()

function chatBody(model: string, request: ProbeRequest): Record<string, unknown> {
  const stream = request.stream ?? true
  return {
    model,
    messages: [{ role: 'user', content: request.prompt }],
    max_tokens: request.maxTokens,
    temperature: 0,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
    ...request.extra,
  }
}

/**
 * `POST {url}/chat/completions` with fetch, streaming. Error statuses become `ProbeTransportError`s
 * carrying the server's own message (clipped); 401/403/404/405 are fatal. Answers and errors of a
 * workers-ai-guard Worker carry its {@link GuardSign} (`x-guard-*` headers, its refusal wording).
 *
 * @example
 * const transport = urlTransport({ url: 'http://localhost:8787/v1', apiKey, model: '@cf/zai-org/glm-5.3' })
 * const answer = await transport.send({ prompt, maxTokens: 1024 })
 */
export function urlTransport(options: UrlTransportOptions): ProbeTransport {
  const endpoint = chatEndpoint(options.url)
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init))
  const now = options.now ?? defaultNow
  const timeoutMs = options.timeoutMs ?? 600_000
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'text/event-stream, application/json',
  }
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`
  // The report shows where the probe went, never with credentials in it.
  const shown = new URL(endpoint)
  shown.username = ''
  shown.password = ''
  return {
    target: shown.toString(),
    model: options.model,
    async send(request) {
      const signal = AbortSignal.timeout(timeoutMs)
      const started = now()
      try {
        const res = await doFetch(endpoint, {
          method: 'POST',
          headers,
          body: JSON.stringify(chatBody(options.model, request)),
          signal,
        })
        if (!res.ok) throw await httpError(res)
        const answer = await readResponse(res, started, now)
        const guard = guardSignOf(res.headers)
        if (guard !== undefined) answer.guard = guard
        return answer
      } catch (error) {
        throw fetchError(error, signal, timeoutMs)
      }
    },
  }
}

/** `{url}/chat/completions` (a URL already ending so is kept), or a plain `Error` naming `url`. */
function chatEndpoint(url: string): URL {
  let endpoint: URL
  try {
    endpoint = new URL(url)
  } catch {
    throw new Error(`url must be an absolute http(s) URL (got ${JSON.stringify(url)})`)
  }
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') {
    throw new Error(`url must be an http(s) URL (got ${endpoint.protocol})`)
  }
  if (!endpoint.pathname.endsWith('/chat/completions')) {
    endpoint.pathname = `${endpoint.pathname.replace(/\/+$/, '')}/chat/completions`
  }
  return endpoint
}

/** A successful response's answer: an SSE stream, or else a whole JSON object. */
async function readResponse(
  res: Response,
  started: number,
  now: () => number,
): Promise<ProbeAnswer> {
  const type = res.headers.get('content-type') ?? ''
  if (res.body !== null && type.includes('text/event-stream')) {
    return await readAnswerStream(res.body, started, now)
  }
  let json: unknown
  try {
    json = await res.json()
  } catch (cause) {
    throw new ProbeTransportError('malformed', 'the answer is neither SSE nor JSON', { cause })
  }
  return readAnswerObject(json, started, now)
}

async function httpError(res: Response): Promise<ProbeTransportError> {
  const text = await res.text().catch(() => '')
  const { message, error } = errorBody(text)
  const detail = message.trim() === '' ? res.statusText : message
  const guard = guardSignOf(res.headers, error)
  return new ProbeTransportError('http', clip(`HTTP ${res.status}: ${detail}`), {
    status: res.status,
    ...(guard === undefined ? {} : { guard }),
  })
}

/**
 * An error body's message (`{"error": "…"}`, `{"error": {"message": "…"}}` or `{"message": "…"}`)
 * and its `error` object; not JSON, the raw text is the best message there is.
 */
function errorBody(text: string): { message: string; error?: Record<string, unknown> } {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { message: text }
  }
  if (!isObject(json)) return { message: text }
  const error = json.error
  if (typeof error === 'string') return { message: error }
  const message =
    isObject(error) && typeof error.message === 'string'
      ? error.message
      : typeof json.message === 'string'
        ? json.message
        : text
  return isObject(error) ? { message, error } : { message }
}

function fetchError(error: unknown, signal: AbortSignal, timeoutMs: number): ProbeTransportError {
  if (error instanceof ProbeTransportError) {
    if (signal.aborted) return timeoutError(timeoutMs, error)
    // The connection closed mid-answer (a server restarting, a proxy dropping it): a network blip,
    // worth one retry, not an answer the length made unreadable.
    if (error.kind === 'malformed' && connectionCut(error.cause)) {
      return new ProbeTransportError(
        'network',
        `the connection closed mid-answer: ${error.message}`,
        {
          cause: error.cause,
        },
      )
    }
    return error
  }
  if (signal.aborted) return timeoutError(timeoutMs, error)
  const message = messageOf(error)
  const cause =
    error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return new ProbeTransportError('network', clip(`${message}${cause}`), { cause: error })
}

/** undici's error for a body whose connection closed: `TypeError: terminated` (cause: a socket error). */
function connectionCut(error: unknown): boolean {
  return error instanceof TypeError && error.message === 'terminated'
}

function timeoutError(timeoutMs: number, cause: unknown): ProbeTransportError {
  return new ProbeTransportError('timeout', `no complete answer within ${timeoutMs} ms`, { cause })
}

/**
 * `runner.run(model, { messages, max_tokens, stream: true })` in process. A thrown error with a
 * numeric `status` (a `GuardError`) counts as an HTTP error of that status; any other throw (the
 * binding's `AiError: 5021: …`) as the upstream's own error, message kept. A `guardAi` runner is
 * recognised by its `GuardError`s only (its released answers carry no mark the probe reads).
 *
 * @example
 * const clock = new VirtualClock()
 * const engine = new SimEngine({ mode: 'pd-abort-leak' }, { clock })
 * const transport = runnerTransport(engine.binding('probe'), { model, now: () => clock.now() })
 */
export function runnerTransport(runner: AiRunner, options: RunnerTransportOptions): ProbeTransport {
  const now = options.now ?? defaultNow
  return {
    target: options.target ?? 'runner',
    model: options.model,
    async send(request) {
      const { model: _model, ...inputs } = chatBody(options.model, request)
      const started = now()
      let output: unknown
      try {
        output = await runner.run(options.model, inputs)
      } catch (error) {
        throw runnerError(error)
      }
      if (output instanceof ReadableStream) return await readAnswerStream(output, started, now)
      return readAnswerObject(output, started, now)
    },
  }
}

function runnerError(error: unknown): ProbeTransportError {
  if (error instanceof ProbeTransportError) return error
  const message = clip(messageOf(error))
  const status = isObject(error) ? error.status : undefined
  if (typeof status === 'number') {
    const guard = guardSignOfThrown(error)
    return new ProbeTransportError('http', `${status}: ${message}`, {
      status,
      cause: error,
      ...(guard === undefined ? {} : { guard }),
    })
  }
  return new ProbeTransportError('upstream', message, { cause: error })
}
