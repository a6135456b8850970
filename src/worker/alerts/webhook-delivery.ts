/**
 * @module Webhook delivery: one signed POST, retried with exponential backoff and jitter on network
 * errors, timeouts, 408, 429 and 5xx (a `Retry-After` is respected up to a cap), never on other 4xx,
 * all inside a total budget that fits the ~30 s a Worker's `waitUntil` may run after its response.
 *
 * Clock, sleep, randomness and fetch are injected so the schedule is tested without waiting.
 */
import { SIGNATURE_HEADER, signWebhook } from '../../core'

/** How a delivery retries. */
export interface RetryPolicy {
  /** Attempts in all, the first included. @default 5 */
  maxAttempts: number
  /** Backoff before the second attempt (doubling after), before jitter, ms. @default 500 */
  baseDelayMs: number
  /** Longest backoff, before jitter, ms. @default 8_000 */
  maxDelayMs: number
  /** Longest `Retry-After` honoured, ms; a receiver asking for more is given up on. @default 10_000 */
  maxRetryAfterMs: number
  /** One attempt's limit, ms (then it is aborted and counts as a network error). @default 5_000 */
  attemptTimeoutMs: number
  /**
   * The whole delivery's limit, ms, attempts and waits included: no attempt starts that could not
   * finish inside it. Workers end `waitUntil` work about 30 s after the response. @default 25_000
   */
  budgetMs: number
}

/** The defaults: at most 5 attempts within 25 s. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = {
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 10_000,
  attemptTimeoutMs: 5_000,
  budgetMs: 25_000,
}

/** What a delivery uses of its host; tests inject all four. */
export interface DeliveryDeps {
  /** @default globalThis.fetch */
  fetch?: (input: string, init: RequestInit) => Promise<Response>
  /** ms since epoch. @default Date.now */
  now?: () => number
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>
  /** In [0, 1). @default Math.random */
  random?: () => number
}

/** One webhook to deliver. */
export interface WebhookDelivery {
  url: string
  /** The signing secret (or its key, {@link webhookKey}). */
  secret: string | CryptoKey
  body: string
  /** Extra headers (the delivery id, the incident id). */
  headers?: Record<string, string>
}

/** How a delivery ended. */
export interface DeliveryResult {
  ok: boolean
  attempts: number
  /** The last response's status, when there was one. */
  status?: number
  /** Why it failed: `HTTP <status>`, `timeout`, `network: <message>`, plus why it stopped retrying. */
  error?: string
  /** The waits between attempts, ms (what the backoff chose). */
  delays: number[]
}

/**
 * The wait before attempt `attempt + 1` after `attempt` failed: exponential (`base · 2^(attempt-1)`,
 * capped) with "equal jitter" — half fixed, half random — so that many isolates failing together do
 * not retry together, and no retry comes sooner than half the schedule.
 *
 * @example
 * backoffDelay(1, DEFAULT_RETRY_POLICY, Math.random) // 250 to 500
 */
export function backoffDelay(attempt: number, policy: RetryPolicy, random: () => number): number {
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1))
  return Math.round(exp / 2 + random() * (exp / 2))
}

/**
 * A `Retry-After` header in ms: delta seconds or an HTTP date; undefined when absent or unreadable.
 *
 * @example
 * retryAfterMs('3', Date.now()) // 3000
 */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (!header) return undefined
  const value = header.trim()
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs)
}

/** One attempt's outcome. */
type Attempt =
  | { kind: 'ok'; status: number }
  | { kind: 'retry'; status?: number; error: string; retryAfter?: number }
  | { kind: 'stop'; status: number; error: string }

/**
 * Delivers one webhook: a POST of `body`, signed anew at each attempt (its `t` is the attempt's
 * time, so a receiver's replay window can be tight), until a 2xx, a final failure, or the budget.
 * Never throws: a failure is the result's `error`.
 *
 * @example
 * const result = await deliverWebhook({ url, secret, body })
 * if (!result.ok) console.error(result.error)
 */
export async function deliverWebhook(
  delivery: WebhookDelivery,
  policy: Partial<RetryPolicy> = {},
  deps: DeliveryDeps = {},
): Promise<DeliveryResult> {
  const p: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...policy }
  const now = deps.now ?? (() => Date.now())
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
  const random = deps.random ?? Math.random
  const start = now()
  const delays: number[] = []
  for (let attempt = 1; ; attempt++) {
    const remaining = p.budgetMs - (now() - start)
    const timeoutMs = Math.min(p.attemptTimeoutMs, remaining)
    const outcome = await attemptOnce(delivery, { attempt, timeoutMs }, { fetch: deps.fetch, now })
    if (outcome.kind === 'ok')
      return { ok: true, attempts: attempt, status: outcome.status, delays }
    const failed = { ok: false, attempts: attempt, delays, ...statusOf(outcome) }
    if (outcome.kind === 'stop') return { ...failed, error: outcome.error }
    if (attempt >= p.maxAttempts)
      return { ...failed, error: `${outcome.error}; attempts exhausted` }
    if (outcome.retryAfter !== undefined && outcome.retryAfter > p.maxRetryAfterMs) {
      return { ...failed, error: `${outcome.error}; Retry-After beyond ${p.maxRetryAfterMs} ms` }
    }
    const delay = Math.max(backoffDelay(attempt, p, random), outcome.retryAfter ?? 0)
    // The next attempt must be able to run a useful while (a tenth of its timeout) inside the budget.
    if (now() - start + delay + p.attemptTimeoutMs / 10 > p.budgetMs) {
      return { ...failed, error: `${outcome.error}; budget of ${p.budgetMs} ms spent` }
    }
    delays.push(delay)
    await sleep(delay)
  }
}

function statusOf(outcome: Attempt): { status?: number } {
  return outcome.kind !== 'ok' && outcome.status !== undefined ? { status: outcome.status } : {}
}

async function attemptOnce(
  delivery: WebhookDelivery,
  { attempt, timeoutMs }: { attempt: number; timeoutMs: number },
  { fetch: fetcher, now }: Pick<DeliveryDeps, 'fetch'> & { now: () => number },
): Promise<Attempt> {
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), Math.max(1, timeoutMs))
  try {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'workers-ai-guard-alerts/1',
      ...delivery.headers,
      'x-guard-attempt': String(attempt),
      [SIGNATURE_HEADER]: await signWebhook(
        delivery.secret,
        delivery.body,
        Math.floor(now() / 1000),
      ),
    }
    const res = await (fetcher ?? fetch)(delivery.url, {
      method: 'POST',
      headers,
      body: delivery.body,
      // A redirect would carry a signed alert somewhere the operator never configured.
      redirect: 'manual',
      signal: abort.signal,
    })
    // Nothing is read from a receiver's body; cancelling frees the connection.
    await res.body?.cancel().catch(() => {})
    return classify(res, now())
  } catch (error) {
    if (abort.signal.aborted) return { kind: 'retry', error: `timeout after ${timeoutMs} ms` }
    return { kind: 'retry', error: `network: ${error instanceof Error ? error.message : 'error'}` }
  } finally {
    clearTimeout(timer)
  }
}

function classify(res: Response, nowMs: number): Attempt {
  if (res.status >= 200 && res.status < 300) return { kind: 'ok', status: res.status }
  const error = `HTTP ${res.status}`
  if (res.status === 408 || res.status === 429 || res.status >= 500) {
    const after = retryAfterMs(res.headers.get('retry-after'), nowMs)
    return {
      kind: 'retry',
      status: res.status,
      error,
      ...(after !== undefined ? { retryAfter: after } : {}),
    }
  }
  // Other 4xx (and 3xx): the receiver refused this request; sending it again changes nothing.
  return { kind: 'stop', status: res.status, error }
}
