/**
 * @module An existing Hono app on Workers (a small chat endpoint behind its own auth) with the guard
 * added: the two lines marked "workers-ai-guard" are the whole change.
 */
import { Hono } from 'hono'
import { aiGuard } from 'workers-ai-guard' // workers-ai-guard

/** The app's bindings: Workers AI and the canary secret (`wrangler secret put GUARD_SECRET`). */
export interface Bindings {
  AI: Ai
  GUARD_SECRET: string
}

type AppEnv = { Bindings: Bindings; Variables: { user: string } }

const MODEL = '@cf/zai-org/glm-5.3'

/**
 * The app. The guard is built once here, so its per-isolate state (calibration, tenant tags) lasts.
 *
 * @example
 * export default createApp(env.GUARD_SECRET)
 */
export function createApp(secret: string): Hono<AppEnv> {
  const app = new Hono<AppEnv>()

  // The app's own authentication, unchanged: who is asking decides whose request it is.
  app.use('/chat', async (c, next) => {
    const user = c.req.header('x-user')
    if (!user) return c.json({ error: 'Sign in first.' }, 401)
    c.set('user', user)
    await next()
  })

  // workers-ai-guard: a guarded runner at c.var.ai, one tenant per user.
  app.use('/chat', aiGuard({ secret, tenant: (c) => c.get('user') }))

  app.post('/chat', async (c) => {
    const { question, stream } = await c.req.json<{ question: string; stream?: boolean }>()
    // Was `c.env.AI.run(...)`: same inputs, same outputs, canaries stripped, leaks withheld.
    const answer = await c.var.ai.run(MODEL, {
      messages: [{ role: 'user', content: question }],
      stream: stream === true,
    })
    if (answer instanceof ReadableStream) {
      return new Response(answer, { headers: { 'content-type': 'text/event-stream' } })
    }
    return c.json(answer as Record<string, unknown>)
  })

  return app
}
