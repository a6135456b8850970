/**
 * @module Winnowing (Schleimer, Wilkerson & Aiken, SIGMOD 2003), streaming: of every window of w
 * consecutive shingle hashes, the minimum is selected (the rightmost on ties). The choice depends only
 * on the window's content, so any span of at least w + n − 1 units that two texts share contains a
 * window whose selection both texts make: a common fingerprint. Both prompts and answers are
 * winnowed, so stuffing a prompt with every shingle of a phrase cannot raise the count an answer
 * yields (the answer's own selection decides which of its shingles count).
 */

/**
 * The minimum of each window of `w` hashes, in O(1) amortised per hash (a monotone deque).
 *
 * @example
 * const winnow = new Winnower(4)
 * for (const s of shingles) if (winnow.push(s.hash, s.index)) select(winnow.selectedHash)
 */
export class Winnower {
  private readonly hashes: Float64Array
  private readonly indexes: Float64Array
  /** Ring size − 1: a power of two, so a position is a mask, not a division (once per shingle). */
  private readonly mask: number
  /** Deque bounds as running counters (ring positions: `& mask`). */
  private head = 0
  private tail = 0
  private seen = 0
  private lastSelected = -1
  /** The hash and shingle index of the last selection. */
  selectedHash = 0
  selectedIndex = -1

  constructor(private readonly w: number) {
    if (!Number.isInteger(w) || w < 1 || w > 1024) throw new Error('Winnower: w must be 1 to 1024')
    // The deque holds at most w entries: the smallest power of two above w.
    let size = 2
    while (size <= w) size *= 2
    this.hashes = new Float64Array(size)
    this.indexes = new Float64Array(size)
    this.mask = size - 1
  }

  /**
   * Adds the hash of shingle `index` (consecutive from 0). True when the window it completes selects
   * a shingle not selected before: read it from `selectedHash` / `selectedIndex`.
   *
   * @example
   * if (winnow.push(hash, i)) fingerprints.push(winnow.selectedHash)
   */
  push(hash: number, index: number): boolean {
    const mask = this.mask
    // Pop from the back every hash ≥ the new one: equal ones too, so the rightmost minimum survives.
    while (this.tail > this.head && this.hashes[(this.tail - 1) & mask]! >= hash) this.tail--
    this.hashes[this.tail & mask] = hash
    this.indexes[this.tail & mask] = index
    this.tail++
    while (this.indexes[this.head & mask]! <= index - this.w) this.head++
    this.seen++
    if (this.seen < this.w) return false
    return this.select()
  }

  /**
   * Ends the text: a text shorter than one window (fewer than w shingles) selects its minimum, so a
   * quote of a whole short message still meets a fingerprint.
   *
   * @example
   * if (winnow.end()) fingerprints.push(winnow.selectedHash)
   */
  end(): boolean {
    if (this.seen === 0 || this.seen >= this.w) return false
    return this.select()
  }

  private select(): boolean {
    const at = this.head & this.mask
    const index = this.indexes[at]!
    if (index === this.lastSelected) return false
    this.lastSelected = index
    this.selectedHash = this.hashes[at]!
    this.selectedIndex = index
    return true
  }
}
