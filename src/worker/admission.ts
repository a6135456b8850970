/**
 * @module Memory admission per isolate: every model request reserves what it will cost before its body
 * is read, and one isolate's requests in flight never hold more than its budget — so concurrent long
 * prompts get a 503 with `Retry-After` instead of crashing the isolate with every request in it, and
 * tenants take turns at the memory (src/worker/memory-ledger.ts).
 */
import type { MiddlewareHandler } from 'hono'
import { GuardError, heldBytes } from '../core'
import { discardBody } from './body'
import { bodyLimit, bodyPace, guardIfMade } from './config'
import type { Env } from './env'
import { MemoryLedger, type Reservation } from './memory-ledger'

const ledgers = new WeakMap<Env, MemoryLedger>()

/**
 * The isolate's ledger for these bindings (one `env` per isolate in production), its budget from
 * `GUARD_MEMORY_BUDGET_BYTES`, its queue's wait from `GUARD_ADMISSION_WAIT_MS`.
 *
 * @example
 * const reservation = await memoryLedger(env).admit(tenant, declared)
 */
function memoryLedger(env: Env): MemoryLedger {
  let ledger = ledgers.get(env)
  if (!ledger) {
    ledger = new MemoryLedger(
      optionalNumber(env.GUARD_MEMORY_BUDGET_BYTES),
      optionalNumber(env.GUARD_ADMISSION_WAIT_MS),
      // The text memo fills with traffic (16 MiB by default) and the fingerprint table makes a second
      // generation at its first rotation: what they hold no request may reserve.
      () => guardHeldBytes(env),
    )
    ledgers.set(env, ledger)
  }
  return ledger
}

/**
 * What the guard holds that grows with traffic (its text memo, its fingerprint table's second
 * generation); 0 before a request has made it (it holds nothing yet), and for a guard that is not
 * configured (never made: its requests fail anyway). Asked on every admission decision, so it never
 * makes the guard itself (a bad setting would be logged each time).
 */
function guardHeldBytes(env: Env): number {
  const guard = guardIfMade(env)
  return guard ? heldBytes(guard) : 0
}

/** A setting's number, or undefined when unset (the ledger's default); anything else is refused there. */
function optionalNumber(raw: string | undefined): number | undefined {
  return raw === undefined || raw === '' ? undefined : Number(raw)
}

/** The typed per-request variable the middleware sets. */
export type AdmissionVariables = { admission: Reservation }

/** What the middleware reads: the authenticated tenant, set before it runs (absent: one shared turn). */
type TenantVariables = { tenant?: string }

/**
 * Middleware: reserves the request's cost (its declared `Content-Length`, raised as the body streams
 * in through {@link Reservation.cover}) before anything reads it, and releases it when the response is
 * done — for a stream, when it ends, errors or is cancelled, since the guard holds the answer until then.
 * A refused request's body is read and dropped before its 503 goes out, so a client still uploading
 * gets the answer instead of a connection closed under it.
 *
 * @example
 * app.use('/v1/chat/completions', admitMemory())
 */
export function admitMemory(): MiddlewareHandler<{
  Bindings: Env
  Variables: AdmissionVariables & TenantVariables
}> {
  return async function admission(c, next) {
    const declared = Number(c.req.header('content-length') ?? 0)
    // A declared size over the body limit is the reader's 413 (not retryable), not admission's 503.
    const known = Number.isFinite(declared) && declared <= bodyLimit(c.env) ? declared : 0
    let reservation: Reservation
    try {
      reservation = await memoryLedger(c.env).admit(c.get('tenant') ?? '', known)
    } catch (error) {
      await drainIfRefused(c.req.raw, c.env, error)
      throw error
    }
    let handedOff = false
    try {
      c.set('admission', reservation)
      await next()
      // A body refused mid-way (it grew past what fits) is answered like one refused up front.
      await drainIfRefused(c.req.raw, c.env, c.error)
      const body = c.res.body
      if (body && c.res.headers.get('content-type')?.startsWith('text/event-stream')) {
        c.res = new Response(releaseWhenDone(body, reservation), c.res)
        handedOff = true
      }
    } finally {
      if (!handedOff) reservation.release()
    }
  }
}

/**
 * Reads and drops what is left of the body when `error` is admission's 503: workerd closes a connection
 * whose upload it did not read, and a client still writing then sees EPIPE or a reset, never the 503
 * and its `Retry-After`. Bounded like any body: the route's limit and pace.
 */
async function drainIfRefused(request: Request, env: Env, error: unknown): Promise<void> {
  if (!(error instanceof GuardError) || error.retryAfterSeconds === undefined) return
  await discardBody(request, { limit: bodyLimit(env), pace: bodyPace(env) })
}

/**
 * `body`, releasing `reservation` when it ends, errors or is cancelled. A pull source rather than a
 * TransformStream: a transformer's `flush` never runs on cancel or error, and a reservation left
 * behind by a client that went away would refuse every long prompt after it.
 */
function releaseWhenDone(
  body: ReadableStream<Uint8Array>,
  reservation: Reservation,
): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: ReadableStreamReadResult<Uint8Array>
        try {
          next = await reader.read()
        } catch (error) {
          reservation.release()
          controller.error(error)
          return
        }
        if (next.done) {
          reservation.release()
          controller.close()
        } else controller.enqueue(next.value)
      },
      cancel(reason) {
        reservation.release()
        return reader.cancel(reason)
      },
    },
    { highWaterMark: 0 },
  )
}
