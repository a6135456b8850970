/**
 * @module o200k's byte-pair merge of one pre-token, straight from its string: UTF-8 written into a
 * scratch buffer, parts in typed arrays, and the rank of each adjacent pair looked up by the two
 * parts' ranks in a small table instead of by decoding the pair's bytes — the same merges, in the
 * same order, as gpt-tokenizer's, without allocating per pre-token.
 */

import { AFTER_SEAM, BEFORE_SEAM, type CharStarts, charStarts } from './char-starts'

/** Slots of the pair table (a power of two): 3 Int32Arrays of this many, 3 MiB. */
const PAIR_SLOTS = 1 << 18
const PAIR_BITS = 18
/** The table is emptied when it holds this many pairs, so probes stay short. */
const PAIR_FILL = PAIR_SLOTS >>> 1
const EMPTY = -2
const NO_RANK = -1
/** A pair that is not a token: higher than any rank, so the minimum search passes it over. */
const NEVER = 0x7fffffff

/** The two methods of gpt-tokenizer 4's BPE core this merge replaces and uses. */
export interface MergeCore {
  /** The library's merge of one pre-token's UTF-8 bytes into token ids (what is replaced). */
  bytePairMerge: (piece: Uint8Array) => number[]
  /** The rank (token id) of a byte string, if it is a token. */
  getBpeRankFromBytes: (key: Uint8Array) => number | undefined
  /** The rank of a string's UTF-8, if it is a token: where present, valid UTF-8 is decoded here. */
  getBpeRankFromString?: (key: string) => number | undefined
}

/**
 * Whether `value` has the two methods of {@link MergeCore}.
 *
 * @example
 * if (isMergeCore(core)) merger = pieceMerger(core)
 */
export function isMergeCore(value: unknown): value is MergeCore {
  if (typeof value !== 'object' || value === null) return false
  const core = value as Record<string, unknown>
  return typeof core.bytePairMerge === 'function' && typeof core.getBpeRankFromBytes === 'function'
}

/** Merges one pre-token into o200k ids. */
export interface PieceMerger {
  /**
   * Writes the ids of `piece` (a pre-token, or a chunk of one) into `out` from index 0 and returns
   * how many; `out` must hold the piece's UTF-8 length. A lone surrogate is U+FFFD, as TextEncoder
   * makes it.
   */
  merge(piece: string, out: Int32Array): number
  /**
   * Writes into `at` the code-unit offsets where `piece` may be cut without changing its merge (no
   * token crosses them: see char-starts.ts), ending with `piece.length`, and returns how many
   * pieces that makes (1: no cut). `single[i]` is the token of piece i when it is one character
   * whose bytes merge into one token, else −1. Both must hold `piece.length` entries.
   */
  cuts(piece: string, at: Int32Array, single: Int32Array): number
}

/**
 * A merge that gives what `core.bytePairMerge` gives, several times faster on text whose pre-tokens
 * are not single tokens (Han, kana, Thai, Cyrillic words). The library encodes each pre-token with a
 * TextEncoder, keeps its parts in arrays it splices, and finds the rank of each candidate pair by
 * validating and decoding its bytes to a string (or a binary search, for bytes that are not UTF-8:
 * the first pairs of every multi-byte character), once per candidate and again after every merge
 * next to it. Here the bytes are written by hand into one buffer, parts are a linked list in typed
 * arrays, and a pair's rank — which depends only on the ranks of its two parts, a rank being one
 * byte string — is remembered by those two numbers, so the library's lookup runs once per distinct
 * pair. The merge order is the library's: the lowest rank first, the leftmost of equal ones.
 *
 * @example
 * const merger = pieceMerger(core)
 * const ids = new Int32Array(64)
 * const n = merger.merge('人人生而自由', ids) // ids[0..n) are what core.bytePairMerge gives
 */
export function pieceMerger(core: MergeCore): PieceMerger {
  return new StringMerger(core)
}

/**
 * Ranks of joined pairs by the ranks of their two parts: open addressing in three Int32Arrays,
 * emptied when half full so probes stay short. A miss asks the library once.
 */
class PairRanks {
  readonly #lookup: (key: Uint8Array) => number | undefined
  readonly #left = new Int32Array(PAIR_SLOTS).fill(EMPTY)
  readonly #right = new Int32Array(PAIR_SLOTS)
  readonly #merged = new Int32Array(PAIR_SLOTS)
  #filled = 0

  readonly #tokens: TokenFilter | undefined

  constructor(lookup: (key: Uint8Array) => number | undefined, tokens?: TokenFilter) {
    this.#lookup = lookup
    this.#tokens = tokens
  }

  /** The bytes that {@link rank}'s positions index: set once per merge, so a rank passes no array. */
  source: Uint8Array = new Uint8Array(0)

  /** The rank of parts `a` and `b` joined, the bytes `[from, to)` of `source` (NEVER: no token). */
  rank(a: number, b: number, from: number, to: number): number {
    const source = this.source
    const left = this.#left
    let slot = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> (32 - PAIR_BITS)
    for (;;) {
      const at = left[slot] as number
      if (at === EMPTY) break
      if (at === a && this.#right[slot] === b) return this.#merged[slot] as number
      slot = (slot + 1) & (PAIR_SLOTS - 1)
    }
    // Most pairs of Han or Thai prose are no token: the filter says so without building a key.
    const found =
      this.#tokens && !this.#tokens.has(source, from, to)
        ? undefined
        : this.#lookup(source.subarray(from, to))
    const r = found === undefined ? NEVER : found
    if (this.#filled >= PAIR_FILL) {
      left.fill(EMPTY)
      this.#filled = 0
      slot = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> (32 - PAIR_BITS)
    }
    left[slot] = a
    this.#right[slot] = b
    this.#merged[slot] = r
    this.#filled++
    return r
  }
}

/** A heap key is `rank × HEAP_SPAN + position`: positions stay below it (pieces are far shorter). */
const HEAP_SPAN = 1 << 20
/** The pair of a part merged away: no rank, so its heap entries are all stale. */
const GONE = -1

/** A binary min-heap of pair keys in one Float64Array, grown to the longest piece seen. */
class PairHeap {
  #keys = new Float64Array(512)
  #size = 0

  /** Empties the heap for a piece of `n` bytes (at most 3n pushes: n − 1, then two a merge). */
  reset(n: number): this {
    if (n >= HEAP_SPAN) throw new RangeError(`a piece of ${n} bytes is longer than the merge takes`)
    if (this.#keys.length < 3 * n) this.#keys = new Float64Array(6 * n)
    this.#size = 0
    return this
  }

  push(rank: number, at: number): void {
    const keys = this.#keys
    const key = rank * HEAP_SPAN + at
    let i = this.#size++
    while (i > 0) {
      const up = (i - 1) >> 1
      if ((keys[up] as number) <= key) break
      keys[i] = keys[up] as number
      i = up
    }
    keys[i] = key
  }

  /** The lowest key, removed; −1 when empty. */
  pop(): number {
    if (this.#size === 0) return -1
    const keys = this.#keys
    const top = keys[0] as number
    const last = keys[--this.#size] as number
    const size = this.#size
    let i = 0
    for (;;) {
      let child = 2 * i + 1
      if (child >= size) break
      if (child + 1 < size && (keys[child + 1] as number) < (keys[child] as number)) child++
      if ((keys[child] as number) >= last) break
      keys[i] = keys[child] as number
      i = child
    }
    keys[i] = last
    return top
  }
}

/** {@link pieceMerger}'s merge: scratch arrays grown to the longest piece seen, never per piece. */
class StringMerger implements PieceMerger {
  readonly #pairs: PairRanks
  readonly #byteRank = new Int32Array(256)
  // Part i covers [start[i], start[next[i]]) with rank rank[i]; pair[i] is the rank of part i joined
  // with the part after it. A merged-away part leaves the list (part 0 never does).
  #bytes = new Uint8Array(128)
  #start = new Int32Array(129)
  #rank = new Int32Array(128)
  #pair = new Int32Array(128)
  #next = new Int32Array(128)
  #prev = new Int32Array(128)
  readonly #heap = new PairHeap()
  readonly #chars: CharStarts | undefined
  // Character c of the piece is bytes [charAt[c], charAt[c + 1]), whole as charToken[c] if ≥ 0.
  #charAt = new Int32Array(129)
  #charToken = new Int32Array(128)

  constructor(core: MergeCore) {
    const lookup = byteLookup(core)
    for (let b = 0; b < 256; b++) this.#byteRank[b] = lookup(Uint8Array.of(b)) ?? NO_RANK
    this.#pairs = new PairRanks(lookup, tokenFilter(core))
    this.#chars = charStarts(core, lookup)
  }

  merge(piece: string, out: Int32Array): number {
    this.#grow(piece.length * 3)
    return this.#run(piece, this.#bytes, utf8Into(piece, this.#bytes), out)
  }

  cuts(piece: string, at: Int32Array, single: Int32Array): number {
    const chars = this.#chars
    const length = piece.length
    if (chars === undefined || length < 2) {
      at[0] = length
      single[0] = -1
      return 1
    }
    this.#grow(length * 3)
    const bytes = this.#bytes
    utf8Into(piece, bytes)
    let count = 0
    let previous = -1
    let byte = 0
    // Characters since the last cut, and the token of the first of them alone.
    let since = 0
    let first = -1
    for (let i = 0; i < length; ) {
      let point = piece.charCodeAt(i)
      let units = 1
      if (point >= 0xd800 && point <= 0xdfff) {
        const low = i + 1 < length ? piece.charCodeAt(i + 1) : 0
        if (point <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
          point = ((point - 0xd800) << 10) + (low - 0xdc00) + 0x10000
          units = 2
        } else point = 0xfffd
      }
      const size = point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4
      // A seam no token crosses, whole or in part: no merge joins its two sides.
      if (
        previous >= 0 &&
        !chars.joined(previous, point) &&
        chars.crossed(bytes[byte - 1] as number, bytes, byte, byte + size) === 0
      ) {
        single[count] = since === 1 ? first : -1
        at[count++] = i
        since = 0
      }
      if (since++ === 0) {
        if (size === 1) first = this.#byteRank[point] as number
        else if (size < 4 && point !== 0xfffd) first = chars.token(point, bytes, byte, size)
        else first = -1
      }
      previous = point
      byte += size
      i += units
    }
    single[count] = since === 1 ? first : -1
    at[count++] = length
    return count
  }

  #grow(n: number): void {
    if (n <= this.#rank.length) return
    const size = Math.max(n, this.#rank.length * 2)
    this.#bytes = new Uint8Array(size)
    this.#start = new Int32Array(size + 1)
    this.#rank = new Int32Array(size)
    this.#pair = new Int32Array(size)
    this.#next = new Int32Array(size)
    this.#prev = new Int32Array(size)
    this.#charAt = new Int32Array(size + 1)
    this.#charToken = new Int32Array(size)
  }

  /**
   * The first parts of `piece` (whose UTF-8 is `source[0, n)`): each character that may start whole
   * (char-starts.ts) one part, every other byte a part of its own; each adjacent pair ranked, the
   * candidates in a heap by (rank, position): the lowest first, the leftmost of equal ones. An entry
   * is current while its part still stands and its pair still has that rank. Returns the parts' count.
   */
  #first(piece: string, source: Uint8Array, n: number): number {
    const start = this.#start
    const rank = this.#rank
    const byteRank = this.#byteRank
    const chars = this.#chars
    let parts = 0
    if (chars === undefined) {
      for (let i = 0; i < n; i++) {
        start[parts] = i
        rank[parts++] = byteRank[source[i] as number] as number
      }
    } else {
      const charAt = this.#charAt
      const token = this.#charToken
      const count = this.#charSpans(piece, source, chars)
      for (let c = 0; c < count; c++) {
        const from = charAt[c] as number
        const whole = token[c] as number
        if (whole >= 0) {
          start[parts] = from
          rank[parts++] = whole
          continue
        }
        const to = charAt[c + 1] as number
        for (let i = from; i < to; i++) {
          start[parts] = i
          rank[parts++] = byteRank[source[i] as number] as number
        }
      }
    }
    start[parts] = n
    const pair = this.#pair
    const next = this.#next
    const prev = this.#prev
    const heap = this.#heap.reset(parts)
    for (let i = 0; i < parts; i++) {
      next[i] = i + 1
      prev[i] = i - 1
    }
    for (let i = 0; i < parts - 1; i++) {
      const r = this.#pairs.rank(
        rank[i] as number,
        rank[i + 1] as number,
        start[i] as number,
        start[i + 2] as number,
      )
      pair[i] = r
      if (r !== NEVER) heap.push(r, i)
    }
    pair[parts - 1] = NEVER
    return parts
  }

  /**
   * The characters of `piece` (UTF-8 in `source`) as byte spans into `#charAt` (one more entry
   * than characters: the end), each with the token it may start as (`#charToken[c]` ≥ 0) or −1
   * (its bytes): ASCII is one byte anyway, a lone surrogate (U+FFFD) and a surrogate pair start as
   * bytes, and so does a character a token covers in part with something outside it. Returns the
   * number of characters.
   */
  #charSpans(piece: string, source: Uint8Array, chars: CharStarts): number {
    const at = this.#charAt
    const token = this.#charToken
    let count = 0
    let byte = 0
    const length = piece.length
    for (let i = 0; i < length; i++) {
      const unit = piece.charCodeAt(i)
      at[count] = byte
      if (unit < 0x80) {
        token[count++] = -1
        byte++
      } else if (unit < 0x800) {
        token[count++] = chars.token(unit, source, byte, 2)
        byte += 2
      } else if (unit < 0xd800 || unit > 0xdfff) {
        token[count++] = chars.token(unit, source, byte, 3)
        byte += 3
      } else {
        const low = i + 1 < length ? piece.charCodeAt(i + 1) : 0
        const paired = unit <= 0xdbff && low >= 0xdc00 && low <= 0xdfff
        if (paired) i++
        token[count++] = -1
        byte += paired ? 4 : 3
      }
    }
    at[count] = byte
    for (let c = 1; c < count; c++) {
      if ((token[c - 1] as number) < 0 && (token[c] as number) < 0) continue
      const from = at[c] as number
      const sides = chars.crossed(source[from - 1] as number, source, from, at[c + 1] as number)
      if (sides & BEFORE_SEAM) token[c - 1] = -1
      if (sides & AFTER_SEAM) token[c] = -1
    }
    return count
  }

  /** Merges `piece`, whose UTF-8 is `source[0, n)`, into `out`: the lowest pair first, the leftmost of equal ones. */
  #run(piece: string, source: Uint8Array, n: number, out: Int32Array): number {
    if (n === 0) return 0
    const start = this.#start
    const rank = this.#rank
    const pair = this.#pair
    const next = this.#next
    const prev = this.#prev
    const pairs = this.#pairs
    const heap = this.#heap
    this.#pairs.source = source
    // Parts are numbered 0 … end − 1; `end` is the list's end.
    const end = this.#first(piece, source, n)
    for (;;) {
      const key = heap.pop()
      if (key < 0) break
      const at = key % HEAP_SPAN
      const lowest = (key - at) / HEAP_SPAN
      if (pair[at] !== lowest) continue
      // Part `at` absorbs the part after it; the pairs on either side are ranked again.
      const gone = next[at] as number
      const after = next[gone] as number
      pair[gone] = GONE
      rank[at] = lowest
      next[at] = after
      if (after !== end) prev[after] = at
      const from = start[at] as number
      const right =
        after === end
          ? NEVER
          : pairs.rank(lowest, rank[after] as number, from, start[next[after] as number] as number)
      pair[at] = right
      if (right !== NEVER) heap.push(right, at)
      const before = prev[at] as number
      if (before >= 0) {
        const left = pairs.rank(
          rank[before] as number,
          lowest,
          start[before] as number,
          start[after] as number,
        )
        pair[before] = left
        if (left !== NEVER) heap.push(left, before)
      }
    }
    let count = 0
    for (let i = 0; i !== end; i = next[i] as number) out[count++] = rank[i] as number
    return count
  }
}

/**
 * Writes `text` as UTF-8 into `into` (which holds at least 3 bytes per UTF-16 unit) and returns the
 * length. A lone surrogate becomes U+FFFD, as TextEncoder writes it. For pre-tokens of a few dozen
 * units this is several times cheaper than a TextEncoder call.
 */
function utf8Into(text: string, into: Uint8Array): number {
  let n = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    let c = text.charCodeAt(i)
    if (c < 0x80) {
      into[n++] = c
      continue
    }
    if (c < 0x800) {
      into[n++] = 0xc0 | (c >> 6)
      into[n++] = 0x80 | (c & 0x3f)
      continue
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const low = i + 1 < length ? text.charCodeAt(i + 1) : 0
      if (c <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
        c = ((c - 0xd800) << 10) + (low - 0xdc00) + 0x10000
        i++
        into[n++] = 0xf0 | (c >> 18)
        into[n++] = 0x80 | ((c >> 12) & 0x3f)
        into[n++] = 0x80 | ((c >> 6) & 0x3f)
        into[n++] = 0x80 | (c & 0x3f)
        continue
      }
      c = 0xfffd
    }
    into[n++] = 0xe0 | (c >> 12)
    into[n++] = 0x80 | ((c >> 6) & 0x3f)
    into[n++] = 0x80 | (c & 0x3f)
  }
  return n
}

/**
 * The rank of a byte string as the library finds it. The library validates the bytes, then decodes
 * valid UTF-8 with a TextDecoder: in workerd that is a call into the runtime per pair, which made a
 * pair lookup cost several times what it does in Node (Han and Thai prose, whose distinct pairs
 * outgrow the pair table, spent most of their count there). Well-formed UTF-8 is decoded here, in
 * the same strict form the library checks (no overlongs, surrogates or code points past U+10FFFF),
 * and looked up by its string; anything else goes to the library, which then searches its byte list.
 */
function byteLookup(core: MergeCore): (key: Uint8Array) => number | undefined {
  const byBytes = core.getBpeRankFromBytes.bind(core)
  const byString = core.getBpeRankFromString?.bind(core)
  if (!byString) return byBytes
  return (key) => {
    const text = wellFormedUtf8(key)
    return text === undefined ? byBytes(key) : byString(text)
  }
}

/** `bytes` as a string when they are well-formed UTF-8 (RFC 3629), else undefined. */
function wellFormedUtf8(bytes: Uint8Array): string | undefined {
  let text = ''
  const n = bytes.length
  for (let i = 0; i < n; ) {
    const b = bytes[i] as number
    let point: number
    let size: number
    let least: number
    if (b < 0x80) {
      text += String.fromCharCode(b)
      i++
      continue
    }
    if (b >= 0xc2 && b <= 0xdf) {
      point = b & 0x1f
      size = 2
      least = 0x80
    } else if ((b & 0xf0) === 0xe0) {
      point = b & 0x0f
      size = 3
      least = 0x800
    } else if (b >= 0xf0 && b <= 0xf4) {
      point = b & 0x07
      size = 4
      least = 0x10000
    } else return undefined
    if (i + size > n) return undefined
    for (let j = 1; j < size; j++) {
      const c = bytes[i + j] as number
      if ((c & 0xc0) !== 0x80) return undefined
      point = (point << 6) | (c & 0x3f)
    }
    if (point < least || (point >= 0xd800 && point <= 0xdfff) || point > 0x10ffff) return undefined
    text += String.fromCodePoint(point)
    i += size
  }
  return text
}

/** Bits of the token filter (a power of two): 2²¹ bits, 256 KiB. */
const FILTER_BITS = 1 << 21

/**
 * A Bloom filter of every byte string that is an o200k token, two bits per token: a byte string
 * whose bits are not both set is no token, without the string key and map look-up a miss costs.
 * It never says no to a token, so a merge with it is the library's merge.
 */
class TokenFilter {
  readonly #bits = new Uint32Array(FILTER_BITS >>> 5)

  add(bytes: Uint8Array, n: number): void {
    const h = fnv(bytes, 0, n)
    const a = h & (FILTER_BITS - 1)
    const b = second(h)
    this.#bits[a >>> 5] = (this.#bits[a >>> 5] as number) | (1 << (a & 31))
    this.#bits[b >>> 5] = (this.#bits[b >>> 5] as number) | (1 << (b & 31))
  }

  /** False when bytes `[from, to)` of `source` are certainly no token. */
  has(source: Uint8Array, from: number, to: number): boolean {
    const h = fnv(source, from, to)
    const a = h & (FILTER_BITS - 1)
    const b = second(h)
    return (
      (((this.#bits[a >>> 5] as number) >>> (a & 31)) & 1) === 1 &&
      (((this.#bits[b >>> 5] as number) >>> (b & 31)) & 1) === 1
    )
  }
}

function fnv(bytes: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5
  for (let i = from; i < to; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193)
  return h >>> 0
}

function second(h: number): number {
  return (Math.imul(h ^ (h >>> 15), 0x9e3779b1) >>> 11) & (FILTER_BITS - 1)
}

/**
 * The filter of every byte string `core` finds a rank for: the UTF-8 of each string key (what a
 * well-formed byte string is decoded to and looked up by) and each key kept as bytes. Undefined when
 * the library keeps its tables elsewhere: then every miss asks the library.
 */
function tokenFilter(core: MergeCore): TokenFilter | undefined {
  const strings: unknown = Reflect.get(core, 'bytePairStringRankEncoder')
  const bytes: unknown = Reflect.get(core, 'bytePairNonUtfSortedEncoder')
  if (!(strings instanceof Map) || !Array.isArray(bytes)) return undefined
  const filter = new TokenFilter()
  let scratch = new Uint8Array(256)
  for (const key of strings.keys()) {
    if (typeof key !== 'string') return undefined
    if (scratch.length < key.length * 3) scratch = new Uint8Array(key.length * 3)
    filter.add(scratch, utf8Into(key, scratch))
  }
  for (const entry of bytes) {
    const key: unknown = Array.isArray(entry) ? entry[0] : undefined
    if (!(key instanceof Uint8Array)) return undefined
    filter.add(key, key.length)
  }
  return filter
}
