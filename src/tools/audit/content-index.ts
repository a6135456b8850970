/**
 * @module The cross-request content index of an audit: every prompt's winnowed fingerprints (the
 * guard's own units, shingles and winnowing, src/plugins/foreign-content) → the requests that sent them, in a
 * fixed memory budget. Fingerprints only: no text is kept. When the budget is reached the index keeps
 * a content-defined sample (fingerprints ≡ 0 mod 2^level), so it never depends on the order of the
 * logs and degrades by needing longer quotes, never by forgetting whole periods.
 */

/** Who sent a fingerprint. */
interface IndexedRequest {
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
interface Owners {
  /** The first request that sent it. */
  first: number
  /** A second request of the same principal (a retry, a later turn), or −1 (answers: a count). */
  second: number
  /** Sent by two principals or more (answers: in three answers): boilerplate, never evidence. */
  common: boolean
  /** In a timed index: the earliest time it was added with (ms; NaN when none was known). */
  earliestMs: number
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

/** Bytes per slot: key (8), first (4), second (4), flags (1); a timed index adds 8 (the time). */
const SLOT_BYTES = 17
const TIMED_SLOT_BYTES = 25
/** Load factor at which the table grows or samples. */
const MAX_LOAD = 0.6
/** Estimated bytes per request-table entry beyond its strings (object, array slots, numbers). */
const REQUEST_OVERHEAD = 160
/** The request table may use at most this share of the budget. */
const REQUEST_SHARE = 0.25

const COMMON = 1
/** Answers that make a fingerprint the model's own phrasing. */
const ANSWERS_COMMON_AT = 3

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
  private earliest: Float64Array
  private mask: number
  private size = 0
  private level = 0
  private requestBytes = 0
  private unindexed = 0

  /**
   * @param budgetBytes memory bound (at least 1 MiB)
   * @param kind `prompts`: common once two principals sent it (a text two senders sent is shared,
   *   not private). `answers`: each `add` is one answer (its fingerprints deduplicated), common
   *   once three answers hold it — text a model writes again and again is its own phrasing, and a
   *   stale page is not read into three answers in the pool — and each fingerprint keeps the
   *   earliest time it was added with (a passage a model wrote before a request was sent is not
   *   that request's text).
   */
  constructor(
    readonly budgetBytes: number,
    readonly kind: 'prompts' | 'answers' = 'prompts',
  ) {
    if (!(budgetBytes >= 1024 * 1024)) throw new Error('ContentIndex: budget of at least 1 MiB')
    const capacity = 1 << 16
    this.keys = new Float64Array(capacity)
    this.first = new Int32Array(capacity)
    this.second = new Int32Array(capacity)
    this.flags = new Uint8Array(capacity)
    this.earliest = new Float64Array(kind === 'answers' ? capacity : 0)
    this.mask = capacity - 1
  }

  private get timed(): boolean {
    return this.kind === 'answers'
  }

  private get slotBytes(): number {
    return this.timed ? TIMED_SLOT_BYTES : SLOT_BYTES
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

  /**
   * The slot of `fingerprint`, made for `ref` at `atMs` when it is new (`fresh`), or undefined when
   * it is outside the sample.
   */
  private slotOf(
    fingerprint: number,
    ref: number,
    atMs: number,
  ): { slot: number; fresh: boolean } | undefined {
    if (!this.sampled(fingerprint)) return undefined
    const key = fingerprint + 1
    let slot = this.find(key)
    if (this.keys[slot] !== 0) return { slot, fresh: false }
    if (this.size + 1 > this.mask * MAX_LOAD) {
      this.makeRoom()
      if (!this.sampled(fingerprint)) return undefined
      slot = this.find(key)
    }
    this.keys[slot] = key
    this.first[slot] = ref
    this.second[slot] = -1
    this.flags[slot] = 0
    if (this.timed) this.earliest[slot] = atMs
    this.size++
    return { slot, fresh: true }
  }

  /** Records that request `ref` sent `fingerprint` (at `atMs`, for a timed index). */
  add(fingerprint: number, ref: number, atMs = Number.NaN): void {
    const found = this.slotOf(fingerprint, ref, atMs)
    if (found === undefined || found.fresh) return
    const { slot } = found
    if (this.timed) {
      const held = this.earliest[slot]!
      if (Number.isNaN(held) || atMs < held) this.earliest[slot] = atMs
    }
    if (this.flags[slot] === COMMON) return
    if (this.kind === 'answers') {
      // `second` counts the answers after the first.
      const more = this.second[slot] === -1 ? 1 : this.second[slot]! + 1
      this.second[slot] = more
      if (more + 1 >= ANSWERS_COMMON_AT) this.flags[slot] = COMMON
      return
    }
    const first = this.first[slot]!
    if (first === ref || this.second[slot] === ref) return
    const owner = this.requests[first]
    const adding = this.requests[ref]
    if (owner && adding && owner.principal !== adding.principal) this.flags[slot] = COMMON
    else if (this.second[slot] === -1) this.second[slot] = ref
  }

  /**
   * Marks `fingerprint` common whoever sends it (public background text: never evidence).
   *
   * @example
   * for (const fp of printPrompt(key, [licence], params).selected) index.markCommon(fp)
   */
  markCommon(fingerprint: number): void {
    const found = this.slotOf(fingerprint, -1, Number.NaN)
    if (found !== undefined) this.flags[found.slot] = COMMON
  }

  /** Who sent `fingerprint`, or undefined (never sent, or outside the sample). */
  lookup(fingerprint: number): Owners | undefined {
    const slot = this.find(fingerprint + 1)
    if (this.keys[slot] === 0) return undefined
    return {
      first: this.first[slot]!,
      second: this.second[slot]!,
      common: this.flags[slot] === COMMON,
      earliestMs: this.timed ? this.earliest[slot]! : Number.NaN,
    }
  }

  stats(): ContentIndexStats {
    return {
      fingerprints: this.size,
      requests: this.requests.length,
      unindexed: this.unindexed,
      bytes: this.keys.length * this.slotBytes + this.requestBytes,
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
    const grow = (this.mask + 1) * 2 * this.slotBytes <= slotBudget
    if (!grow) this.level++
    this.rehash(grow ? (this.mask + 1) * 2 : this.mask + 1)
  }

  private rehash(capacity: number): void {
    const { keys, first, second, flags, earliest } = this
    this.keys = new Float64Array(capacity)
    this.first = new Int32Array(capacity)
    this.second = new Int32Array(capacity)
    this.flags = new Uint8Array(capacity)
    this.earliest = new Float64Array(this.timed ? capacity : 0)
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
      if (this.timed) this.earliest[slot] = earliest[i]!
      this.size++
    }
  }
}
