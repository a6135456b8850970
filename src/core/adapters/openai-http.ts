/**
 * @module An `AiRunner` over any OpenAI-compatible chat-completions server (SGLang, vLLM, …), so
 * self-hosted engines get the same three guards as the Workers AI binding.
 *
 * SGLang in PD-disaggregated mode can swap an oversized request for a one-token placeholder and
 * answer it from other tenants' KV pages with HTTP 200 (docs/ecosystem.md). A self-hoster runs that
 * code, so the guard must sit in front of it exactly as it sits in front of `env.AI`.
 */
import type { AiRunner } from '../call/upstream'

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
 * The only request fields sent to the engine (with `model`, which the adapter sets); any other field
 * in `inputs` is dropped. An allowlist, not a denylist, because vLLM and SGLang each accept dozens of
 * extra fields and add more every release, and some of them break the guard's proofs:
 *
 * - `echo`, `add_generation_prompt: false`, `continue_final_message` make the engine continue or copy
 *   the prompt — its final directive included, and so a valid canary echo — into an answer that was
 *   never generated from the prompt. Never forwarded.
 * - `logprobs`, `top_logprobs`, `prompt_logprobs`, `return_tokens_as_token_ids` return text (or token
 *   ids of text) in fields the output scanner does not read: a leak could ride there. Never forwarded.
 * - `chat_template`, `chat_template_kwargs`, `documents` change what the model reads beyond the
 *   messages the ceiling counted (a template can drop the directive or add uncounted text), and `raw`
 *   (Workers AI) skips the template. `truncate_prompt_tokens` cuts the prompt the ceiling counted.
 *   Never forwarded.
 * - Engine plumbing (`kv_transfer_params`, `bootstrap_host`/`bootstrap_room`, `rid`, `priority`,
 *   `lora_path`, `return_hidden_states`) is the operator's, never a client's.
 * - Constrained decoding in engine dialects (`guided_regex`, `guided_choice`, `guided_grammar`,
 *   `structured_outputs`, `regex`, `ebnf`, `json_schema`) forces output in forms the guard does not
 *   read: `response_format` is the one it knows. Workers AI's `guided_json` (a JSON schema) is sent
 *   as that: `response_format: { type: 'json_schema', … }`.
 * - `n`: the guard verifies one choice. `modalities`/`audio`: audio output is not text the scanner
 *   reads. `prediction`: text the client offers as the answer. OpenAI platform bookkeeping (`store`,
 *   `metadata`, `service_tier`, `prompt_cache_key`, `safety_identifier`, `web_search_options`,
 *   `verbosity`) means nothing to a self-hosted engine.
 *
 * Forwarded: `cache_salt` (vLLM's prefix-cache scope), which only the guard sets — a client's is
 * dropped when the request is read, and a profile's `cacheIsolation: 'salt'` adds the tenant's —
 * and the OpenAI chat-completions fields that only shape sampling, stopping, tools and output
 * format (which the guard reads and verifies), plus `top_k`, `min_p` and `repetition_penalty`, which
 * the Workers AI binding's chat models take too and which only choose among the model's own next
 * tokens.
 *
 * @example
 * FORWARDED_FIELDS.has('temperature') // true
 * FORWARDED_FIELDS.has('echo') // false
 */
const FORWARDED_FIELDS: ReadonlySet<string> = new Set([
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'seed',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'repetition_penalty',
  'logit_bias',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'response_format',
  'reasoning_effort',
  'user',
  'cache_salt',
])

/**
 * Presents an OpenAI-compatible server with the Workers AI binding's `run()` shape: the model and the
 * {@link FORWARDED_FIELDS} of `inputs` (no other field) are POSTed to `/chat/completions`; a whole answer is the parsed chat-completion object, a `stream: true`
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
        body: JSON.stringify(forwardedBody(model, inputs)),
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

/**
 * The body the engine receives: the {@link FORWARDED_FIELDS} of `inputs` and the model. Workers AI's
 * `{ prompt }` input is one user turn (OpenAI servers only take `messages`), and its `guided_json`
 * schema a `json_schema` response format.
 */
function forwardedBody(model: string, inputs: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {}
  for (const field of FORWARDED_FIELDS) {
    if (Object.hasOwn(inputs, field) && inputs[field] !== undefined) body[field] = inputs[field]
  }
  if (body.messages === undefined && typeof inputs.prompt === 'string') {
    body.messages = [{ role: 'user', content: inputs.prompt }]
  }
  const schema = inputs.guided_json
  if (body.response_format === undefined && isObject(schema) && Object.keys(schema).length > 0) {
    body.response_format = { type: 'json_schema', json_schema: { name: 'guided_json', schema } }
  }
  body.model = model
  return body
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
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
