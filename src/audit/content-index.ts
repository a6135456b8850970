/**
 * @module The cross-request content index of an audit: every prompt's winnowed fingerprints (the
 * guard's own units, shingles and winnowing, src/fingerprint) → the requests that sent them, in a
 * fixed memory budget. Fingerprints only: no text is kept. When the budget is reached the index keeps
 * a content-defined sample (fingerprints ≡ 0 mod 2^level), so it never depends on the order of the
 * logs and degrades by needing longer quotes, never by forgetting whole periods.
 */

/** Who sent a fingerprint. */
export interface IndexedRequest {
  id: string
  /** Tenant, or the request id itself when the log names no tenant. */
  principal: string
  /** When it was sent (ms), NaN when unknown. */
  startMs: number
  /** `file:line` of the record. */
  where: string
  tenant?: string
  metadata?: Record<string, string | number | boolean | null>
}

/** The owners of one fingerprint, as the index keeps them. */
export interface Owners {
  /** The first request that sent it. */
  first: number
  /** A second request of the same principal (a retry, a later turn), or −1. */
  second: number
  /** Sent by two principals or more: boilerplate, never evidence. */
  common: boolean
}

/** Index figures for the report. */
export interface ContentIndexStats {
  fingerprints: number
  requests: number
  /** Requests whose prompts were not indexed (the request table's share of the budget was full). */
  unindexed: number
  /** Bytes held (typed arrays and the request table's estimate). */
  bytes: number
  budgetBytes: number
  /** Kept fingerprints are those ≡ 0 mod 2^level (0: all). */
  sampleLevel: number
}

/** Bytes per slot: key (8), first (4), second (4), flags (1). */
const SLOT_BYTES = 17
/** Load factor at which the table grows or samples. */
const MAX_LOAD = 0.6
/** Estimated bytes per request-table entry beyond its strings (object, array slots, numbers). */
const REQUEST_OVERHEAD = 160
/** The request table may use at most this share of the budget. */
const REQUEST_SHARE = 0.25

const COMMON = 1

/**
 * Fingerprint → requests, bounded.
 *
 * @example
 * const index = new ContentIndex(256 * 1024 * 1024)
 * const ref = index.addRequest({ id: 'r1', principal: 'acme', startMs: 0, where: 'a.jsonl:1' })
 * if (ref >= 0) for (const fp of print.selected) index.add(fp, ref)
 */
export class ContentIndex {
  readonly requests: IndexedRequest[] = []
  private keys: Float64Array
  private first: Int32Array
  private second: Int32Array
  private flags: Uint8Array
  private mask: number
  private size = 0
  private level = 0
  private requestBytes = 0
  private unindexed = 0

  constructor(readonly budgetBytes: number) {
    if (!(budgetBytes >= 1024 * 1024)) throw new Error('ContentIndex: budget of at least 1 MiB')
    const capacity = 1 << 16
    this.keys = new Float64Array(capacity)
    this.first = new Int32Array(capacity)
    this.second = new Int32Array(capacity)
    this.flags = new Uint8Array(capacity)
    this.mask = capacity - 1
  }

  /** The request's reference for {@link add}, or −1 when the request table is full. */
  addRequest(request: IndexedRequest): number {
    const cost =
      REQUEST_OVERHEAD +
      2 * (request.id.length + request.principal.length + request.where.length) +
      (request.metadata ? 2 * JSON.stringify(request.metadata).length : 0)
    if (this.requestBytes + cost > this.budgetBytes * REQUEST_SHARE) {
      this.unindexed++
      return -1
    }
    this.requestBytes += cost
    this.requests.push(request)
    return this.requests.length - 1
  }

  /** Whether a fingerprint is in the current sample (only sampled ones are stored or looked up). */
  sampled(fingerprint: number): boolean {
    return this.level === 0 || fingerprint % 2 ** this.level === 0
  }

  /** Records that request `ref` sent `fingerprint`. */
  add(fingerprint: number, ref: number): void {
    if (!this.sampled(fingerprint)) return
    const key = fingerprint + 1
    let slot = this.find(key)
    if (this.keys[slot] === 0) {
      if (this.size + 1 > this.mask * MAX_LOAD) {
        this.makeRoom()
        if (!this.sampled(fingerprint)) return
        slot = this.find(key)
      }
      this.keys[slot] = key
      this.first[slot] = ref
      this.second[slot] = -1
      this.flags[slot] = 0
      this.size++
      return
    }
    if (this.flags[slot] === COMMON) return
    const first = this.first[slot]!
    if (first === ref || this.second[slot] === ref) return
    const owner = this.requests[first]
    const adding = this.requests[ref]
    if (owner && adding && owner.principal !== adding.principal) this.flags[slot] = COMMON
    else if (this.second[slot] === -1) this.second[slot] = ref
  }

  /** Who sent `fingerprint`, or undefined (never sent, or outside the sample). */
  lookup(fingerprint: number): Owners | undefined {
    const slot = this.find(fingerprint + 1)
    if (this.keys[slot] === 0) return undefined
    return {
      first: this.first[slot]!,
      second: this.second[slot]!,
      common: this.flags[slot] === COMMON,
    }
  }

  stats(): ContentIndexStats {
    return {
      fingerprints: this.size,
      requests: this.requests.length,
      unindexed: this.unindexed,
      bytes: this.keys.length * SLOT_BYTES + this.requestBytes,
      budgetBytes: this.budgetBytes,
      sampleLevel: this.level,
    }
  }

  private find(key: number): number {
    // The low 32 bits of a keyed fingerprint are uniform: spread them over the table.
    let slot = (Math.imul(key | 0, 0x9e3779b1) >>> 7) & this.mask
    for (;;) {
      const held = this.keys[slot]!
      if (held === 0 || held === key) return slot
      slot = (slot + 1) & this.mask
    }
  }

  /** Doubles the table if the budget allows, else halves the sample and drops what left it. */
  private makeRoom(): void {
    const slotBudget = this.budgetBytes * (1 - REQUEST_SHARE)
    const grow = (this.mask + 1) * 2 * SLOT_BYTES <= slotBudget
    if (!grow) this.level++
    this.rehash(grow ? (this.mask + 1) * 2 : this.mask + 1)
  }

  private rehash(capacity: number): void {
    const { keys, first, second, flags } = this
    this.keys = new Float64Array(capacity)
    this.first = new Int32Array(capacity)
    this.second = new Int32Array(capacity)
    this.flags = new Uint8Array(capacity)
    this.mask = capacity - 1
    this.size = 0
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!
      if (key === 0 || !this.sampled(key - 1)) continue
      const slot = this.find(key)
      this.keys[slot] = key
      this.first[slot] = first[i]!
      this.second[slot] = second[i]!
      this.flags[slot] = flags[i]!
      this.size++
    }
  }
}
