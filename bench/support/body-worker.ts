/**
 * @module The body bench's Worker: the guard Worker's own app (`/v1/chat/completions`, today's body
 * reader) and the reader it replaced in front of the same guard (`/before/v1/chat/completions`), both
 * over a stub upstream that serializes what it is given (as the binding does on its way out) and then
 * fails — so the figures are the guard's own work per request, from the first body byte to the call.
 */

import type { AiRunner } from '../../src/core/call/upstream'
import { GuardError } from '../../src/core/errors'
import { createApp } from '../../src/worker/app'
import { guardFor } from '../../src/worker/config'
import type { Env } from '../../src/worker/env'
import { fromOpenAi } from '../../src/worker/openai'

interface Bindings {
  GUARD_SECRET: string
  TENANT_KEYS: string
}

/** The default body limit before this change, for the previous reader. */
const BEFORE_LIMIT = 32 * 1024 * 1024

/** Never answers: the bench measures what the guard does before and at the call. */
const stub: AiRunner = {
  async run(_model, inputs) {
    // The binding serializes the inputs to send them; so does any HTTP upstream.
    const size = JSON.stringify(inputs).length
    throw new Error(`bench stub upstream: not called for real (${size} characters serialized)`)
  },
}

const app = createApp()
let env: Env | undefined

/**
 * The previous `readJsonObject` (src/worker/body.ts before the shape limits), kept here only to
 * measure it: decoded parts in an array, joined, parsed whole; no value count, no depth check.
 */
async function readJsonObjectBefore(
  request: Request,
  limit: number,
): Promise<Record<string, unknown>> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body)
    throw new GuardError('invalid_request', 'The request has no body; send a JSON object.')
  const reader = request.body.getReader()
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })
  const parts: string[] = []
  let size = 0
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      size += next.value.byteLength
      if (size > limit) {
        await reader.cancel()
        throw tooLarge(limit)
      }
      parts.push(decoder.decode(next.value, { stream: true }))
    }
    parts.push(decoder.decode())
  } catch (error) {
    if (error instanceof GuardError) throw error
    throw new GuardError('invalid_request', 'The request body is not valid UTF-8.', {
      cause: error,
    })
  }
  let value: unknown
  try {
    value = JSON.parse(parts.join(''))
  } catch {
    throw new GuardError('invalid_request', 'The request body is not valid JSON.')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GuardError('invalid_request', 'The request body must be a JSON object.')
  }
  return value as Record<string, unknown>
}

function tooLarge(limit: number): GuardError {
  return new GuardError('invalid_request', `The request body is larger than ${limit} bytes.`, {
    status: 413,
  })
}

/** The Worker's chat route as it was, with the previous reader. */
async function before(request: Request, workerEnv: Env, ctx: ExecutionContext): Promise<Response> {
  try {
    const { model, inputs } = fromOpenAi(await readJsonObjectBefore(request, BEFORE_LIMIT))
    const runner = guardFor(workerEnv).wrap(workerEnv.AI, {
      tenant: 'bench',
      waitUntil: (p) => ctx.waitUntil(p),
    })
    return Response.json(await runner.run(model, inputs))
  } catch (error) {
    if (error instanceof GuardError) return error.getResponse()
    return Response.json({ error: String(error).slice(0, 300) }, { status: 500 })
  }
}

export default {
  async fetch(request, bindings, ctx) {
    // One Env object per isolate: the guard (and its loaded tokenizer) is cached per Env.
    env ??= { AI: stub, GUARD_SECRET: bindings.GUARD_SECRET, TENANT_KEYS: bindings.TENANT_KEYS }
    const url = new URL(request.url)
    if (url.pathname === '/before/v1/chat/completions') return before(request, env, ctx)
    return app.fetch(request, env, ctx)
  },
} satisfies ExportedHandler<Bindings>
