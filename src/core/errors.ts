/**
 * @module GuardError, its codes, and the OpenAI-style error bodies every HTTP surface returns.
 */

/** Why the guard refused or withheld an answer. */
export type GuardErrorCode =
  /** The prompt plus its output reserve does not fit the model's real KV pool; no upstream call was made. */
  | 'context_length_exceeded'
  /** The upstream answered, but the answer failed verification and was withheld (see the incident id). */
  | 'response_quarantined'
  /** The upstream failed (error, timeout, malformed or truncated stream); nothing unverified was released. */
  | 'upstream_error'
  /** The request itself is malformed (shape, types, size, encoding). */
  | 'invalid_request'
  /** A guard could not run (tokenizer, crypto, store), so the answer is withheld rather than released unchecked. */
  | 'guard_unavailable'

const DEFAULT_STATUS: Record<GuardErrorCode, number> = {
  context_length_exceeded: 400,
  response_quarantined: 502,
  upstream_error: 502,
  invalid_request: 400,
  guard_unavailable: 503,
}

const ERROR_TYPE: Record<GuardErrorCode, string> = {
  context_length_exceeded: 'invalid_request_error',
  response_quarantined: 'server_error',
  upstream_error: 'server_error',
  invalid_request: 'invalid_request_error',
  guard_unavailable: 'server_error',
}

/** Options of a {@link GuardError} beyond its code and message. */
interface GuardErrorOptions {
  /** HTTP status; defaults per code (400, 502, 502, 400, 503). */
  status?: number
  /** Quarantine record id, for `response_quarantined`. */
  incidentId?: string
  /** The request field at fault, when there is one (OpenAI's `param`). */
  param?: string
  /** The original error (kept for logs; never sent to clients). */
  cause?: unknown
  /** `context_length_exceeded`: the script classes that drove the estimate (for the verdict log). */
  scripts?: readonly string[]
  /** A refusal that passes when load does: sent as `Retry-After` (seconds). */
  retryAfterSeconds?: number
}

/**
 * A request the guard blocked or an answer it withheld. The message is safe to show to the client:
 * it never holds prompt text, canaries or secrets.
 *
 * @example
 * try { await ai.run(model, inputs) } catch (e) {
 *   if (e instanceof GuardError && e.code === 'response_quarantined') console.log(e.incidentId)
 * }
 */
export class GuardError extends Error {
  override readonly name = 'GuardError'
  readonly code: GuardErrorCode
  readonly status: number
  readonly incidentId?: string
  readonly param?: string
  /** `context_length_exceeded`: the script classes that drove the estimate (logged, not sent). */
  readonly scripts?: readonly string[]
  /** Seconds after which a retry may succeed (`Retry-After`), for refusals made under load. */
  readonly retryAfterSeconds?: number

  constructor(code: GuardErrorCode, message: string, options: GuardErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = options.status ?? DEFAULT_STATUS[code]
    if (options.incidentId !== undefined) this.incidentId = options.incidentId
    if (options.param !== undefined) this.param = options.param
    if (options.scripts !== undefined) this.scripts = options.scripts
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds
  }

  /**
   * The ready OpenAI-style response, like Hono's `HTTPException#getResponse`, so an app's default error
   * handler already answers with the right status and body. A quarantine is sent as 422 (see
   * {@link responseStatus}), every other error with its `status`.
   */
  getResponse(): Response {
    return Response.json(errorBody(this), {
      status: responseStatus(this),
      headers: errorHeaders(this),
    })
  }
}

/**
 * The HTTP status a guard error is sent with. `status` stays the error's class (a quarantine is the
 * upstream's failure: 502), but on the wire a quarantine is 422: client libraries resend any 5xx on
 * their own (the AI SDK three times, ignoring `x-should-retry`), each resend another call to a leaking
 * engine and another incident, and none of them resends a 422.
 *
 * @example
 * new Response(body, { status: responseStatus(error) })
 */
export function responseStatus(error: GuardError): number {
  return error.code === 'response_quarantined' ? 422 : error.status
}

/** Headers of an error response: the incident id, so operators can find the record from a client log. */
function errorHeaders(error: GuardError): Record<string, string> {
  const headers: Record<string, string> = {}
  if (error.incidentId) headers['x-guard-incident-id'] = error.incidentId
  // Not transient: a retry re-sends the prompt to a leaking engine (the `openai` client reads this).
  if (error.code === 'response_quarantined') headers['x-should-retry'] = 'false'
  if (error.retryAfterSeconds !== undefined)
    headers['retry-after'] = String(error.retryAfterSeconds)
  return headers
}

/**
 * OpenAI's error `type`: by code, except that an upstream refusal keeps its class — a 429 is a rate
 * limit, and any other 4xx was refused for the client's own reasons.
 */
function errorType(error: GuardError): string {
  if (error.status === 429) return 'rate_limit_error'
  if (error.code === 'upstream_error' && error.status < 500) return 'invalid_request_error'
  return ERROR_TYPE[error.code]
}

/** The body of an OpenAI-style error response. */
export interface ErrorBody {
  error: {
    message: string
    type: string
    code: GuardErrorCode | string
    param: string | null
    incident_id?: string
  }
}

/**
 * The OpenAI-style body for a guard error.
 *
 * @example
 * return Response.json(errorBody(err), { status: err.status })
 */
export function errorBody(error: GuardError): ErrorBody {
  const body: ErrorBody = {
    error: {
      message: error.message,
      type: errorType(error),
      code: error.code,
      param: error.param ?? null,
    },
  }
  if (error.incidentId !== undefined) body.error.incident_id = error.incidentId
  return body
}

/**
 * Any thrown value as a GuardError: guard errors pass through; anything else is an unexpected
 * failure inside a guard, reported as `guard_unavailable` with the original kept as `cause`.
 *
 * @example
 * catch (e) { const err = asGuardError(e); return Response.json(errorBody(err), { status: err.status }) }
 */
export function asGuardError(error: unknown): GuardError {
  if (error instanceof GuardError) return error
  return new GuardError('guard_unavailable', 'A guard could not run; the answer was withheld.', {
    cause: error,
  })
}
