/**
 * @module The simulator over HTTP: OpenAI-compatible `POST /v1/chat/completions` plus `/sim/*` controls,
 * so gateways and the bench can drive the same leaky engine without a Workers binding.
 */
import { parseSimConfig } from './config'
import type { SimEngine } from './engine'
import { AI_ERROR, aiErrorCode } from './errors'

/** An OpenAI-style error body. */
export interface SimErrorBody {
  error: { message: string; type: string; code: string; param: string | null }
}

/**
 * A fetch handler over `engine`. The bearer token names the account whose prefix cache a request uses,
 * and a `cache_salt` body field (vLLM's) scopes it further to (account, salt); an `x-session-affinity`
 * header is recorded as the request's `affinity`; the chat format is always used (OpenAI clients do not
 * speak the legacy one).
 *
 * @example
 * const handle = simFetchHandler(new SimEngine({ poolTokens: 4096 }))
 * const res = await handle(new Request('http://sim/v1/chat/completions', { method: 'POST', body }))
 */
export function simFetchHandler(engine: SimEngine): (request: Request) => Promise<Response> {
  return async function simFetch(request) {
    const { pathname } = new URL(request.url)
    try {
      if (request.method === 'POST' && pathname === '/v1/chat/completions') {
        return await chatCompletions(engine, request)
      }
      if (request.method === 'POST' && pathname === '/sim/config') {
        return json({ config: engine.configure(parseSimConfig(await readJson(request, {}))) })
      }
      if (request.method === 'POST' && pathname === '/sim/reset') {
        return json({ config: engine.reset(parseSimConfig(await readJson(request, {}))) })
      }
      if (request.method === 'GET' && pathname === '/sim/stats') return json(engine.stats())
      return errorResponse(
        404,
        'not_found',
        `No route for ${request.method} ${pathname}`,
        'invalid_request_error',
      )
    } catch (error) {
      return fromError(error)
    }
  }
}

async function chatCompletions(engine: SimEngine, request: Request): Promise<Response> {
  const body = await readJson(request, undefined)
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequest('The body must be a JSON object')
  }
  const { model, ...inputs } = body as Record<string, unknown>
  if (typeof model !== 'string' || model.length === 0) {
    return errorResponse(
      400,
      'invalid_request',
      'model is required',
      'invalid_request_error',
      'model',
    )
  }
  const auth = request.headers.get('authorization') ?? ''
  const account = /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim() ?? 'anonymous'
  // The OpenAI HTTP surface carries the binding's `extraHeaders` as real headers.
  const affinity = request.headers.get('x-session-affinity')
  const result = await engine.request({ model, inputs, account, format: 'chat', affinity })
  if (result instanceof ReadableStream) {
    return new Response(result, {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
    })
  }
  return json(result)
}

class BadRequest extends Error {}

async function readJson(request: Request, empty: unknown): Promise<unknown> {
  const text = await request.text()
  if (text.trim() === '') return empty
  try {
    return JSON.parse(text)
  } catch {
    throw new BadRequest('The body is not valid JSON')
  }
}

function fromError(error: unknown): Response {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof BadRequest) {
    return errorResponse(400, 'invalid_request', message, 'invalid_request_error')
  }
  switch (aiErrorCode(error)) {
    case AI_ERROR.contextLength:
      return errorResponse(
        400,
        'context_length_exceeded',
        message,
        'invalid_request_error',
        'messages',
      )
    case AI_ERROR.capacity:
      return errorResponse(429, 'capacity_exceeded', message, 'rate_limit_error')
    case AI_ERROR.invalidInput:
      return errorResponse(400, 'invalid_request', message, 'invalid_request_error')
  }
  // Config validation errors name the option; everything else is the simulator's own fault.
  if (message.startsWith('SimConfig')) {
    return errorResponse(400, 'invalid_config', message, 'invalid_request_error')
  }
  return errorResponse(500, 'internal_error', message, 'server_error')
}

function errorResponse(
  status: number,
  code: string,
  message: string,
  type: string,
  param: string | null = null,
): Response {
  const body: SimErrorBody = { error: { message, type, code, param } }
  return json(body, status)
}

/** JSON has no Infinity: rates set to Infinity travel as the string 'Infinity'. */
function json(value: unknown, status = 200): Response {
  const text = JSON.stringify(value, (_key, v: unknown) =>
    v === Number.POSITIVE_INFINITY ? 'Infinity' : v,
  )
  return new Response(text, { status, headers: { 'content-type': 'application/json' } })
}
