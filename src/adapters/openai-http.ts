/**
 * @module An `AiRunner` over any OpenAI-compatible chat-completions server (SGLang, vLLM, …), so
 * self-hosted engines get the same three guards as the Workers AI binding.
 *
 * SGLang is the engine of the incident: in PD-disaggregated mode an oversized request was swapped for a
 * one-token placeholder and answered from other tenants' KV pages with HTTP 200. A self-hoster runs the
 * same code, so the guard must sit in front of it exactly as it sits in front of `env.AI`.
 */
import type { AiRunner } from '../upstream'

/** How to reach an OpenAI-compatible server. */
export interface OpenAiHttpOptions {
  /** The API root, as OpenAI clients take it (e.g. `http://10.0.0.5:30000/v1`); `/chat/completions` is appended. */
  baseUrl: string
  /** Sent as `Authorization: Bearer <apiKey>`. @default no Authorization header */
  apiKey?: string
  /** The fetch to use (a service binding's, a test double's). @default globalThis.fetch */
  fetch?: (input: string, init: RequestInit) => Promise<Response>
  /** Extra headers on every request (per-call `options.extraHeaders` are added on top). @default {} */
  headers?: Record<string, string>
}

/** Longest upstream error body read, bytes: an error page must not be buffered whole. */
const MAX_ERROR_BYTES = 16_384

/**
 * Presents an OpenAI-compatible server with the Workers AI binding's `run()` shape: `{ model, ...inputs }`
 * is POSTed to `/chat/completions`; a whole answer is the parsed chat-completion object, a `stream: true`
 * answer the response body (OpenAI SSE chunks, which the guard reads as the chat format). An HTTP error
 * becomes a thrown `Error` whose message carries the status and the server's own message, so the guard
 * maps it as it maps the binding's errors (429 stays 429, a length refusal 400, anything else 502).
 * Network errors are thrown as they come. The guard needs the deployment's real figures as a profile:
 * only the operator knows the KV pool their engine was started with.
 *
 * @example
 * const upstream = openAiHttpUpstream({ baseUrl: 'http://sglang.internal:30000/v1', apiKey: env.SGLANG_KEY })
 * const ai = guardAi(upstream, {
 *   secret: env.GUARD_SECRET,
 *   tenant: 'acme',
 *   models: { 'zai-org/GLM-5.3': { contextWindow: 1_048_576, kvPoolTokens: 681_280 } },
 * })
 * const out = await ai.run('zai-org/GLM-5.3', { messages: [{ role: 'user', content: 'Hello' }] })
 */
export function openAiHttpUpstream(options: OpenAiHttpOptions): AiRunner {
  const url = chatCompletionsUrl(options.baseUrl)
  const send = options.fetch ?? ((input: string, init: RequestInit) => fetch(input, init))
  const fixedHeaders: Record<string, string> = {
    ...options.headers,
    'content-type': 'application/json',
  }
  if (options.apiKey !== undefined) fixedHeaders.authorization = `Bearer ${options.apiKey}`
  return {
    async run(model, inputs, runOptions) {
      const stream = inputs.stream === true
      const init: RequestInit = {
        method: 'POST',
        headers: {
          ...extraHeaders(runOptions),
          ...fixedHeaders,
          accept: stream ? 'text/event-stream' : 'application/json',
        },
        body: JSON.stringify({ ...toChatInputs(inputs), model }),
      }
      const signal = runOptions?.signal
      if (signal instanceof AbortSignal) init.signal = signal
      const response = await send(url, init)
      if (!response.ok) throw await httpError(response)
      if (stream) {
        if (!response.body) throw new Error('OpenAI-compatible upstream sent an empty stream')
        return response.body
      }
      return await response.json()
    },
  }
}

function chatCompletionsUrl(baseUrl: string): string {
  if (typeof baseUrl !== 'string' || !/^https?:\/\//i.test(baseUrl)) {
    throw new Error('option "baseUrl" must be an http(s) URL such as http://localhost:30000/v1')
  }
  return `${baseUrl.replace(/\/+$/, '')}/chat/completions`
}

/** Workers AI's `{ prompt }` input is one user turn; OpenAI servers only take `messages`. */
function toChatInputs(inputs: Record<string, unknown>): Record<string, unknown> {
  if (inputs.messages !== undefined || typeof inputs.prompt !== 'string') return inputs
  const { prompt, raw: _raw, ...rest } = inputs
  return { ...rest, messages: [{ role: 'user', content: prompt }] }
}

/** The binding's per-call `extraHeaders` option (the AI SDK provider sends session affinity there). */
function extraHeaders(runOptions: Record<string, unknown> | undefined): Record<string, string> {
  const extra = runOptions?.extraHeaders
  if (extra === null || typeof extra !== 'object') return {}
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(extra)) {
    if (typeof value === 'string') out[name] = value
  }
  return out
}

/**
 * The thrown error for a non-2xx answer. The status leads the message because the guard classifies
 * upstream failures by their message (the binding has no status): `429` → retry later, a length
 * refusal → 400, anything else → 502. The server's message is kept; the guard shortens and redacts it.
 */
async function httpError(response: Response): Promise<Error> {
  const text = await readBounded(response)
  let detail = text.trim()
  try {
    const body: unknown = JSON.parse(text)
    detail = errorMessage(body) ?? detail
  } catch {
    // Not JSON (a proxy's HTML page, plain text): the text itself is the best detail there is.
  }
  const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ''}`
  return new Error(
    `OpenAI-compatible upstream returned HTTP ${status}${detail ? `: ${detail.slice(0, 500)}` : ''}`,
  )
}

/** `{ error: { message, code } }` (OpenAI, SGLang, vLLM), `{ error: '…' }` or `{ message }`. */
function errorMessage(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined
  const record = body as Record<string, unknown>
  const error = record.error
  if (typeof error === 'string') return error
  if (error !== null && typeof error === 'object') {
    const { message, code } = error as Record<string, unknown>
    if (typeof message === 'string') {
      return typeof code === 'string' && code !== '' ? `${message} (${code})` : message
    }
  }
  return typeof record.message === 'string' ? record.message : undefined
}

async function readBounded(response: Response): Promise<string> {
  if (!response.body) return ''
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      size += next.value.byteLength
      text += decoder.decode(next.value, { stream: true })
      if (size >= MAX_ERROR_BYTES) {
        await reader.cancel()
        break
      }
    }
  } catch {
    // A body that breaks off still leaves the status to report.
  }
  return text + decoder.decode()
}
