/**
 * @module Hono middleware: a guarded Workers AI runner at `c.var.ai`, guard errors as OpenAI-style responses.
 */
import type { Context, MiddlewareHandler } from 'hono'
import type { AiRunner } from '../call/upstream'
import { GuardError } from '../errors'
import type { EvidencePlugins } from '../vocabulary/evidence-plugins'
import type { GuardOptions } from '../vocabulary/options'
import { type AiGuard, createGuard } from './guard-ai'
import type { GuardedAi } from './typed-runner'

/** The variables `aiGuard` sets on the context. */
export interface AiGuardVariables {
  /**
   * The guarded runner: call `c.var.ai.run(model, inputs)` exactly like `env.AI.run`; a whole answer
   * is typed (`AiAnswer`), a stream is SSE bytes for `sseResponse`.
   */
  ai: GuardedAi
  /**
   * The request's JSON body, parsed once (Hono caches it): a body that is not JSON throws a 400
   * `invalid_request` `GuardError` — the client's mistake — where `c.req.json()` would throw a
   * SyntaxError that Hono answers (and logs) as a 500. The app's own `c.req` is left as it is.
   *
   * @example
   * const inputs = await c.var.aiBody<{ messages: unknown[] }>()
   */
  aiBody: <T = Record<string, unknown>>() => Promise<T>
}

declare module 'hono' {
  interface ContextVariableMap extends AiGuardVariables {}
}

/** Per-request choices of {@link aiGuard}: the tenant, the upstream and the error response. */
interface AiGuardRequestOptions {
  /**
   * Who the request belongs to: a fixed id, or a function of the context returning what the server
   * verified (the user an auth middleware proved from a key, session or token) — never a header or
   * body field the client writes, or one client could pose as another tenant, or as many.
   * @default 'default'
   */
  tenant?: string | ((c: Context) => string | Promise<string>)
  /** The upstream to guard. @default c.env.AI */
  upstream?: (c: Context) => AiRunner
  /** Turns a guard error into a response. @default the OpenAI-style body with the error's status */
  onError?: (error: GuardError, c: Context) => Response | Promise<Response>
}

/**
 * Options of {@link aiGuard}: the guard's own options (a guard is created with the middleware), or an
 * existing guard from {@link createGuard} to share with other code of the isolate; plus the per-request
 * choices.
 */
export type AiGuardOptions =
  | (Omit<GuardOptions, 'tenant'> & AiGuardRequestOptions & { guard?: never })
  | (AiGuardRequestOptions & { guard: AiGuard })

/**
 * Puts a guarded runner on `c.var.ai`. Options are validated once, when the middleware is created; a
 * `GuardError` thrown by a handler becomes its OpenAI-style response (or `onError`'s).
 *
 * @example
 * const app = new Hono<{ Bindings: { AI: Ai }; Variables: { userId: string } }>()
 * // The app's auth runs first and sets the user it verified (here: a bearer key it looked up).
 * app.use('/chat/*', async (c, next) => {
 *   const userId = await userForKey(c.req.header('authorization'))
 *   if (!userId) return c.json({ error: 'Sign in first.' }, 401)
 *   c.set('userId', userId)
 *   await next()
 * })
 * // The tenant is that verified user, never a header the client writes (x-user, x-tenant): whoever
 * // names their own tenant can pose as another (their requests count and teach as its own, incidents
 * // name the wrong tenant) or as many (every per-tenant bound becomes per request).
 * app.use('/chat/*', aiGuard({ secret: SECRET, tenant: (c) => c.var.userId }))
 * app.post('/chat', async (c) => c.json(await c.var.ai.run('@cf/zai-org/glm-5.3', await c.var.aiBody())))
 */
export function aiGuard(options: AiGuardOptions, plugins: EvidencePlugins): MiddlewareHandler {
  const { tenant, upstream, onError, guard: shared, ...guardOptions } = options
  if (tenant !== undefined && typeof tenant !== 'string' && typeof tenant !== 'function') {
    throw new Error('option "tenant" must be a string or a function of the context')
  }
  const guard = shared ?? createGuard(guardOptions as GuardOptions, plugins)
  return async function aiGuard(c, next) {
    const ai = upstream ? upstream(c) : (c.env as { AI?: AiRunner } | undefined)?.AI
    if (!ai || typeof ai.run !== 'function') {
      throw new Error('aiGuard: no upstream; bind Workers AI as "AI" or pass the "upstream" option')
    }
    const who = typeof tenant === 'function' ? await tenant(c) : tenant
    // The runner resolves to the binding's own shapes (or a stream), which GuardedAi types.
    c.set('ai', guard.wrap(ai, { tenant: who, waitUntil: hostWaitUntil(c) }) as GuardedAi)
    c.set('aiBody', () => jsonBody(c))
    await next()
    if (c.error instanceof GuardError) {
      c.res = onError ? await onError(c.error, c) : c.error.getResponse()
    }
  }
}

/** The body as JSON; only a parse failure becomes the client's 400, every other error stays as it is. */
async function jsonBody<T>(c: Context): Promise<T> {
  try {
    return (await c.req.json()) as T
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error
    throw new GuardError('invalid_request', 'The request body is not valid JSON.', { cause: error })
  }
}

/** The host's `waitUntil`, where there is one (Workers), so background writes outlive the response. */
function hostWaitUntil(c: Context): ((promise: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx
    return (promise) => ctx.waitUntil(promise)
  } catch {
    // Node, tests and other hosts have no execution context.
    return undefined
  }
}
