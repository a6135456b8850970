/**
 * @module A compact set of shingle hashes, for "does this request's own prompt contain it": the low 32
 * bits of each hash in one sorted Uint32Array, 4 bytes per distinct shingle once sealed (a hash table
 * at load 1/2 took 8 to 16, and a maximal prompt's was 8 MiB of the isolate's 128 MB). Comparing 32
 * bits instead of 52 lets a foreign shingle pass for one of the prompt's own with probability
 * (distinct shingles) / 2^32 — 5·10^-5 for a 256k-token prompt — which can only hide one fingerprint
 * of evidence, never create one.
 */

/** Growth factor of the array while hashes are added: 1.5 rather than 2, so less of it sits empty. */
const GROWTH = 1.5

/**
 * Set of 52-bit hashes, keyed by their low 32 bits. Hashes are appended as they come and sorted (and
 * deduplicated) on the first look-up; a hash added after that is merged in on the next one.
 *
 * @example
 * const set = new ShingleSet()
 * set.add(hash)
 * set.has(hash) // true
 */
export class ShingleSet {
  private keys: Uint32Array
  /** Keys held: the first `sorted` sorted and distinct, the rest appended since. */
  private length = 0
  private sorted = 0

  /** `expected`: about how many hashes will come (sizes the array once, instead of growing). */
  constructor(expected = 512) {
    this.keys = new Uint32Array(Math.max(16, Math.ceil(expected)))
  }

  /** Distinct keys held. */
  get size(): number {
    this.seal()
    return this.length
  }

  /** Bytes of its array. */
  get bytes(): number {
    return this.keys.byteLength
  }

  /** Adds a hash. */
  add(hash: number): void {
    if (this.length === this.keys.length) {
      const grown = new Uint32Array(Math.ceil(this.keys.length * GROWTH))
      grown.set(this.keys)
      this.keys = grown
    }
    this.keys[this.length++] = keyOf(hash)
  }

  /** Whether a hash (its low 32 bits) was added. */
  has(hash: number): boolean {
    this.seal()
    const key = keyOf(hash)
    const keys = this.keys
    let low = 0
    let high = this.length - 1
    while (low <= high) {
      const mid = (low + high) >>> 1
      const value = keys[mid]!
      if (value === key) return true
      if (value < key) low = mid + 1
      else high = mid - 1
    }
    return false
  }

  /**
   * The set as it is kept between requests: sealed, so its array is at most an eighth larger than
   * its keys (a set sized for the expected count of a text that turned out to repeat itself holds no
   * large empty part), and shared with the request's own print rather than copied.
   *
   * @example
   * const kept = set.compact()
   */
  compact(): ShingleSet {
    this.seal()
    return this
  }

  /** Sorts and deduplicates what was added since the last look-up, in place. */
  private seal(): void {
    if (this.sorted === this.length) return
    const keys = this.keys.subarray(0, this.length)
    keys.sort()
    let distinct = 0
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!
      if (distinct === 0 || keys[distinct - 1] !== key) keys[distinct++] = key
    }
    this.length = distinct
    this.sorted = distinct
    // A text that repeated itself, or had fewer units than expected, leaves part of the array
    // unused: not kept for the request's life, nor in the memo.
    if (this.keys.length - distinct > distinct / 8 && this.keys.length > 1024) {
      this.keys = this.keys.slice(0, distinct)
    }
  }
}

/** The low 32 bits (`>>> 0` reduces mod 2^32, without a floating-point remainder). */
function keyOf(hash: number): number {
  return hash >>> 0
}
