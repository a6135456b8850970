/**
 * @module Finds a request's own stand-ins in an answer in one pass: a rolling hash over the answer's
 * 8-character windows, a bit filter that rejects almost every window without a lookup, and a map from
 * each stand-in's last 8 characters to the stand-ins that end so. A regex alternation of the stand-ins
 * did the same job in time proportional to their number; this costs the same for 1 or 60,000.
 */

/** One stand-in of the index and what it stands for. */
interface IndexedStandIn {
  standIn: string
  kind: string
  value: string
  /** A PEM stand-in's other writing: the line break it is written with (see `Replacement`). */
  lineBreak?: string
}

/** Where a stand-in was found. */
interface StandInHit {
  start: number
  end: number
  entry: IndexedStandIn
}

const ANCHOR = 8
const BASE = 0x01000193
/**
 * Filter bits per stand-in held (about 1 window in 64 passes the filter to a map lookup), between
 * the bounds below. Sized to the book, not fixed: a fixed 2^20 bits was a 128 KiB array zeroed for
 * every request, nearly all of which hold no stand-in: a visible share of a 1k-token request.
 */
const BITS_PER_STAND_IN = 64
const MIN_FILTER_BITS = 1 << 10
const MAX_FILTER_BITS = 1 << 20
const POW = (() => {
  let p = 1
  for (let i = 0; i < ANCHOR - 1; i++) p = Math.imul(p, BASE)
  return p
})()

/** The filter bit of an anchor hash: its top bits after a multiply, so every bit of h counts. */
function filterBit(h: number, shift: number): number {
  return Math.imul(h, 0x9e3779b1) >>> shift
}

function anchorHash(text: string, end: number): number {
  let h = 0
  for (let i = end - ANCHOR; i < end; i++) h = (Math.imul(h, BASE) + text.charCodeAt(i)) | 0
  return h
}

/**
 * A set of stand-ins (each at least 8 characters) searchable in linear time.
 *
 * @example
 * const index = new StandInIndex()
 * index.add({ standIn, kind: 'jwt', value })
 * for (const hit of index.find(answer)) console.log(hit.entry.kind, hit.start)
 */
export class StandInIndex {
  /** Made on the first add (most requests hold no stand-in), grown with the book. */
  #filter = new Uint32Array(0)
  /** 32 − log2(filter bits): a window's filter bit is the top bits of its mixed hash. */
  #shift = 32
  readonly #byAnchor = new Map<number, IndexedStandIn[]>()
  #size = 0

  /** How many stand-ins it holds. */
  get size(): number {
    return this.#size
  }

  /** Adds one stand-in; shorter than 8 characters throws (every built-in shape is longer). */
  add(entry: IndexedStandIn): void {
    if (entry.standIn.length < ANCHOR) throw new Error('a stand-in is at least 8 characters')
    const h = anchorHash(entry.standIn, entry.standIn.length)
    const list = this.#byAnchor.get(h)
    if (list) list.push(entry)
    else this.#byAnchor.set(h, [entry])
    this.#size++
    const bits = this.#filter.length * 32
    if (this.#size * BITS_PER_STAND_IN > bits && bits < MAX_FILTER_BITS) {
      this.#resize()
    } else this.#mark(h)
  }

  #mark(h: number): void {
    const bit = filterBit(h, this.#shift)
    this.#filter[bit >>> 5]! |= 1 << (bit & 31)
  }

  /** A filter sized for the stand-ins held, every anchor marked again. */
  #resize(): void {
    let bits = MIN_FILTER_BITS
    let shift = 32 - Math.log2(MIN_FILTER_BITS)
    while (bits < this.#size * BITS_PER_STAND_IN && bits < MAX_FILTER_BITS) {
      bits *= 2
      shift--
    }
    this.#filter = new Uint32Array(bits / 32)
    this.#shift = shift
    for (const h of this.#byAnchor.keys()) this.#mark(h)
  }

  /** Every stand-in occurrence in `text`, in order, non-overlapping (the earlier one wins). */
  find(text: string): StandInHit[] {
    const hits: StandInHit[] = []
    if (this.#size === 0 || text.length < ANCHOR) return hits
    const filter = this.#filter
    const shift = this.#shift
    let h = anchorHash(text, ANCHOR)
    let lastEnd = 0
    for (let end = ANCHOR; ; end++) {
      const bit = filterBit(h, shift)
      if ((filter[bit >>> 5]! & (1 << (bit & 31))) !== 0) {
        for (const entry of this.#byAnchor.get(h) ?? []) {
          const start = end - entry.standIn.length
          if (start >= lastEnd && text.startsWith(entry.standIn, start)) {
            hits.push({ start, end, entry })
            lastEnd = end
            break
          }
        }
      }
      if (end >= text.length) break
      const out = Math.imul(text.charCodeAt(end - ANCHOR), POW)
      h = (Math.imul(h - out, BASE) + text.charCodeAt(end)) | 0
    }
    return hits
  }
}
