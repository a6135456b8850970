/**
 * @module o200k's byte-pair merge of one pre-token, straight from its string: UTF-8 written into a
 * scratch buffer, parts in typed arrays, and the rank of each adjacent pair looked up by the two
 * parts' ranks in a small table instead of by decoding the pair's bytes — the same merges, in the
 * same order, as gpt-tokenizer's, without allocating per pre-token.
 */

/** Slots of the pair table (a power of two): 3 Int32Arrays of this many, 1.5 MiB. */
const PAIR_SLOTS = 1 << 17
const PAIR_BITS = 17
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
interface PieceMerger {
  /**
   * Writes the ids of `piece` (a pre-token, or a chunk of one) into `out` from index 0 and returns
   * how many; `out` must hold the piece's UTF-8 length. A lone surrogate is U+FFFD, as TextEncoder
   * makes it.
   */
  merge(piece: string, out: Int32Array): number
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

  constructor(lookup: (key: Uint8Array) => number | undefined) {
    this.#lookup = lookup
  }

  /** The bytes that {@link rank}'s positions index: set once per merge, so a rank passes no array. */
  source: Uint8Array = new Uint8Array(0)

  /** The rank of parts `a` and `b` joined, the bytes `[from, to)` of `source` (NEVER: no token). */
  rank(a: number, b: number, from: number, to: number): number {
    const left = this.#left
    let slot = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> (32 - PAIR_BITS)
    for (;;) {
      const at = left[slot] as number
      if (at === EMPTY) break
      if (at === a && this.#right[slot] === b) return this.#merged[slot] as number
      slot = (slot + 1) & (PAIR_SLOTS - 1)
    }
    const found = this.#lookup(this.source.subarray(from, to))
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

  constructor(core: MergeCore) {
    const lookup = core.getBpeRankFromBytes.bind(core)
    for (let b = 0; b < 256; b++) this.#byteRank[b] = lookup(Uint8Array.of(b)) ?? NO_RANK
    this.#pairs = new PairRanks(lookup)
  }

  merge(piece: string, out: Int32Array): number {
    this.#grow(piece.length * 3)
    return this.#run(this.#bytes, utf8Into(piece, this.#bytes), out)
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
  }

  /** Merges `n` bytes of `source` into `out`: the lowest pair first, the leftmost of equal ones. */
  #run(source: Uint8Array, n: number, out: Int32Array): number {
    if (n === 0) return 0
    const start = this.#start
    const rank = this.#rank
    const pair = this.#pair
    const next = this.#next
    const prev = this.#prev
    const pairs = this.#pairs
    pairs.source = source
    for (let i = 0; i < n; i++) {
      start[i] = i
      rank[i] = this.#byteRank[source[i] as number] as number
      next[i] = i + 1
      prev[i] = i - 1
    }
    start[n] = n
    for (let i = 0; i < n - 1; i++) {
      pair[i] = pairs.rank(rank[i] as number, rank[i + 1] as number, i, i + 2)
    }
    pair[n - 1] = NEVER
    for (let parts = n; parts > 1; parts--) {
      let lowest = NEVER
      let at = -1
      for (let i = 0; i !== n; i = next[i] as number) {
        if ((pair[i] as number) < lowest) {
          lowest = pair[i] as number
          at = i
        }
      }
      if (at === -1) break
      // Part `at` absorbs the part after it; the pairs on either side are ranked again.
      const after = next[next[at] as number] as number
      rank[at] = lowest
      next[at] = after
      if (after !== n) prev[after] = at
      const from = start[at] as number
      pair[at] =
        after === n
          ? NEVER
          : pairs.rank(lowest, rank[after] as number, from, start[next[after] as number] as number)
      const before = prev[at] as number
      if (before >= 0) {
        pair[before] = pairs.rank(
          rank[before] as number,
          lowest,
          start[before] as number,
          start[after] as number,
        )
      }
    }
    let count = 0
    for (let i = 0; i !== n; i = next[i] as number) out[count++] = rank[i] as number
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
