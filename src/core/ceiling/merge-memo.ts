/**
 * @module The ceiling's merges remembered: a pre-token merged in the pieces no token crosses
 * (bpe-merge.ts, `cuts`), each piece merged once per generation of the memo.
 */
import type { PieceMerger } from './bpe-merge'

/**
 * Merged pieces remembered per generation (two are kept: the newest and the one before). Pieces are
 * at most 32 units, so this is at most a few MB; it pays for text that repeats its words (code,
 * tables, a pasted document twice) and for the syllables and characters prose repeats.
 */
const MERGE_MEMO_ENTRIES = 10_000

/**
 * A pre-token's ids from its pieces: the same ids as its whole merge, since no token crosses a cut,
 * and the pieces (a Thai syllable, a Han character) repeat where the pre-tokens of prose do not. The
 * pieces are remembered, not the pre-token they came from, unless it is one piece.
 *
 * @example
 * const memo = new MergeMemo(pieceMerger(core))
 * memo.merge('人人生而自由') // o200k's ids of the pre-token
 */
export class MergeMemo {
  readonly #merger: PieceMerger
  // Two generations rather than dropping the oldest entry one at a time: a Map whose first entries
  // are deleted one by one skips every deleted slot to find the next oldest, which on prose that
  // seldom repeats (Han, Thai) cost more than the merges themselves.
  #memo = new Map<string, Int32Array>()
  #older = new Map<string, Int32Array>()
  #scratch = new Int32Array(128)
  #cuts = new Int32Array(128)
  #single = new Int32Array(128)
  #joined = new Int32Array(128)

  constructor(merger: PieceMerger) {
    this.#merger = merger
  }

  /** The ids of `piece` (a pre-token or a chunk of one). Read them before the next call. */
  merge(piece: string): Int32Array {
    const known = this.#known(piece)
    if (known) return known
    if (this.#cuts.length < piece.length) {
      this.#cuts = new Int32Array(piece.length * 2)
      this.#single = new Int32Array(piece.length * 2)
    }
    const cuts = this.#cuts
    const single = this.#single
    const count = this.#merger.cuts(piece, cuts, single)
    if (count === 1) return this.#whole(piece)
    if (this.#joined.length < piece.length * 3) this.#joined = new Int32Array(piece.length * 3)
    const joined = this.#joined
    let total = 0
    for (let c = 0, from = 0; c < count; c++) {
      const to = cuts[c] as number
      const token = single[c] as number
      if (token >= 0) joined[total++] = token
      else {
        const part = piece.slice(from, to)
        const ids = this.#known(part) ?? this.#whole(part)
        joined.set(ids, total)
        total += ids.length
      }
      from = to
    }
    return joined.slice(0, total)
  }

  #known(piece: string): Int32Array | undefined {
    return this.#memo.get(piece) ?? this.#older.get(piece)
  }

  /** Merges `piece` whole and remembers it. */
  #whole(piece: string): Int32Array {
    if (this.#scratch.length < piece.length * 3) this.#scratch = new Int32Array(piece.length * 3)
    const ids = this.#scratch.slice(0, this.#merger.merge(piece, this.#scratch))
    if (this.#memo.size >= MERGE_MEMO_ENTRIES) {
      this.#older = this.#memo
      this.#memo = new Map()
    }
    this.#memo.set(piece, ids)
    return ids
  }
}
