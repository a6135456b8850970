/**
 * @module Shingles of one channel's text, incrementally: every run of n consecutive units, hashed in
 * O(1) per unit (a rolling polynomial per lane), with absolute offsets. Pieces cut anywhere — inside a
 * word, a surrogate pair or a `\u00e9` escape — give the shingles of the whole text.
 */
import { type FingerprintKey, rollPower, shingleHash, unitLanes } from './hash'
import { UnitReader, type UnitSink, type UnitSpan, unitWeight, WORD_WEIGHT } from './units'

/** n consecutive units: their keyed hash and `[start, end)` in the channel's text. */
export interface Shingle {
  hash: number
  start: number
  end: number
  /** Its ordinal in the channel (0 for the first shingle). */
  index: number
}

/** Receives each completed shingle (the allocation-free form of {@link Shingler.push}). */
type ShingleSink = (hash: number, start: number, end: number, index: number) => void

/** Outside a read: one function for every shingler, not a fresh closure per read. */
const NO_SINK: ShingleSink = () => {}

/** Shingler settings. */
export interface ShinglerOptions {
  /** Units per shingle. */
  n: number
  /** How many of the last units' starts to remember, for {@link Shingler.unitStart}. @default n */
  keepStarts?: number
}

/**
 * Turns a stream of text into shingles.
 *
 * @example
 * const shingler = new Shingler(key, { n: 5 })
 * for (const s of shingler.push(chunk, false)) console.log(s.hash, s.start, s.end)
 */
export class Shingler {
  private readonly reader = new UnitReader()
  private readonly n: number
  private readonly outA: number
  private readonly outB: number
  /** The last n units' lanes and starts, as rings indexed by unit ordinal mod n. */
  private readonly lanesA: Int32Array
  private readonly lanesB: Int32Array
  private readonly starts: Float64Array
  /** Per remembered unit, the weight of every unit before it (ring like `starts`). */
  private readonly before: Float64Array
  /** The weight of every unit read (see `unitWeight`). */
  private weighed = 0
  private sumA = 0
  private sumB = 0
  /** Units read so far. */
  private count = 0
  /** `count` modulo n and modulo the starts' ring: the next unit's places (kept, not divided). */
  private slot = 0
  private ring = 0
  /** The last {@link unitsWeighing} answer: its unit count, weight and result (−1: none). */
  private weighedAt = -1
  private weighedFor = 0
  private weighedUnits = 0
  /** The first unit of that answer (−1: none, more than are remembered). */
  private heavyFrom = -1
  private readonly lanes = new Int32Array(2)
  private sink: ShingleSink = NO_SINK
  private readonly onUnit: UnitSink = (unit) => this.add(unit)

  constructor(
    private readonly key: FingerprintKey,
    options: ShinglerOptions,
  ) {
    const n = options.n
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error('Shingler: n must be 1 to 64')
    this.n = n
    this.outA = rollPower(key.rollA, n - 1)
    this.outB = rollPower(key.rollB, n - 1)
    this.lanesA = new Int32Array(n)
    this.lanesB = new Int32Array(n)
    this.starts = new Float64Array(Math.max(n, options.keepStarts ?? n, 1))
    this.before = new Float64Array(this.starts.length)
  }

  /**
   * Reads a piece of the channel's text; returns the shingles it completed. `final` ends the text.
   *
   * @example
   * shingler.push('the quick brown fox jumps', true).length // 1 with n = 5
   */
  push(text: string, final: boolean): Shingle[] {
    const shingles: Shingle[] = []
    this.read(text, final, (hash, start, end, index) => shingles.push({ hash, start, end, index }))
    return shingles
  }

  /**
   * Like {@link push}, handing each shingle to `sink` instead of building objects.
   *
   * @example
   * shingler.read(text, true, (hash) => all.push(hash))
   */
  read(text: string, final: boolean, sink: ShingleSink): void {
    this.sink = sink
    this.reader.read(text, final, this.onUnit)
    this.sink = NO_SINK
  }

  /** Units completed so far. */
  get units(): number {
    return this.count
  }

  /** Characters pushed so far. */
  get length(): number {
    return this.reader.length
  }

  /**
   * Where the `k`-th last complete unit starts (k = 1: the last), if it is still remembered
   * (k ≤ `keepStarts`) and exists.
   *
   * @example
   * const holdFrom = shingler.unitStart(21) ?? shingler.pendingStart()
   */
  unitStart(k: number): number | undefined {
    if (k < 1 || k > this.count || k > this.starts.length) return undefined
    return this.starts[(this.count - k) % this.starts.length]
  }

  /**
   * The weight of the units before the `i`-th (0 for the first; `units` for all read), if unit `i` is
   * still remembered (see `unitWeight`).
   *
   * @example
   * const span = shingler.weightBefore(last + n)! - shingler.weightBefore(first)!
   */
  weightBefore(i: number): number | undefined {
    if (i === this.count) return this.weighed
    if (i < 0 || i > this.count || this.count - i > this.starts.length) return undefined
    return this.before[i % this.starts.length]
  }

  /**
   * The fewest of the last complete units that weigh `weight` together; one more than are remembered
   * when those weigh less.
   *
   * @example
   * const held = shingler.unitsWeighing(30 * WORD_WEIGHT) - 1 // a span older than these weighs 30
   */
  unitsWeighing(weight: number): number {
    // Asked several times per event for the same weight: answered once per unit read.
    if (this.weighedAt === this.count && this.weighedFor === weight) return this.weighedUnits
    const length = this.starts.length
    const remembered = Math.min(this.count, length)
    const oldest = this.count - remembered
    // The answer's first unit only moves forward for one weight (weights only add up): from where it
    // was, not a scan of every remembered unit per unit read.
    let first = this.weighedFor === weight ? this.heavyFrom : -1
    if (first < oldest) first = remembered > 0 && this.heavy(oldest, weight) ? oldest : -1
    if (first >= 0) while (first + 1 < this.count && this.heavy(first + 1, weight)) first++
    this.heavyFrom = first
    this.weighedAt = this.count
    this.weighedFor = weight
    this.weighedUnits = first < 0 ? remembered + 1 : this.count - first
    return this.weighedUnits
  }

  /** Whether the units from the remembered unit `first` to the last weigh `weight` or more. */
  private heavy(first: number, weight: number): boolean {
    return this.weighed - this.before[first % this.starts.length]! >= weight
  }

  /**
   * Where text not yet in a complete unit starts (an open word, escape or surrogate pair), or the
   * length pushed so far.
   *
   * @example
   * shingler.push('abc de', false); shingler.pendingStart() // 4
   */
  pendingStart(): number {
    return this.reader.pendingStart()
  }

  private add(unit: Readonly<UnitSpan>): void {
    const { text, from, start, end } = unit
    const n = this.n
    const slot = this.slot
    const lanes = this.lanes
    unitLanes(this.key, unit, lanes)
    const a = lanes[0]!
    const b = lanes[1]!
    if (this.count >= n) {
      // The unit n places back leaves the window: subtract its weight, then shift.
      this.sumA = (this.sumA - Math.imul(this.lanesA[slot]!, this.outA)) | 0
      this.sumB = (this.sumB - Math.imul(this.lanesB[slot]!, this.outB)) | 0
    }
    this.sumA = (Math.imul(this.sumA, this.key.rollA) + a) | 0
    this.sumB = (Math.imul(this.sumB, this.key.rollB) + b) | 0
    this.lanesA[slot] = a
    this.lanesB[slot] = b
    this.slot = slot + 1 === n ? 0 : slot + 1
    const length = this.starts.length
    const ring = this.ring
    this.starts[ring] = start
    this.before[ring] = this.weighed
    this.ring = ring + 1 === length ? 0 : ring + 1
    // A folded unit is plain ASCII: a word's weight, without reading its first code point.
    this.weighed += unit.fold ? WORD_WEIGHT : unitWeight(text.codePointAt(from)!)
    this.count++
    if (this.count < n) return
    const index = this.count - n
    // The shingle's first unit: n places before the next ring position (the ring holds at least n).
    const first = this.starts[this.ring >= n ? this.ring - n : this.ring - n + length]!
    this.sink(shingleHash(this.key, this.sumA, this.sumB), first, end, index)
  }
}
