/**
 * @module o200k's byte-pair merge with the rank of each adjacent pair looked up by the two parts'
 * ranks in a small table, instead of decoding the pair's bytes: the same merges, in the same order.
 */

/** Slots of the pair table (a power of two): 3 Int32Arrays of this many, 1.5 MiB. */
const PAIR_SLOTS = 1 << 17
const PAIR_BITS = 17
/** The table is emptied when it holds this many pairs, so probes stay short. */
const PAIR_FILL = PAIR_SLOTS >>> 1
const EMPTY = -2
const NO_RANK = -1

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
 * if (isMergeCore(core)) core.bytePairMerge = pairMerge(core)
 */
export function isMergeCore(value: unknown): value is MergeCore {
  if (typeof value !== 'object' || value === null) return false
  const core = value as Record<string, unknown>
  return typeof core.bytePairMerge === 'function' && typeof core.getBpeRankFromBytes === 'function'
}

/**
 * A merge that gives what `core.bytePairMerge` gives, faster on text whose pre-tokens are not single
 * tokens (Han, kana, Thai, Cyrillic words). The library finds the rank of each candidate pair by
 * validating and decoding its bytes to a string (or a binary search, for bytes that are not UTF-8:
 * the first pairs of every multi-byte character), once per candidate and again after every merge
 * next to it. A pair's rank depends only on the ranks of its two parts (a rank is one byte string),
 * so it is remembered by those two numbers: the library's lookup runs once per distinct pair. The
 * merge order is the library's: the lowest rank first, the leftmost of equal ones.
 *
 * @example
 * const merge = pairMerge(core)
 * merge(new TextEncoder().encode('人人生而自由')) // the ids core.bytePairMerge gives
 */
export function pairMerge(core: MergeCore): (piece: Uint8Array) => number[] {
  const lookup = core.getBpeRankFromBytes.bind(core)
  const byteRank = new Int32Array(256)
  for (let b = 0; b < 256; b++) byteRank[b] = lookup(Uint8Array.of(b)) ?? NO_RANK
  const left = new Int32Array(PAIR_SLOTS).fill(EMPTY)
  const right = new Int32Array(PAIR_SLOTS)
  const merged = new Int32Array(PAIR_SLOTS)
  let filled = 0

  /** The rank of parts `a` and `b` joined, the bytes `piece[from, to)` (NO_RANK: not a token). */
  const pairRank = (a: number, b: number, piece: Uint8Array, from: number, to: number) => {
    let slot = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> (32 - PAIR_BITS)
    for (;;) {
      const at = left[slot] ?? EMPTY
      if (at === EMPTY) break
      if (at === a && right[slot] === b) return merged[slot] ?? NO_RANK
      slot = (slot + 1) & (PAIR_SLOTS - 1)
    }
    const rank = lookup(piece.subarray(from, to)) ?? NO_RANK
    if (filled >= PAIR_FILL) {
      left.fill(EMPTY)
      filled = 0
      slot = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> (32 - PAIR_BITS)
    }
    left[slot] = a
    right[slot] = b
    merged[slot] = rank
    filled++
    return rank
  }

  return (piece) => {
    const n = piece.length
    // Part i is piece[starts[i], starts[i + 1]) with rank ranks[i]; pairs[i] is the rank of parts
    // i and i + 1 joined (Infinity when that is not a token). Parts are removed by splicing, as the
    // library does: pre-tokens are at most 32 UTF-16 units (count.ts), so at most 128 bytes.
    const starts: number[] = []
    const ranks: number[] = []
    for (let i = 0; i < n; i++) {
      starts.push(i)
      ranks.push(byteRank[piece[i] ?? 0] ?? NO_RANK)
    }
    starts.push(n)
    const pairs: number[] = []
    const rankOf = (i: number): number => {
      if (i + 1 >= ranks.length) return Number.POSITIVE_INFINITY
      const r = pairRank(
        ranks[i] ?? NO_RANK,
        ranks[i + 1] ?? NO_RANK,
        piece,
        starts[i] ?? 0,
        starts[i + 2] ?? n,
      )
      return r === NO_RANK ? Number.POSITIVE_INFINITY : r
    }
    for (let i = 0; i < n - 1; i++) pairs.push(rankOf(i))
    while (ranks.length > 1) {
      let lowest = Number.POSITIVE_INFINITY
      let at = -1
      for (let i = 0; i < pairs.length; i++) {
        const r = pairs[i] ?? Number.POSITIVE_INFINITY
        if (r < lowest) {
          lowest = r
          at = i
        }
      }
      if (at === -1) break
      ranks[at] = lowest
      ranks.splice(at + 1, 1)
      starts.splice(at + 1, 1)
      pairs.splice(at, 1)
      if (at < pairs.length) pairs[at] = rankOf(at)
      if (at > 0) pairs[at - 1] = rankOf(at - 1)
    }
    return ranks
  }
}
