/**
 * @module An in-memory quarantine store for library users: bounded, per isolate, lost on eviction.
 */
import type {
  QuarantineQuery,
  QuarantineRecord,
  QuarantineStore,
  QuarantineSummary,
} from '../vocabulary/quarantine'

/**
 * Keeps the newest `capacity` records in memory. Use the D1 store in production: isolates are evicted.
 *
 * @example
 * const quarantine = new MemoryQuarantineStore({ capacity: 100 })
 * const ai = guardAi(env.AI, { secret, quarantine })
 */
export class MemoryQuarantineStore implements QuarantineStore {
  readonly #records = new Map<string, QuarantineRecord>()
  readonly #capacity: number

  constructor(options: { capacity?: number } = {}) {
    this.#capacity = options.capacity ?? 1000
  }

  async put(record: QuarantineRecord): Promise<void> {
    this.#records.set(record.id, structuredClone(record))
    while (this.#records.size > this.#capacity) {
      const oldest = this.#records.keys().next().value
      if (oldest === undefined) break
      this.#records.delete(oldest)
    }
  }

  async get(id: string): Promise<QuarantineRecord | undefined> {
    const record = this.#records.get(id)
    return record && structuredClone(record)
  }

  async list(query: QuarantineQuery = {}): Promise<QuarantineSummary[]> {
    const out: QuarantineSummary[] = []
    for (const record of [...this.#records.values()].reverse()) {
      if (!matches(record, query)) continue
      const { withheld: _, ...summary } = record
      out.push(structuredClone(summary))
      if (out.length >= (query.limit ?? 100)) break
    }
    return out
  }

  /** Incidents per reason: an aggregated record counts `count` times. */
  async counts(query: QuarantineQuery = {}): Promise<Record<string, number>> {
    const counts: Record<string, number> = {}
    for (const record of this.#records.values()) {
      if (!matches(record, { ...query, reason: undefined })) continue
      for (const reason of record.reasons) {
        counts[reason] = (counts[reason] ?? 0) + (record.count ?? 1)
      }
    }
    return counts
  }

  async increment(id: string, at: number): Promise<boolean> {
    const record = this.#records.get(id)
    if (!record) return false
    record.count = (record.count ?? 1) + 1
    record.lastAt = Math.max(record.lastAt ?? record.at, at)
    return true
  }
}

/** Whether a record passes a listing filter (shared by every store that filters in memory). */
function matches(record: QuarantineSummary, query: QuarantineQuery): boolean {
  if (query.since !== undefined && record.at < query.since) return false
  if (query.until !== undefined && record.at > query.until) return false
  if (query.tenant !== undefined && record.tenant !== query.tenant) return false
  if (query.reason !== undefined && !record.reasons.includes(query.reason)) return false
  if (query.observed !== undefined && (record.observed === true) !== query.observed) return false
  return true
}
