/**
 * @module o200k_base token counting: loaded lazily, special-token text counted as plain text, long
 * pre-tokens in chunks. The ceiling's early exit is in its family scan (estimate.ts), over the same
 * pre-tokens and chunks.
 */
import { isMergeCore, type MergeCore, pieceMerger } from './bpe-merge'
import { MergeMemo } from './merge-memo'

/**
 * Pre-tokens longer than this (in UTF-16 code units) are cut into chunks of at most this many units,
 * each merged on its own: gpt-tokenizer's merge loop is superlinear in a pre-token's length, and one
 * run of spaces, dashes or letters is one pre-token however long it is. Chunks rather than the byte
 * bound, because real text has long pre-tokens (Thai, Lao and Khmer are written without spaces) and
 * their bytes would cost those scripts most of their usable context; chunking adds a few percent at
 * most. The count of a chunked pre-token is not o200k's exact count (usually a few tokens more), so
 * it says so (docs/how-it-decides.md, "The ceiling holds in every language").
 */
export const LONG_PIECE_UNITS = 32

/**
 * The end of the chunk of `piece` that starts at `start`: at most {@link LONG_PIECE_UNITS} code
 * units, never splitting a surrogate pair (a split pair would be two U+FFFD, a different text).
 *
 * @example
 * for (let s = 0, e; s < piece.length; s = e) { e = chunkEnd(piece, s); count(piece.slice(s, e)) }
 */
export function chunkEnd(piece: string, start: number): number {
  let end = start + LONG_PIECE_UNITS
  if (end >= piece.length) return piece.length
  const unit = piece.charCodeAt(end - 1)
  if (unit >= 0xd800 && unit <= 0xdbff) end--
  return end
}

/** The o200k pre-tokenizer and BPE, one pre-token at a time (what the ceiling's loops drive). */
export interface PieceTokenizer {
  /** The o200k pre-tokenizer regex (global, Unicode). */
  split: RegExp
  /** Tokens of one pre-token. */
  countPiece: (piece: string) => number
  /** The token id of a pre-token that is a single token, else undefined (no allocation). */
  singleToken: (piece: string) => number | undefined
  /**
   * The token ids of one pre-token. The array may be shared with later calls (a scratch buffer or a
   * remembered result): read it before the next call, never change it.
   */
  encodePiece: (piece: string) => ArrayLike<number> & Iterable<number>
}

/** The method of gpt-tokenizer 4's BPE core that finds a pre-token that is one token. */
interface RankCore {
  getBpeRankFromString: (piece: string) => number | undefined
}

function isRankCore(value: unknown): value is RankCore {
  if (typeof value !== 'object' || value === null) return false
  return typeof (value as Record<string, unknown>).getBpeRankFromString === 'function'
}

// An empty disallow list: `<|endoftext|>` and friends in user text are counted as the plain text
// they are (several tokens each), never rejected and never turned into control tokens. Counting
// them as text also errs high: as a special token the string would be a single token.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() }

let loading: Promise<PieceTokenizer> | undefined

async function load(): Promise<PieceTokenizer> {
  // Importing o200k_base builds a 200k-entry vocabulary (~0.4–0.8 s). A Worker has 1 s to start,
  // so it is imported only when a prompt is too long for the byte bound to settle the ceiling.
  const [encoding, params] = await Promise.all([
    import('gpt-tokenizer/encoding/o200k_base'),
    import('gpt-tokenizer/encodingParams/constants'),
  ])
  const core: unknown = Reflect.get(encoding.default, 'bytePairEncodingCoreProcessor')
  // gpt-tokenizer keeps up to 100,000 merged pieces by default: tens of MB, in an isolate of 128 MB.
  // The ceiling's merge below has its own memo; the library's cache serves other code of the isolate
  // that encodes with it (the probe's prompt builder), kept as small.
  encoding.default.setMergeCacheSize(10_000)
  if (isRankCore(core) && isMergeCore(core))
    return fastTokenizer(params.O200K_TOKEN_SPLIT_REGEX, core)
  // A future gpt-tokenizer without that core: the public API, per piece (slower, same tokens).
  return {
    split: params.O200K_TOKEN_SPLIT_REGEX,
    countPiece: (piece) => encoding.countTokens(piece, PLAIN_TEXT),
    singleToken: () => undefined,
    encodePiece: (piece) => encoding.encode(piece, PLAIN_TEXT),
  }
}

/**
 * The library's own countNative loop, minus special-token handling, over the ceiling's merge
 * (bpe-merge.ts: the library's ids, several times faster on Han, kana, Thai and Cyrillic, which the
 * library merges slowly). Ranks are o200k's token ids.
 */
function fastTokenizer(split: RegExp, core: RankCore & MergeCore): PieceTokenizer {
  const memo = new MergeMemo(pieceMerger(core))
  const merge = (piece: string) => memo.merge(piece)
  return {
    split,
    countPiece: (piece) =>
      core.getBpeRankFromString(piece) === undefined ? merge(piece).length : 1,
    singleToken: (piece) => core.getBpeRankFromString(piece),
    encodePiece: (piece) => {
      const rank = core.getBpeRankFromString(piece)
      return rank === undefined ? merge(piece) : [rank]
    },
  }
}

/**
 * The o200k pre-tokenizer and per-piece BPE, loaded once per isolate on first use. A failed load is
 * not cached, so a later request retries; the failing request rejects and the guard fails closed
 * (`guard_unavailable`). Awaiting it off the request path (e.g. in `ctx.waitUntil`) warms it up.
 *
 * @example
 * const { split, encodePiece } = await pieceTokenizer()
 * for (const [piece] of text.matchAll(split)) ids.push(...encodePiece(piece))
 */
export function pieceTokenizer(): Promise<PieceTokenizer> {
  loading ??= load().catch((error: unknown) => {
    loading = undefined
    throw error
  })
  return loading
}

/**
 * o200k tokens of all `texts` (exact unless a pre-token over {@link LONG_PIECE_UNITS} was counted in
 * chunks: then usually a few tokens more). Loads the tokenizer on first use.
 *
 * @example
 * await countTokens(['user', 'Hello, world']) // 4
 */
export async function countTokens(texts: readonly string[]): Promise<number> {
  const { split, countPiece } = await pieceTokenizer()
  let tokens = 0
  for (const text of texts) {
    for (const match of text.matchAll(split)) {
      const piece = match[0]
      if (piece.length <= LONG_PIECE_UNITS) tokens += countPiece(piece)
      else {
        for (let start = 0, end = 0; start < piece.length; start = end) {
          end = chunkEnd(piece, start)
          tokens += countPiece(piece.slice(start, end))
        }
      }
    }
  }
  return tokens
}
