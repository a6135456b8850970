/**
 * @module An existing Hono app on Workers (a small chat endpoint behind its own API keys) with the
 * guard added: the two lines marked "workers-ai-guard" are the whole change.
 */
import { Hono } from 'hono'
import { aiGuard, sseResponse } from 'workers-ai-guard' // workers-ai-guard

/** The app's bindings: Workers AI, the canary secret and the app's own API keys. */
export interface Bindings {
  AI: Ai
  /** `wrangler secret put GUARD_SECRET` (≥ 32 random bytes). */
  GUARD_SECRET: string
  /** JSON `{ "<sha-256 hex of an API key>": "<user id>" }`: `wrangler secret put USER_KEYS`. */
  USER_KEYS: string
}

type AppEnv = { Bindings: Bindings; Variables: { user: string } }

const MODEL = '@cf/zai-org/glm-5.3'

/**
 * The user an `Authorization: Bearer <key>` header proves, or undefined. Keys are stored hashed and
 * looked up by hash, so neither the stored keys nor the comparison reveal a key.
 *
 * @example
 * await userFor('{"d0ee…": "alice"}', 'Bearer dev-key-alice') // 'alice'
 */
export async function userFor(
  keys: string,
  authorization: string | undefined,
): Promise<string | undefined> {
  const key = authorization?.match(/^Bearer ([^\s,]+)$/)?.[1]
  if (!key) return undefined
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key))
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
  let users: unknown
  try {
    users = JSON.parse(keys)
  } catch {
    return undefined
  }
  const user = (users as Record<string, unknown> | null)?.[hex]
  return typeof user === 'string' && user !== '' ? user : undefined
}

/**
 * The app. The guard is built once here, so its per-isolate state (calibration, tenant tags) lasts.
 *
 * @example
 * export default createApp(env.GUARD_SECRET)
 */
export function createApp(secret: string): Hono<AppEnv> {
  const app = new Hono<AppEnv>()

  // The app's own authentication, unchanged: the key the server checked decides whose request it is.
  app.use('/chat', async (c, next) => {
    const user = await userFor(c.env.USER_KEYS, c.req.header('authorization'))
    if (!user) {
      // The OpenAI error shape, as the guard's own errors have it: clients read every refusal alike.
      const error = {
        message: 'Sign in first.',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      }
      return c.json({ error: { ...error, param: null } }, 401)
    }
    c.set('user', user)
    await next()
  })

  // workers-ai-guard: a guarded runner at c.var.ai, one tenant per verified user. Never a header or a
  // body field the client writes: a client that names its tenant can pose as another (its requests
  // then teach and count as that tenant's, and its incidents name the wrong one) or as many.
  app.use('/chat', aiGuard({ secret, tenant: (c) => c.get('user') }))

  app.post('/chat', async (c) => {
    const { question, stream } = await c.var.aiBody<{ question: string; stream?: boolean }>()
    // Was `c.env.AI.run(...)`: same inputs, same outputs, canaries stripped, leaks withheld.
    const answer = await c.var.ai.run(MODEL, {
      messages: [{ role: 'user', content: question }],
      stream: stream === true,
    })
    if (answer instanceof ReadableStream) return sseResponse(answer)
    return c.json(answer)
  })

  return app
}
