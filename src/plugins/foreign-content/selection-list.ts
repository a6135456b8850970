/**
 * @module An answer's distinct fingerprints in the order first seen, up to a cap: what a released
 * answer teaches. Typed arrays, not a `Set<number>`: a 52-bit fingerprint is no small integer, so a
 * Set boxed each one as a heap number that lived to the answer's end (thousands per long answer,
 * copied through every young-generation collection of the stream).
 */

/**
 * Insert-only, insertion-ordered set of 52-bit integers, bounded.
 *
 * @example
 * const list = new SelectionList(8_192)
 * list.add(print)
 * list.toArray() // [print]
 */
export class SelectionList {
  /** The values, in the order first added. */
  private values = new Float64Array(64)
  /** Open addressing over the values' low 32 bits: a value's place in `values` + 1 (0: empty). */
  private slots = new Int32Array(128)
  private mask = 127
  /** Distinct values held. */
  size = 0

  constructor(private readonly cap: number) {}

  /** Adds a value unless it is held or the list is full. */
  add(value: number): void {
    if (this.size >= this.cap) return
    const values = this.values
    const slots = this.slots
    let slot = spread(value) & this.mask
    for (;;) {
      const at = slots[slot]!
      if (at === 0) break
      if (values[at - 1] === value) return
      slot = (slot + 1) & this.mask
    }
    if (this.size === values.length) {
      this.values = new Float64Array(values.length * 2)
      this.values.set(values)
    }
    this.values[this.size] = value
    this.size++
    slots[slot] = this.size
    if (this.size * 2 > slots.length) this.grow()
  }

  /** The values, in the order first added. */
  toArray(): number[] {
    return Array.from(this.values.subarray(0, this.size))
  }

  private grow(): void {
    const slots = new Int32Array(this.slots.length * 2)
    const mask = slots.length - 1
    for (let i = 0; i < this.size; i++) {
      let slot = spread(this.values[i]!) & mask
      while (slots[slot] !== 0) slot = (slot + 1) & mask
      slots[slot] = i + 1
    }
    this.slots = slots
    this.mask = mask
  }
}

/** A value's slot bits: its low 32 bits (`| 0` reduces mod 2^32) mixed. */
function spread(value: number): number {
  return Math.imul(value | 0, 0x9e3779b1) >>> 7
}
