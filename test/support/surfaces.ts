/**
 * @module The guard's three surfaces driven the same way, reporting exactly what a client received.
 */
import { Hono } from 'hono'
import { aiGuard, GuardError, type GuardOptions, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { sseText } from './prompts'

/** What one client got back: the whole body as text (answer, stream or error), and the status. */
export interface Delivered {
  status: number
  /** The bytes as received (JSON, SSE or error body). */
  body: string
  /**
   * Every model-written text the client got, joined per channel (stream deltas concatenated), so a
   * leaked phrase split across SSE events is still found; plus the raw body for anything else.
   */
  text: string
  /** The guard error code, when the request was refused or withheld. */
  code?: string
  incidentId?: string
}

/** A way of calling the guard, bound to an upstream and shared guard options. */
export type Surface = (
  upstream: AiRunner,
  options: GuardOptions,
) => (tenant: string, model: string, inputs: Record<string, unknown>) => Promise<Delivered>

async function deliveredFromError(error: unknown): Promise<Delivered> {
  if (!(error instanceof GuardError)) throw error
  const res = error.getResponse()
  const body = await res.text()
  return {
    status: res.status,
    body,
    text: body,
    code: error.code,
    ...(error.incidentId ? { incidentId: error.incidentId } : {}),
  }
}

async function fromResponse(res: Response): Promise<Delivered> {
  const body = await res.text()
  const out: Delivered = { status: res.status, body, text: deliveredText(body) }
  if (res.status >= 400) {
    const parsed = JSON.parse(body) as { error: { code: string; incident_id?: string } }
    out.code = parsed.error.code
    if (parsed.error.incident_id) out.incidentId = parsed.error.incident_id
  } else {
    // A stream may still end in an error event after release.
    const match = /"code":"([a-z_]+)"[^}]*"incident_id":"([^"]+)"/.exec(body)
    if (match?.[1] === 'response_quarantined') {
      out.code = match[1]
      out.incidentId = match[2]!
    }
  }
  return out
}

/** `guardAi(upstream, options).run(...)`, one guard shared by every tenant's runner. */
export const direct: Surface = (upstream, options) => {
  const runners = new Map<string, AiRunner>()
  return async (tenant, model, inputs) => {
    let ai = runners.get(tenant)
    if (!ai) {
      ai = guardAi(upstream, { ...options, tenant })
      runners.set(tenant, ai)
    }
    try {
      const out = await ai.run(model, inputs)
      if (out instanceof ReadableStream) {
        return await fromResponse(new Response(out as ReadableStream<Uint8Array>))
      }
      const body = JSON.stringify(out)
      return { status: 200, body, text: deliveredText(body) }
    } catch (error) {
      return deliveredFromError(error)
    }
  }
}

/** The Hono middleware in a small existing app, tenant from the app's own auth header. */
export const middleware: Surface = (upstream, options) => {
  const app = middlewareApp(upstream, options)
  return async (tenant, model, inputs) =>
    fromResponse(
      await app.request(`/chat/${model}`, {
        method: 'POST',
        headers: { 'x-user': tenant, 'content-type': 'application/json' },
        body: JSON.stringify(inputs),
      }),
    )
}

/** Both ways the guard is used, named: every surface test runs through each. */
export const SURFACES: readonly (readonly [name: string, surface: Surface])[] = [
  ['guardAi', direct],
  ['middleware', middleware],
]

/**
 * The small existing app of {@link middleware}: `POST /chat/<model>` through `aiGuard`, the tenant
 * from its `x-user` header.
 */
export function middlewareApp(upstream: AiRunner, options: GuardOptions): Hono {
  const { tenant: _ignored, ...rest } = options
  const app = new Hono()
  app.use(
    '/chat/*',
    aiGuard({ ...rest, upstream: () => upstream, tenant: (c) => c.req.header('x-user') ?? 'anon' }),
  )
  app.post('/chat/:model{.+}', async (c) => {
    const out = await c.var.ai.run(c.req.param('model'), await c.req.json())
    if (out instanceof ReadableStream) {
      return new Response(out as ReadableStream<Uint8Array>, {
        headers: { 'content-type': 'text/event-stream' },
      })
    }
    return c.json(out as Record<string, unknown>)
  })
  return app
}

/** All texts in a JSON answer or an SSE body, deltas joined per channel, then the raw body. */
export function deliveredText(body: string): string {
  if (!body.startsWith('data:') && !body.includes('\ndata:')) return body
  const { reasoning, content } = sseText(body)
  return `${reasoning}\n${content}\n${body}`
}

export { fromResponse }
