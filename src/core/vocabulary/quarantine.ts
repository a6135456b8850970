/**
 * @module The quarantine store: where withheld answers go, for review.
 */

/** One withheld answer. It may hold another customer's data: stores must protect `withheld` at rest. */
export interface QuarantineRecord {
  /** Incident id, also returned to the client. */
  id: string
  /** When the verdict was reached (ms since epoch, from the guard's clock). */
  at: number
  /** The tenant whose request it was. */
  tenant: string
  model: string
  requestId: string
  /** Machine-readable reasons, e.g. `foreign_canary`, `ttft_impossible`, `echo_missing`. */
  reasons: string[]
  /** The figures behind the reasons. */
  figures: {
    /** The prompt's tokens for the model (family estimate); absent when it was never counted. */
    estimatedTokens?: number
    /** When the prompt was not counted: its byte bound (no byte-level BPE has more tokens than bytes). */
    tokenBound?: number
    promptTokensReported?: number
    cachedTokens?: number
    ttftMs?: number
    expectedMinMs?: number
    attempts?: number
    score?: number
    /** Foreign content: the longest run of the source tenant's fingerprints in the answer. */
    contentRun?: number
    /** Foreign content: the source tenant's distinct fingerprints anywhere in the answer. */
    contentMatches?: number
    /**
     * The shared fingerprint store could not be read for this answer (only this isolate's own table
     * was): prompts other isolates sent were not in the comparison.
     */
    fingerprintStoreDown?: boolean
    /** Shards of the shared fingerprint store this answer's check could not read. */
    fingerprintShardsUnread?: number[]
  }
  /** Canary findings: which other tenants' canaries appeared (tenant tags, never the tokens). */
  canaries: {
    /** Only another request's canary is recorded: our own is expected, look-alikes prove nothing. */
    kind: 'foreign'
    tenantTag?: string
    channel?: string
    /**
     * Set when the finding is a secret's stand-in, not a canary: the secret's kind (e.g.
     * `card-number`). Its tag attributes it like a canary's; the value is never known here.
     */
    standIn?: string
    /**
     * Every tenant known to own `tenantTag` (src/core/attribution). More than one is a tag collision: any
     * of them may be the source. Empty or absent: unknown (never recorded, or the lookup failed).
     */
    tenants?: string[]
  }[]
  /**
   * Tenants whose data leaked: every owner of every leaked canary's tag, so a tag collision names all
   * candidates (see `canaries[].tenants`), never one picked among them; and the tenant whose prompt
   * text the answer carried (`foreign_content`).
   */
  sourceTenants: string[]
  /** The withheld text per channel (reasoning, content, tool:n). */
  withheld: Record<string, string>
  /**
   * How many incidents this record stands for: repeated incidents of one tenant, model and set of
   * reasons within a window are folded into one record (src/core/quarantine/aggregate.ts), which keeps the
   * first one's text. Absent means 1.
   */
  count?: number
  /** When the latest folded incident happened (ms since epoch); absent until one is folded in. */
  lastAt?: number
  /**
   * The id of the key `withheld` is sealed under, set by stores that encrypt (D1): after a rotation
   * the record is read under the previous key it names.
   */
  keyId?: string
  /**
   * Released under observe: the answer reached its client, and this is what enforce would have
   * withheld (`withheld` is its text). Absent: the answer was withheld.
   */
  observed?: true
}

/** Listing filters. */
export interface QuarantineQuery {
  since?: number
  until?: number
  tenant?: string
  reason?: string
  /** `true`: only incidents released under observe; `false`: only withheld ones. */
  observed?: boolean
  limit?: number
}

/** The summary of a record returned by `list` (no withheld text). */
export type QuarantineSummary = Omit<QuarantineRecord, 'withheld'> & {
  /**
   * Set when the stored record cannot be read (a column edited, truncated or not JSON): why, and what
   * to do. The record is still listed so no other is hidden; its unread fields are empty, its detail
   * answers 409 `incident_unreadable`.
   */
  unreadable?: string
}

/**
 * Storage for quarantined answers. `put` must not resolve before the record is durable; if it throws,
 * the guard still withholds the answer (fail closed) and logs the failure. A store without
 * `increment` cannot aggregate: every incident becomes its own record.
 *
 * @example
 * const store: QuarantineStore = new MemoryQuarantineStore()
 * await store.put(record)
 */
export interface QuarantineStore {
  put(record: QuarantineRecord): Promise<void>
  get(id: string): Promise<QuarantineRecord | undefined>
  list(query?: QuarantineQuery): Promise<QuarantineSummary[]>
  /**
   * Incidents per reason (an incident with two reasons counts under both). Incidents, not records: an
   * aggregated record counts `count` times. Filters apply to a record's first `at`.
   */
  counts(
    query?: Pick<QuarantineQuery, 'since' | 'until' | 'tenant'>,
  ): Promise<Record<string, number>>
  /**
   * Folds one more incident into record `id`: `count` + 1, `lastAt` = `at` (if later). Resolves false
   * when the record is gone (deleted by retention, evicted): the caller then stores a new record.
   */
  increment?(id: string, at: number): Promise<boolean>
}
