/**
 * @module Incident aggregation: repeated incidents of one kind from one tenant become one record with
 * a count, so no tenant can flood the review queue or the store.
 *
 * Why: any client can make its own answers fail verification on purpose — `max_tokens: 1`, prompts
 * that make the model skip the echo, timing games — and every failure used to be a stored record
 * with sealed text: a tenant could bury real incidents under thousands of its own and fill D1.
 *
 * Policy (per isolate):
 * - Key: (tenant, model, sorted reasons, observed or not). The first incident of a key opens a window of `windowMs`
 *   (fixed, not sliding, so a steady flood cannot keep one record open for ever) and is stored in
 *   full. Later incidents of the key inside the window add nothing but the count: `count` + 1 and
 *   `lastAt` on the open record — one small UPDATE, no sealing, no text — and their client gets that
 *   record's incident id (the same tenant's, so it tells them nothing new).
 * - The sample is bounded by time rather than kept in the record: each new window stores one full
 *   record, so a flood that lasts leaves one example per window, spread over its whole length, instead
 *   of a text blob that grows (and that would have to be decrypted and re-sealed on every fold).
 * - Evidence of another tenant's data is never folded: a record with a `foreign_canary` reason (or
 *   any reason in `neverAggregate`), a foreign canary finding, or an attributed source tenant is
 *   stored in full, every time. Folding loses only text withheld from the tenant's own failing
 *   requests; nothing folded is ever released.
 * - Default window 10 minutes: a flood leaves at most 6 records an hour per key per isolate (144 a
 *   day), a reviewer still sees a fresh record with a fresh sample of an ongoing problem every 10
 *   minutes, and a real incident of the same kind hidden behind a flood is at most one window away
 *   from its own full record.
 * - Bounded memory: open windows are kept for `maxKeys` keys (LRU, about 200 bytes each); an evicted
 *   window only means the next incident of that key opens a new record (more records, never fewer).
 * - Across isolates each keeps its own windows: at most one record per isolate per window per key.
 * - A store without `increment` cannot fold: every incident is stored in full, as before. If the open
 *   record is gone (retention, eviction) or folding fails, the incident is stored as a new record.
 */
import type { QuarantineRecord, QuarantineStore } from '../vocabulary/quarantine'

/** Options of {@link IncidentRecorder}. */
interface IncidentRecorderOptions {
  /** How long a record stays open for folding, ms, from its first incident. @default 600_000 */
  windowMs?: number
  /** Clock, ms (pass the guard's `now`). @default Date.now */
  now?: () => number
  /** Open windows kept per isolate (LRU). @default 10_000 */
  maxKeys?: number
  /** Reasons that name another tenant's data: never folded. @default the leak reasons (`foreign_canary`, `foreign_stand_in`, `foreign_content`) */
  neverAggregate?: readonly string[]
  /** Where a failed fold is reported (the incident is then stored in full). @default console.error */
  onError?: (failure: AggregationFailure) => void
}

/** A fold that failed, as logged. */
interface AggregationFailure {
  event: 'ai_guard_aggregate_failed'
  /** The open record the incident was to be folded into. */
  incidentId: string
  error: string
}

/** What {@link IncidentRecorder.record} did. */
interface Recorded {
  /** The incident id the client gets: the new record's, or the open record it was folded into. */
  id: string
  /** True when the incident was folded into an earlier record (its text was not stored). */
  aggregated: boolean
}

interface Window {
  id: string
  /** When the window closes (recorder clock, ms). */
  until: number
  /** Whether the window's first record was stored (resolves once its `put` settles). */
  stored: Promise<boolean>
}

/**
 * Stores quarantine records through a {@link QuarantineStore}, folding repeated ones (see the module
 * comment for the policy). One per guard; `record` throws only when the store cannot take a record at
 * all (the guard then withholds the answer anyway and logs `store_failed`).
 *
 * @example
 * const incidents = new IncidentRecorder(store, { now: guard.options.now })
 * const { id } = await incidents.record(record) // id goes to the client
 */
export class IncidentRecorder {
  readonly store: QuarantineStore
  readonly #windowMs: number
  readonly #now: () => number
  readonly #maxKeys: number
  readonly #evidence: ReadonlySet<string>
  readonly #onError: (failure: AggregationFailure) => void
  readonly #open = new Map<string, Window>()

  constructor(store: QuarantineStore, options: IncidentRecorderOptions = {}) {
    this.store = store
    this.#windowMs = options.windowMs ?? 600_000
    if (!(this.#windowMs >= 0) || !Number.isFinite(this.#windowMs)) {
      throw new Error('option "windowMs" must be a non-negative number')
    }
    this.#maxKeys = options.maxKeys ?? 10_000
    if (!Number.isInteger(this.#maxKeys) || this.#maxKeys < 1) {
      throw new Error('option "maxKeys" must be a positive integer')
    }
    this.#now = options.now ?? (() => Date.now())
    this.#evidence = new Set(
      options.neverAggregate ?? ['foreign_canary', 'foreign_stand_in', 'foreign_content'],
    )
    this.#onError = options.onError ?? ((failure) => console.error(JSON.stringify(failure)))
  }

  /** Stores the record, or folds it into the tenant's recent record of the same kind. */
  async record(record: QuarantineRecord): Promise<Recorded> {
    if (this.store.increment === undefined || this.#isEvidence(record)) {
      await this.store.put(record)
      return { id: record.id, aggregated: false }
    }
    // An observed incident (released) never folds into a withheld one's record, nor the reverse.
    const reasons = [...new Set(record.reasons)].sort()
    const key = JSON.stringify([record.tenant, record.model, reasons, record.observed === true])
    const open = this.#open.get(key)
    if (open && this.#now() < open.until) {
      this.#open.delete(key) // re-inserted: most recently used
      this.#open.set(key, open)
      if (await open.stored) {
        try {
          if (await this.store.increment(open.id, record.at))
            return { id: open.id, aggregated: true }
        } catch (error) {
          // Folding is an optimisation: the incident is stored in full below instead.
          try {
            this.#onError({
              event: 'ai_guard_aggregate_failed',
              incidentId: open.id,
              error: error instanceof Error ? error.message : String(error),
            })
          } catch {
            // A failing log hook must not lose the incident.
          }
        }
      }
    }
    return this.#openWindow(key, record)
  }

  /** Whether a record is evidence of another tenant's data, and so must be kept whole. */
  #isEvidence(record: QuarantineRecord): boolean {
    return (
      record.reasons.some((reason) => this.#evidence.has(reason)) ||
      record.canaries.some((canary) => canary.kind === 'foreign') ||
      record.sourceTenants.length > 0
    )
  }

  /** Stores `record` in full as the first of a new window for `key`. */
  async #openWindow(key: string, record: QuarantineRecord): Promise<Recorded> {
    let settle: (stored: boolean) => void = () => {}
    const window: Window = {
      id: record.id,
      until: this.#now() + this.#windowMs,
      stored: new Promise<boolean>((resolve) => {
        settle = resolve
      }),
    }
    this.#open.delete(key)
    this.#open.set(key, window)
    if (this.#open.size > this.#maxKeys) {
      const oldest = this.#open.keys().next()
      if (!oldest.done) this.#open.delete(oldest.value)
    }
    try {
      await this.store.put(record)
      settle(true)
    } catch (error) {
      // Incidents waiting on this window store their own records instead.
      settle(false)
      if (this.#open.get(key) === window) this.#open.delete(key)
      throw error
    }
    return { id: record.id, aggregated: false }
  }

  /** Open windows held now (for tests and metrics). */
  get openWindows(): number {
    return this.#open.size
  }
}
