/**
 * @module Why a probe request got no judgeable answer, in one typed error for both transports.
 */
import type { GuardSign } from './guard-sign'

/** What went wrong with one probe request. */
export type ProbeErrorKind =
  /** The target answered with an HTTP error status (or a runner threw an error carrying one). */
  | 'http'
  /** The target could not be reached (DNS, refused connection, reset). */
  | 'network'
  /** No complete answer within the per-request timeout. */
  | 'timeout'
  /** The target (or an in-process runner) reported an error of its own. */
  | 'upstream'
  /** The answer could not be read: not SSE/JSON, an unknown shape, or a stream cut short. */
  | 'malformed'

/** HTTP statuses that say the probe is misconfigured (key, URL, model), not that a length failed. */
const FATAL_STATUSES = new Set([401, 403, 404, 405])

/** HTTP statuses worth one more try: overload and gateway trouble say nothing about the length. */
const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 504])

/**
 * One probe request that failed before it could be judged. `fatal` errors end the run (exit 2):
 * retrying a wrong key or URL with longer prompts would only spend budget.
 *
 * @example
 * throw new ProbeTransportError('http', 'Unauthorized', { status: 401 })
 */
export class ProbeTransportError extends Error {
  override readonly name = 'ProbeTransportError'
  readonly kind: ProbeErrorKind
  readonly status?: number
  /** Worth retrying once with a fresh prompt (overload, gateway errors, network blips). */
  readonly retryable: boolean
  /** The run cannot go on (authentication, wrong URL or route). */
  readonly fatal: boolean
  /** How the error showed it came from a workers-ai-guard endpoint, if it did. */
  readonly guard?: GuardSign

  constructor(
    kind: ProbeErrorKind,
    message: string,
    options: { status?: number; cause?: unknown; guard?: GuardSign } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.kind = kind
    if (options.status !== undefined) this.status = options.status
    if (options.guard !== undefined) this.guard = options.guard
    this.fatal = isFatal(kind, options.status)
    this.retryable = isRetryable(kind, options.status)
  }
}

/**
 * Whether a failure of this kind and status ends the run: retrying a wrong key or URL with longer
 * prompts would only spend budget.
 *
 * @example
 * isFatal('http', 401) // true
 */
export function isFatal(kind: ProbeErrorKind, status?: number): boolean {
  return kind === 'http' && FATAL_STATUSES.has(status ?? 0)
}

/**
 * Whether a failure of this kind and status is worth another try with a fresh prompt.
 *
 * @example
 * isRetryable('http', 429) // true
 */
export function isRetryable(kind: ProbeErrorKind, status?: number): boolean {
  return kind === 'network' || (kind === 'http' && RETRYABLE_STATUSES.has(status ?? 0))
}

/**
 * The message of anything thrown.
 *
 * @example
 * messageOf(new Error('boom')) // 'boom'
 */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
