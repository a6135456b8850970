/**
 * @module The smallest real consumer of workers-ai-guard, the files the README's "Use it in your code"
 * is copied from: one guard per isolate, wrapped per request (`/ask`), the `guardAi` one-liner
 * (`/ask-once`), and a Hono app with the `aiGuard` middleware (`/chat`), all on one Worker.
 */
// #region readme-guard
import { env } from 'cloudflare:workers'
import { Hono } from 'hono'
import {
  type AiRunner,
  aiGuard,
  createGuard,
  GuardError,
  guardAi,
  sseResponse,
} from 'workers-ai-guard'
import { signInFirst, verifiedUser } from './auth' // your own sign-in: a key, session or token

const MODEL = '@cf/zai-org/glm-5.3'

// Once per isolate, at module scope: every request shares what the guard keeps (the incidents it
// recorded, whose canary is whose, what it learned of the model's timing).
const guard = createGuard({ secret: env.GUARD_SECRET })
// #endregion

// #region readme-worker
export default {
  async fetch(request, env, ctx): Promise<Response> {
    const { pathname } = new URL(request.url)
    if (pathname === '/chat') return app.fetch(request, env, ctx)
    const user = await verifiedUser(request, env.USER_KEYS)
    if (!user) return signInFirst()
    if (pathname === '/ask') {
      // Per request: a runner for this user over this request's binding (cheap: no I/O).
      const ai = guard.wrap(env.AI, { tenant: user, waitUntil: (p) => ctx.waitUntil(p) })
      return answer(ai, request)
    }
    if (pathname === '/ask-once') {
      // #region readme-guard-ai
      const ai = guardAi(env.AI, { secret: env.GUARD_SECRET, tenant: user })
      // #endregion
      return answer(ai, request)
    }
    return new Response('Not found', { status: 404 })
  },
} satisfies ExportedHandler<Env>

/** Asks the model the body's `question`; a guard error becomes its ready OpenAI-style response. */
async function answer(ai: AiRunner, request: Request): Promise<Response> {
  const body = await request.json<{ question?: unknown }>().catch(() => undefined)
  if (typeof body?.question !== 'string') {
    return new GuardError('invalid_request', 'Send {"question": "…"}.', {
      param: 'question',
    }).getResponse()
  }
  try {
    const messages = [{ role: 'user', content: body.question }]
    return Response.json(await ai.run(MODEL, { messages }))
  } catch (error) {
    // 400 context_length_exceeded (before any upstream call), 422 response_quarantined (an incident).
    if (error instanceof GuardError) return error.getResponse()
    throw error
  }
}
// #endregion

// #region readme-hono
// A Hono app: the middleware puts a runner over the same guard at c.var.ai, and answers guard errors
// (and, through c.var.aiBody, a body that is not JSON) with OpenAI-style responses.
const app = new Hono<{ Bindings: Env; Variables: { user: string } }>()
app.use('/chat', async (c, next) => {
  const user = await verifiedUser(c.req.raw, c.env.USER_KEYS)
  if (!user) return signInFirst()
  c.set('user', user)
  await next()
})
app.use('/chat', aiGuard({ guard, tenant: (c) => c.var.user }))
app.post('/chat', async (c) => {
  const { messages, stream } = await c.var.aiBody<{ messages: unknown[]; stream?: boolean }>()
  // A stream is SSE bytes for sseResponse; a whole answer is typed (answer.choices[0].message).
  if (stream === true) return sseResponse(await c.var.ai.run(MODEL, { messages, stream: true }))
  return c.json(await c.var.ai.run(MODEL, { messages }))
})
// #endregion
