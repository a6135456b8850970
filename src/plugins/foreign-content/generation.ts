/**
 * @module One generation of the fingerprint table: an open-addressing hash table in typed arrays
 * (linear probing, no deletion), with its own bounded list of tenant names. The table keeps two and
 * drops the older one whole, so memory never grows and nothing is ever deleted slot by slot.
 *
 * In front of the slots, a bitmap of the keys held (a one-hash Bloom filter, {@link FILTER_BITS} bits a
 * slot): most lookups are of fingerprints nobody sent — an answer's own words — and the slots of a
 * 16 MiB table are megabytes of arrays, so a probe is a cache miss even in a table with nothing in
 * it; the bitmap is a thirty-second of their size and answers most of those lookups by itself. In
 * front of the bitmap, its summary: a bit per {@link SUMMARY_SPAN} of its bits, set when any of them is
 * (a 16 MiB table's is 29 KiB, the bitmap's 235 KiB): a lightly filled table answers from the summary,
 * which stays in a core's cache, and it never answers otherwise than the bitmap would.
 */

/** Owner slot value: the fingerprint was sent by `commonAt` or more distinct tenants. */
export const COMMON = -2
/** Owner slot value: unused. */
export const NO_OWNER = -1

const TWO_32 = 0x100000000

/**
 * Filter bits per slot. At the most a generation holds (0.7 of its slots) that is 5.7 bits a key: a
 * key not held passes the filter with probability 1 − e^(−1/5.7) ≈ 16%, far less while it fills.
 */
const FILTER_BITS = 4

/** Filter bits per summary bit: a summary bit is the or of these (aligned) bits of the bitmap. */
const SUMMARY_SPAN = 8

/**
 * What one slot costs: the key (8 bytes), last-seen second (4), `owners` tenant ids (4 each) and its
 * share of the filter and of its summary.
 */
export function slotBytes(owners: number): number {
  return 12 + 4 * owners + (FILTER_BITS + FILTER_BITS / SUMMARY_SPAN) / 8
}

/**
 * The slots of one generation and its tenants.
 *
 * @example
 * const g = new Generation(1 << 16, 1, Date.now())
 */
export class Generation {
  /** Stored key + 1 (0: empty). Keys are < 2^52, so + 1 stays exact. */
  readonly keys: Float64Array
  /** Last time a tenant sent it, in seconds from the table's epoch. */
  readonly seen: Uint32Array
  /** `ownerSlots` tenant ids per slot ({@link NO_OWNER} unused, {@link COMMON} in the first). */
  readonly owners: Int32Array
  /** One bit set per key held, at a position of its own hash (see {@link mayHold}). */
  readonly #filter: Int32Array
  readonly #filterBits: number
  /** Bit `i` set when any of the filter's bits `[8i, 8i + 8)` is (see {@link mayHold}). */
  readonly #summary: Int32Array
  size = 0
  readonly names: string[] = []
  readonly ids = new Map<string, number>()
  /** Slots each tenant created here (its quota's use). */
  readonly created: number[] = []
  nameBytes = 0

  constructor(
    readonly capacity: number,
    readonly ownerSlots: number,
    public startedAt: number,
  ) {
    this.keys = new Float64Array(capacity)
    this.seen = new Uint32Array(capacity)
    this.owners = new Int32Array(capacity * ownerSlots).fill(NO_OWNER)
    this.#filterBits = Math.max(32, Math.ceil((capacity * FILTER_BITS) / 32) * 32)
    this.#filter = new Int32Array(this.#filterBits / 32)
    this.#summary = new Int32Array(Math.ceil(this.#filterBits / SUMMARY_SPAN / 32))
  }

  /** Empties it for reuse (the arrays are kept: no allocation on rotation). */
  clear(startedAt: number): void {
    this.keys.fill(0)
    this.owners.fill(NO_OWNER)
    this.#filter.fill(0)
    this.#summary.fill(0)
    this.size = 0
    this.names.length = 0
    this.ids.clear()
    this.created.length = 0
    this.nameBytes = 0
    this.startedAt = startedAt
  }

  /** Bytes of its typed arrays. */
  get arrayBytes(): number {
    return (
      this.keys.byteLength +
      this.seen.byteLength +
      this.owners.byteLength +
      this.#filter.byteLength +
      this.#summary.byteLength
    )
  }

  /**
   * False when `stored` is certainly not held: no probe of the slots needed. True when it may be.
   *
   * @example
   * if (generation.mayHold(stored)) slot = generation.find(stored)
   */
  mayHold(stored: number): boolean {
    const bit = this.#bit(stored)
    // Summary bit `bit >>> 3`: word `bit >>> 8`. Clear, so is every filter bit it sums, this one too.
    if ((this.#summary[bit >>> 8]! & (1 << ((bit >>> 3) & 31))) === 0) return false
    return (this.#filter[bit >>> 5]! & (1 << (bit & 31))) !== 0
  }

  /**
   * Puts `stored` in the empty `slot` that {@link find} gave for it (one more key held).
   *
   * @example
   * const slot = generation.find(stored); if (generation.keys[slot] === 0) generation.put(slot, stored)
   */
  put(slot: number, stored: number): void {
    this.keys[slot] = stored
    this.size++
    const bit = this.#bit(stored)
    this.#filter[bit >>> 5]! |= 1 << (bit & 31)
    this.#summary[bit >>> 8]! |= 1 << ((bit >>> 3) & 31)
  }

  /**
   * The filter bit of a key: its low 32 bits (`| 0` takes them, exactly), multiplied by an odd
   * constant and scaled — not the home slot's bits (those 32 bits scaled as they are), so keys that
   * crowd a run of slots are spread over the filter.
   */
  #bit(stored: number): number {
    const mixed = Math.imul(stored | 0, 0x9e3779b1) >>> 0
    return Math.floor((mixed * this.#filterBits) / TWO_32)
  }

  /**
   * The slot holding `stored`, or the empty slot where it would go (check `keys[slot] === 0`).
   * The caller keeps the load below 1, so the probe ends.
   */
  find(stored: number): number {
    const capacity = this.capacity
    let slot = Math.floor(((stored % TWO_32) * capacity) / TWO_32)
    for (;;) {
      const key = this.keys[slot]!
      if (key === stored || key === 0) return slot
      slot = slot + 1 === capacity ? 0 : slot + 1
    }
  }

  /** The id of a tenant here, added if new (the caller checks the name budget first). */
  idOf(tenant: string): number {
    let id = this.ids.get(tenant)
    if (id === undefined) {
      id = this.names.length
      this.names.push(tenant)
      this.ids.set(tenant, id)
      this.created.push(0)
      this.nameBytes += nameCost(tenant)
    }
    return id
  }

  /** The names of a slot's owners, and whether it is common. */
  ownersOf(slot: number): { tenants: string[]; common: boolean } {
    const base = slot * this.ownerSlots
    if (this.owners[base] === COMMON) return { tenants: [], common: true }
    const tenants: string[] = []
    for (let i = 0; i < this.ownerSlots; i++) {
      const id = this.owners[base + i]!
      if (id >= 0) tenants.push(this.names[id]!)
    }
    return { tenants, common: false }
  }
}

/**
 * What a tenant name is charged against the name budget: its UTF-16 bytes and a generous estimate of
 * a Map entry, an array slot and a string header.
 *
 * @example
 * nameCost('acme') // 80
 */
export function nameCost(tenant: string): number {
  return 2 * tenant.length + 72
}
