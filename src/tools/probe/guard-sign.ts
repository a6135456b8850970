/**
 * @module Recognising a workers-ai-guard endpoint from its answers, so a probe of the guard is not
 * mistaken for a probe of the engine behind it.
 *
 * Why: pointed at the guard Worker, the probe measures the guard's own ceiling (it refuses, with
 * `context_length_exceeded`, every prompt its profile says the engine cannot hold) — not the engine's
 * KV pool. A "recommended ceiling" derived from that would only shrink the guard's profile a little
 * more on every run. The guard says who it is: `x-guard-*` response headers, its own refusal wording,
 * and `response_quarantined`, a code only it uses.
 */

/** How an answer showed it came from a workers-ai-guard endpoint. */
export type GuardSign =
  /** An `x-guard-request-id`, `x-guard-incident-id` or `x-guard-clamped-max-tokens` response header. */
  | 'response-header'
  /** The guard's `context_length_exceeded` refusal: the prompt was stopped before any engine call. */
  | 'refusal'
  /** `response_quarantined`: the engine answered, and the guard withheld the answer. */
  | 'quarantine'
  /** Another `GuardError` thrown by an in-process `guardAi` runner. */
  | 'guard-error'

/** Headers only the guard sets, on its answers and on its errors. */
export const GUARD_HEADERS = [
  'x-guard-request-id',
  'x-guard-incident-id',
  'x-guard-clamped-max-tokens',
] as const

/**
 * The guard's preflight refusal: "… the guard rejects rather than truncates …", or the
 * output reserve alone too large ("max_tokens N alone exceeds what <model> can serve …").
 */
const REFUSAL = /the guard rejects rather than truncates|alone exceeds what .* can serve/i

/**
 * The guard sign of one HTTP response: an error body's code and message first (a refusal or a
 * quarantine says more than a header), then the guard's headers. Undefined: not the guard, as far
 * as this response shows.
 *
 * @example
 * guardSignOf(res.headers, { code: 'context_length_exceeded', message }) // 'refusal'
 */
export function guardSignOf(
  headers: Headers | undefined,
  error?: { code?: unknown; message?: unknown },
): GuardSign | undefined {
  if (error?.code === 'response_quarantined') return 'quarantine'
  if (
    error?.code === 'context_length_exceeded' &&
    typeof error.message === 'string' &&
    REFUSAL.test(error.message)
  ) {
    return 'refusal'
  }
  if (headers && GUARD_HEADERS.some((name) => headers.has(name))) return 'response-header'
  return undefined
}

/**
 * The guard sign of an error thrown by an in-process runner: a `GuardError` (matched by shape, so the
 * probe does not pull the guard into its bundle).
 *
 * @example
 * guardSignOfThrown(new GuardError('context_length_exceeded', '…')) // 'refusal'
 */
export function guardSignOfThrown(error: unknown): GuardSign | undefined {
  if (!(error instanceof Error) || error.name !== 'GuardError') return undefined
  const code = 'code' in error ? error.code : undefined
  if (code === 'context_length_exceeded') return 'refusal'
  if (code === 'response_quarantined') return 'quarantine'
  return 'guard-error'
}

/**
 * What a sign means, for the report.
 *
 * @example
 * describeGuardSign('refusal') // 'the guard’s own context_length_exceeded refusal'
 */
export function describeGuardSign(sign: GuardSign): string {
  switch (sign) {
    case 'response-header':
      return 'x-guard-* response headers'
    case 'refusal':
      return 'the guard’s own context_length_exceeded refusals'
    case 'quarantine':
      return 'response_quarantined errors'
    case 'guard-error':
      return 'GuardErrors from the runner'
  }
}
