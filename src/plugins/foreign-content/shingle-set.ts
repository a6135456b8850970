/**
 * @module A compact set of shingle hashes, for "does this request's own prompt contain it": open
 * addressing over the low 32 bits of each hash (Uint32Array, load ≤ 1/2, doubling), 8 to 16 bytes per
 * distinct shingle. Comparing 32 bits instead of 52 lets a foreign shingle pass for one of the
 * prompt's own with probability (distinct shingles) / 2^32 — 5·10^-5 for a 256k-token prompt — which
 * can only hide one fingerprint of evidence, never create one.
 */

/**
 * Insert-only set of 52-bit hashes, keyed by their low 32 bits.
 *
 * @example
 * const set = new ShingleSet()
 * set.add(hash)
 * set.has(hash) // true
 */
export class ShingleSet {
  private slots: Uint32Array
  private mask: number
  /** Distinct keys held. */
  size = 0

  /** `expected`: about how many hashes will come (sizes the array once, instead of doubling). */
  constructor(expected = 512) {
    let capacity = 1024
    while (capacity < expected * 2 && capacity < 1 << 26) capacity *= 2
    this.slots = new Uint32Array(capacity)
    this.mask = capacity - 1
  }

  /** Bytes of its array. */
  get bytes(): number {
    return this.slots.byteLength
  }

  /** Adds a hash. */
  add(hash: number): void {
    if (this.size * 2 >= this.slots.length) this.grow()
    if (this.insert(this.slots, this.mask, keyOf(hash))) this.size++
  }

  /** Whether a hash (its low 32 bits) was added. */
  has(hash: number): boolean {
    const key = keyOf(hash)
    const slots = this.slots
    let slot = spread(key) & this.mask
    for (;;) {
      const value = slots[slot]!
      if (value === key) return true
      if (value === 0) return false
      slot = (slot + 1) & this.mask
    }
  }

  /**
   * The same set in the smallest array that keeps the load at 1/2 or less: a set sized for the
   * expected count of a text that turned out to repeat itself (or to be English, a unit per 5.5
   * characters rather than 4) can hold half its array empty, and one kept between requests should not.
   *
   * @example
   * const kept = set.compact()
   */
  compact(): ShingleSet {
    let capacity = 1024
    while (capacity < this.size * 2 + 2) capacity *= 2
    if (capacity >= this.slots.length) return this
    const out = new ShingleSet(capacity / 2)
    const old = this.slots
    for (let i = 0; i < old.length; i++) if (old[i] !== 0) out.insert(out.slots, out.mask, old[i]!)
    out.size = this.size
    return out
  }

  private insert(slots: Uint32Array, mask: number, key: number): boolean {
    let slot = spread(key) & mask
    for (;;) {
      const value = slots[slot]!
      if (value === key) return false
      if (value === 0) {
        slots[slot] = key
        return true
      }
      slot = (slot + 1) & mask
    }
  }

  private grow(): void {
    const old = this.slots
    const slots = new Uint32Array(old.length * 2)
    const mask = slots.length - 1
    for (let i = 0; i < old.length; i++) if (old[i] !== 0) this.insert(slots, mask, old[i]!)
    this.slots = slots
    this.mask = mask
  }
}

/** The low 32 bits (`>>> 0` reduces mod 2^32, without a floating-point remainder), 0 moved to 1 (0 marks an empty slot). */
function keyOf(hash: number): number {
  return hash >>> 0 || 1
}

/** The slot of a key: its high bits mixed down (the low bits of a mask would do, but cheaply better). */
function spread(key: number): number {
  return Math.imul(key, 0x9e3779b1) >>> 7
}
