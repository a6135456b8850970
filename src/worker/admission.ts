/**
 * @module Memory admission per isolate: every model request reserves what it will cost before its body
 * is read, and one isolate's requests in flight never hold more than its budget — so concurrent long
 * prompts get a 503 with `Retry-After` instead of crashing the isolate with every request in it.
 */
import type { MiddlewareHandler } from 'hono'
import { GuardError } from '../errors'
import { bodyLimit } from './config'
import type { Env } from './env'

/**
 * Peak bytes (V8 heap + ArrayBuffers) a request adds per byte of its body, at most, over the scripts
 * measured in workerd (docs/reliability.md, "Memory admission"; Han text costs the most per byte): the
 * text, its parsed copy, the tokenizer's pieces, the fingerprints and the held stream
 * (test/node/memory-admission.test.ts measures it). Charged before anything is built from the body.
 */
const BYTES_PER_BODY_BYTE = 20

/** What any request holds whatever its body (Hono context, guard plan, response): measured under 1 MB. */
const REQUEST_BASE_BYTES = 1024 * 1024

/**
 * The default budget: the platform's 128 MB per isolate less what a long-lived isolate holds with no
 * request in flight (o200k's tables, the family bound, memo, prefix records: measured after maximal
 * prompts, docs/reliability.md) and headroom for the garbage V8 has not collected yet.
 */
const DEFAULT_MEMORY_BUDGET_BYTES = 80 * 1024 * 1024

/**
 * Reservations at most this large are small: ordinary chat requests (bodies up to ~50 KB). They are never
 * refused while only small requests are in flight, and large ones may never take the last
 * {@link SMALL_FLOOR_BYTES} of the budget, so ordinary traffic keeps flowing beside long prompts.
 */
const SMALL_REQUEST_BYTES = 2 * 1024 * 1024

/** The part of the budget only small requests may use. */
const SMALL_FLOOR_BYTES = 8 * 1024 * 1024

/** Seconds a refused client is told to wait: a maximal prompt is answered in a few seconds. */
const RETRY_AFTER_SECONDS = 2

/** One request's share of the ledger. `release` is idempotent: every exit path may call it. */
interface Reservation {
  /** Bytes reserved now. */
  readonly bytes: number
  /** Raises the reservation to cover a body of `bodyBytes` (seen so far); throws 503 over budget. */
  cover(bodyBytes: number): void
  release(): void
}

/**
 * The isolate's ledger of bytes reserved by requests in flight. Only the operator's budget bounds it:
 * nothing a request sends changes the budget, only what that request is charged.
 *
 * @example
 * const ledger = new MemoryLedger(80 * 1024 * 1024)
 * const r = ledger.reserve(Number(request.headers.get('content-length') ?? 0))
 * try { … } finally { r.release() }
 */
class MemoryLedger {
  readonly budget: number
  /** Bytes reserved by requests in flight. */
  reserved = 0
  /** Bytes reserved by requests over {@link SMALL_REQUEST_BYTES}. */
  reservedLarge = 0

  constructor(budget = DEFAULT_MEMORY_BUDGET_BYTES) {
    if (!Number.isFinite(budget) || budget < SMALL_FLOOR_BYTES + SMALL_REQUEST_BYTES) {
      throw new Error(
        `GUARD_MEMORY_BUDGET_BYTES must be at least ${SMALL_FLOOR_BYTES + SMALL_REQUEST_BYTES}`,
      )
    }
    this.budget = budget
  }

  /** What a body of `bodyBytes` costs to serve, at most. */
  static cost(bodyBytes: number): number {
    return REQUEST_BASE_BYTES + BYTES_PER_BODY_BYTE * Math.max(0, bodyBytes)
  }

  /** Reserves for a body of `bodyBytes` (0 when unknown yet); throws 503 over budget. */
  reserve(bodyBytes: number): Reservation {
    let bytes = 0
    let large = false
    let open = true
    const ledger = this
    const reservation: Reservation = {
      get bytes() {
        return bytes
      },
      cover(body) {
        // Capped at what large requests may hold together: a body whose estimate is over it (a 14 MB
        // fully escaped prompt is admissible; escapes cost ~4 bytes per byte, not 20) runs alone, so
        // its retryable refusal is a true one — it is served once the others are done.
        const wanted = Math.min(MemoryLedger.cost(body), ledger.budget - SMALL_FLOOR_BYTES)
        if (!open || wanted <= bytes) return
        const nowLarge = wanted > SMALL_REQUEST_BYTES
        if (!ledger.#fits(wanted - bytes, nowLarge)) throw overBudget()
        ledger.reserved += wanted - bytes
        if (nowLarge) ledger.reservedLarge += wanted - (large ? bytes : 0)
        bytes = wanted
        large = nowLarge
      },
      release() {
        if (!open) return
        open = false
        ledger.reserved -= bytes
        if (large) ledger.reservedLarge -= bytes
      },
    }
    try {
      reservation.cover(bodyBytes)
    } catch (error) {
      reservation.release()
      throw error
    }
    return reservation
  }

  /** Whether `more` bytes fit, for a request that is (or becomes) large when `large`. */
  #fits(more: number, large: boolean): boolean {
    // The floor: small requests are refused only when large ones hold memory too, and large ones
    // never take the last SMALL_FLOOR_BYTES.
    if (!large) return this.reservedLarge === 0 || this.reserved + more <= this.budget
    return this.reserved + more <= this.budget - SMALL_FLOOR_BYTES
  }
}

function overBudget(): GuardError {
  return new GuardError(
    'guard_unavailable',
    'This isolate is serving as many long prompts as its memory allows; retry shortly.',
    { retryAfterSeconds: RETRY_AFTER_SECONDS },
  )
}

const ledgers = new WeakMap<Env, MemoryLedger>()

/**
 * The isolate's ledger for these bindings (one `env` per isolate in production), its budget from
 * `GUARD_MEMORY_BUDGET_BYTES`.
 *
 * @example
 * const reservation = memoryLedger(env).reserve(declared)
 */
function memoryLedger(env: Env): MemoryLedger {
  let ledger = ledgers.get(env)
  if (!ledger) {
    const raw = env.GUARD_MEMORY_BUDGET_BYTES
    ledger = new MemoryLedger(raw === undefined || raw === '' ? undefined : Number(raw))
    ledgers.set(env, ledger)
  }
  return ledger
}

/** The typed per-request variable the middleware sets. */
export type AdmissionVariables = { admission: Reservation }

/**
 * Middleware: reserves the request's cost (its declared `Content-Length`, raised as the body streams
 * in through {@link Reservation.cover}) before anything reads it, and releases it when the response is
 * done — for a stream, when it ends, errors or is cancelled, since the guard holds the answer until then.
 *
 * @example
 * app.use('/v1/chat/completions', admitMemory())
 */
export function admitMemory(): MiddlewareHandler<{ Bindings: Env; Variables: AdmissionVariables }> {
  return async function admission(c, next) {
    const declared = Number(c.req.header('content-length') ?? 0)
    // A declared size over the body limit is the reader's 413 (not retryable), not admission's 503.
    const known = Number.isFinite(declared) && declared <= bodyLimit(c.env) ? declared : 0
    const reservation = memoryLedger(c.env).reserve(known)
    let handedOff = false
    try {
      c.set('admission', reservation)
      await next()
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
