/**
 * @module The deployable guard Worker: an OpenAI-compatible endpoint and a native Workers AI route.
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import type { AiRunner } from '../core'
import { GuardError, guardInfo } from '../core'
import { adminRoutes } from './admin'
import { type AdmissionVariables, admitMemory } from './admission'
import { type BodyBudget, readJsonObject } from './body'
import { bodyLimit, bodyPace, guardFor } from './config'
import { cors } from './cors'
import type { Env } from './env'
import { modelList, unknownModel } from './models'
import { fromOpenAi, openAiSseBody, refusalBody, SSE_HEADERS, toChatCompletion } from './openai'
import { tenantFor } from './tenants'

type AppEnv = { Bindings: Env; Variables: { tenant: string } & AdmissionVariables }

type AppContext = Context<AppEnv>

/**
 * The Worker's Hono app.
 *
 * @example
 * export default { fetch: createApp().fetch } satisfies ExportedHandler<Env>
 */
export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>()
  app.get('/health', (c) => c.json({ ok: true, service: 'workers-ai-guard' }))
  // Before the key: a browser's preflight carries none. Only the operator's origins get CORS headers.
  app.use(
    '/v1/*',
    cors<AppEnv>((env) => env.GUARD_CORS_ORIGINS),
  )
  app.use(
    '/ai/*',
    cors<AppEnv>((env) => env.GUARD_CORS_ORIGINS),
  )
  // Every model route needs a tenant: the key alone decides it, never a header the client picks.
  app.use('/v1/*', requireTenant(OPENAI_UNAUTHORIZED))
  app.use('/ai/*', requireTenant(NATIVE_UNAUTHORIZED))
  // Before any body is read: concurrent long prompts share the isolate's 128 MB.
  app.post('/v1/chat/completions', admitMemory())
  app.post('/ai/run/*', admitMemory())
  app.get('/v1/models', (c) => c.json(modelList(guardFor(c.env))))
  app.post('/v1/chat/completions', chatCompletions)
  app.post('/ai/run/*', runNative)
  // A route called with another method is a 405 naming the one it takes, not a "Not found".
  app.all('/v1/models', methodNotAllowed('GET'))
  app.all('/v1/chat/completions', methodNotAllowed('POST'))
  app.all('/ai/run/*', methodNotAllowed('POST'))
  app.route('/admin', adminRoutes())
  // The simulator's control routes (/sim/config, /sim/reset, /sim/stats) under `npm start`, where
  // wrangler.dev.toml binds it as SIM; production has no such binding, so they are not found there.
  app.all('/sim/*', (c) => (c.env.SIM ? c.env.SIM.fetch(c.req.raw) : c.notFound()))
  app.notFound((c) => c.json(refusalBody('not_found', 'Not found.'), 404))
  app.onError(errorResponse)
  return app
}

/** The 401 body of each surface, in the error shape its clients parse. */
const OPENAI_UNAUTHORIZED = refusalBody(
  'invalid_api_key',
  'Missing or unknown API key; send Authorization: Bearer <key>.',
)
const NATIVE_UNAUTHORIZED = {
  success: false,
  errors: [{ code: 10000, message: 'Missing or unknown API key.' }],
}

/** A 405 with `Allow` and the OpenAI error body, for a route that answers only `allowed`. */
function methodNotAllowed(allowed: 'GET' | 'POST'): (c: AppContext) => Response {
  return function notAllowed(c) {
    const body = refusalBody(
      'method_not_allowed',
      `${c.req.method} is not allowed on ${c.req.path}; use ${allowed}.`,
    )
    return c.json(body, 405, { allow: allowed })
  }
}

/** Middleware: the tenant of the bearer key at `c.get('tenant')`, or a 401 with the surface's body. */
function requireTenant(unauthorized: object): MiddlewareHandler<AppEnv> {
  return async function tenant(c, next) {
    const found = await tenantFor(c.env, c.req.header('authorization'))
    if (!found) return c.json(unauthorized, 401)
    c.set('tenant', found)
    await next()
  }
}

/** `POST /v1/chat/completions`: an OpenAI chat body in, an OpenAI answer or chunk stream out. */
async function chatCompletions(c: AppContext): Promise<Response> {
  const { model, inputs } = fromOpenAi(await readJsonObject(c.req.raw, modelBodyBudget(c)))
  const refused = unknownModel(guardFor(c.env), model)
  if (refused) return refused
  const output = await runnerFor(c).run(model, inputs)
  if (output instanceof ReadableStream) {
    // Chat-format streams are already OpenAI chunks, sent as they are: only legacy events need rewriting.
    return streamResponse(output, guardInfo(output)?.format === 'chat' ? undefined : model)
  }
  return c.json(toChatCompletion(output, model), 200, headersFor(output))
}

/** `POST /ai/run/<model>`: the Workers AI input and output shapes, as `env.AI.run` takes and returns them. */
async function runNative(c: AppContext): Promise<Response> {
  const model = modelFromPath(c.req.path)
  const inputs = await readJsonObject(c.req.raw, modelBodyBudget(c))
  const refused = unknownModel(guardFor(c.env), model)
  if (refused) return refused
  const output = await runnerFor(c).run(model, inputs)
  if (output instanceof ReadableStream) return streamResponse(output)
  return c.json(output as Record<string, unknown>, 200, headersFor(output))
}

/** A model request's body: its limit, its pace, and admission hearing its size as it streams. */
function modelBodyBudget(c: AppContext): BodyBudget {
  // `c.get`, not `c.var`: Hono builds a new object of every variable on each `c.var` read.
  const admission = c.get('admission')
  return { limit: bodyLimit(c.env), pace: bodyPace(c.env), sized: (n) => admission.cover(n) }
}

/**
 * A guarded stream as the client's SSE response, ended by an error event if the guard stops it;
 * legacy events rewritten as chat chunks of `chatModel` when it is given.
 */
function streamResponse(guarded: ReadableStream<Uint8Array>, chatModel?: string): Response {
  const body = openAiSseBody(guarded, chatModel === undefined ? {} : { chatModel })
  return new Response(body, { headers: { ...SSE_HEADERS, ...headersFor(guarded) } })
}

function headersFor(output: unknown): Record<string, string> {
  const info = guardInfo(output)
  const headers: Record<string, string> = {}
  if (info) headers['x-guard-request-id'] = info.requestId
  if (info?.clampedMaxTokens !== undefined) {
    headers['x-guard-clamped-max-tokens'] = String(info.clampedMaxTokens)
  }
  return headers
}

/** A guard error answers with its own status and body; anything else is logged and answers 500. */
function errorResponse(error: Error): Response {
  if (error instanceof GuardError) return error.getResponse()
  console.error(JSON.stringify({ event: 'ai_guard_error', error: String(error).slice(0, 300) }))
  const internal = new GuardError('guard_unavailable', 'Internal error; nothing was released.', {
    status: 500,
    cause: error,
  })
  return internal.getResponse()
}

/** Longer than any Workers AI model name (`@cf/<author>/<model>`) or fine-tune id. */
const MAX_MODEL_NAME = 256

/**
 * The model named by `/ai/run/<model>`, percent-decoded once (Hono's `c.req.path` leaves `%25` and the
 * reserved characters encoded for exactly this). A name that does not decode, is empty, too long or
 * holds control characters is the client's mistake: a 400 naming the problem, never a 500.
 */
function modelFromPath(path: string): string {
  let model: string
  try {
    model = decodeURIComponent(path.slice('/ai/run/'.length))
  } catch (error) {
    throw new GuardError(
      'invalid_request',
      'The model name in the path is not valid percent-encoded UTF-8; encode it with encodeURIComponent: POST /ai/run/<model>.',
      { param: 'model', cause: error },
    )
  }
  if (model === '') {
    throw new GuardError('invalid_request', 'The path must name a model: POST /ai/run/<model>.', {
      param: 'model',
    })
  }
  if (model.length > MAX_MODEL_NAME || hasControlCharacter(model)) {
    throw new GuardError(
      'invalid_request',
      `The model name in the path must be 1 to ${MAX_MODEL_NAME} printable characters.`,
      { param: 'model' },
    )
  }
  return model
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20 || (code >= 0x7f && code < 0xa0)) return true
  }
  return false
}

function runnerFor(c: AppContext): AiRunner {
  const { env, executionCtx } = c
  if (!env.AI || typeof env.AI.run !== 'function') {
    throw new GuardError('guard_unavailable', 'No Workers AI binding named AI is configured.')
  }
  const admission = c.get('admission')
  return guardFor(env).wrap(env.AI, {
    tenant: c.get('tenant'),
    waitUntil: (p) => executionCtx.waitUntil(p),
    // Once the engine has the prompt, the request holds far less than while it read and counted it.
    prefilling: () => admission.settle(),
    retrying: () => admission.resume(),
    // What the answer held until its verdict costs is charged as it grows.
    holding: (bytes) => admission.hold(bytes),
  })
}
