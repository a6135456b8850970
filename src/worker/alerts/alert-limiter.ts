/**
 * @module Alert rate limiting, per destination and per isolate: a token bucket, and one alert per
 * incident id per window (aggregated incidents share their record's id, so a flood folded into one
 * record alerts once). What is held back is counted and carried into the destination's next alert
 * ("and N more").
 *
 * Per isolate: each Workers isolate keeps its own buckets, so N busy isolates may send up to N times
 * the rate. A limit across isolates would need a Durable Object on the alert path; the receiver's own
 * limit (Slack: about one message a second per webhook, answered with 429 and honoured) is the backstop.
 */

/** Options of {@link AlertLimiter}. */
export interface AlertLimiterOptions {
  /** Alerts a destination may get at once. @default 10 */
  burst?: number
  /** Alerts per minute a destination may get once its burst is spent. @default 10 */
  perMinute?: number
  /** How long an incident id, once alerted, is not alerted again, ms. @default 600_000 */
  dedupeWindowMs?: number
  /** Incident ids remembered per destination (oldest forgotten first). @default 1_000 */
  maxIds?: number
  /** ms since epoch. @default Date.now */
  now?: () => number
}

/** What {@link AlertLimiter.admit} decided. */
export type Admission =
  | {
      send: true
      /** Alerts held back from this destination since its previous alert. */
      suppressed: number
    }
  | { send: false; reason: 'duplicate' | 'rate_limited' }

/**
 * A token is worth a minute of credit and each ms adds `perMinute` credit: whole numbers throughout,
 * so a token is there exactly when the clock says it should be (no float drift).
 */
const MINUTE = 60_000

interface Bucket {
  /** Tokens × {@link MINUTE}. */
  credit: number
  refilledAt: number
  suppressed: number
  /** Incident id → when it was alerted (insertion order is age order). */
  seen: Map<string, number>
}

/**
 * Decides, synchronously and in verdict order, whether a destination gets an incident's alert.
 *
 * @example
 * const limiter = new AlertLimiter({ perMinute: 10 })
 * const admission = limiter.admit('operator', event.incidentId)
 * if (admission.send) send(payload(admission.suppressed))
 */
export class AlertLimiter {
  readonly #burst: number
  readonly #perMinute: number
  readonly #window: number
  readonly #maxIds: number
  readonly #now: () => number
  readonly #buckets = new Map<string, Bucket>()

  constructor(options: AlertLimiterOptions = {}) {
    this.#burst = options.burst ?? 10
    this.#perMinute = options.perMinute ?? 10
    this.#window = options.dedupeWindowMs ?? 600_000
    this.#maxIds = options.maxIds ?? 1_000
    this.#now = options.now ?? (() => Date.now())
  }

  admit(destination: string, incidentId: string): Admission {
    const now = this.#now()
    const bucket = this.#bucket(destination, now)
    const alertedAt = bucket.seen.get(incidentId)
    if (alertedAt !== undefined && now - alertedAt < this.#window) {
      bucket.suppressed++
      return { send: false, reason: 'duplicate' }
    }
    const refill = (now - bucket.refilledAt) * this.#perMinute
    bucket.credit = Math.min(this.#burst * MINUTE, bucket.credit + refill)
    bucket.refilledAt = now
    if (bucket.credit < MINUTE) {
      bucket.suppressed++
      return { send: false, reason: 'rate_limited' }
    }
    bucket.credit -= MINUTE
    bucket.seen.delete(incidentId)
    bucket.seen.set(incidentId, now)
    for (const [id, at] of bucket.seen) {
      if (bucket.seen.size <= this.#maxIds && now - at < this.#window) break
      bucket.seen.delete(id)
    }
    const suppressed = bucket.suppressed
    bucket.suppressed = 0
    return { send: true, suppressed }
  }

  #bucket(destination: string, now: number): Bucket {
    let bucket = this.#buckets.get(destination)
    if (!bucket) {
      bucket = { credit: this.#burst * MINUTE, refilledAt: now, suppressed: 0, seen: new Map() }
      this.#buckets.set(destination, bucket)
    }
    return bucket
  }
}
