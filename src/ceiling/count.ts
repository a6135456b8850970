/**
 * @module o200k_base token counting: loaded lazily, special-token text counted as plain text, and an
 * early exit whose cost is bounded by the limit, not by the prompt.
 */
import { utf8Length } from './utf8'

/**
 * Pre-tokens longer than this (in UTF-16 code units) are charged their UTF-8 byte length instead of
 * being merged. gpt-tokenizer's merge loop is quadratic in a pre-token's length (measured on Node 22:
 * 100,000 spaces take 4 s to count; 1,000,000 would take minutes), and a single run of spaces,
 * dashes or letters is one pre-token however long it is. Without this cap an attacker's 1 MB of
 * spaces would pin the guard's CPU regardless of any limit. Charging bytes is a sound upper bound
 * (every token is at least one byte) and real text never has pre-tokens this long (words, ≤ 3 digits,
 * punctuation and whitespace runs); a prompt that does is over-counted, never under-counted, and the
 * count says it is not exact.
 */
export const LONG_PIECE_UNITS = 256

/** What a count did: the tokens, whether it stayed within the limit, and how much text it read. */
export interface CountResult {
  /** Tokens counted; when `within` is false, counting stopped as soon as this passed the limit. */
  tokens: number
  /** Whether `tokens` ≤ the limit (always true without a limit). */
  within: boolean
  /** False when a pathological pre-token was charged its byte length (an upper bound) instead. */
  exact: boolean
  /** UTF-16 code units of text tokenized before the count returned (the work done). */
  scannedUnits: number
}

interface PieceCounter {
  /** The o200k pre-tokenizer regex (global, Unicode). */
  split: RegExp
  /** Tokens of one pre-token. */
  countPiece: (piece: string) => number
}

/** The two methods of gpt-tokenizer 4's BPE core the library's own counting loop uses. */
interface BpeCore {
  getBpeRankFromString: (piece: string) => number | undefined
  bytePairEncode: (piece: string) => number[]
}

function isBpeCore(value: unknown): value is BpeCore {
  if (typeof value !== 'object' || value === null) return false
  const core = value as Record<string, unknown>
  return (
    typeof core.getBpeRankFromString === 'function' && typeof core.bytePairEncode === 'function'
  )
}

// An empty disallow list: `<|endoftext|>` and friends in user text are counted as the plain text
// they are (several tokens each), never rejected and never turned into control tokens. Counting
// them as text also errs high: as a special token the string would be a single token.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() }

let loading: Promise<PieceCounter> | undefined
let loaded = false
let requests = 0

async function load(): Promise<PieceCounter> {
  // Importing o200k_base builds a 200k-entry vocabulary (~0.4–0.8 s). A Worker has 1 s to start,
  // so it is imported only when a prompt is too long for the byte bound to settle the ceiling.
  const [encoding, params] = await Promise.all([
    import('gpt-tokenizer/encoding/o200k_base'),
    import('gpt-tokenizer/encodingParams/constants'),
  ])
  const core: unknown = Reflect.get(encoding.default, 'bytePairEncodingCoreProcessor')
  const countPiece = isBpeCore(core)
    ? // The library's own countNative loop, minus special-token handling: exact by construction.
      (piece: string) =>
        core.getBpeRankFromString(piece) === undefined ? core.bytePairEncode(piece).length : 1
    : // A future gpt-tokenizer without that core: the public API, per piece (slower, same count).
      (piece: string) => encoding.countTokens(piece, PLAIN_TEXT)
  loaded = true
  return { split: params.O200K_TOKEN_SPLIT_REGEX, countPiece }
}

/**
 * The tokenizer, loaded once per isolate on first use. A failed load is not cached, so a later
 * request retries; the failing request rejects and the guard fails closed (`guard_unavailable`).
 *
 * @example
 * await loadTokenizer() // warm it up off the request path, e.g. in ctx.waitUntil
 */
export function loadTokenizer(): Promise<unknown> {
  return counter()
}

function counter(): Promise<PieceCounter> {
  requests++
  loading ??= load().catch((error: unknown) => {
    loading = undefined
    throw error
  })
  return loading
}

/**
 * Whether the tokenizer has been loaded in this isolate (observable proof that the byte-bound path
 * never pays for it).
 *
 * @example
 * await decideCeiling(smallPieces, 600_000, 0.1)
 * tokenizerLoaded() // false
 */
export function tokenizerLoaded(): boolean {
  return loaded
}

/**
 * How many times anything asked for the tokenizer in this isolate (a counter tests read before and
 * after a call, whatever other code in the isolate has done).
 *
 * @example
 * const before = tokenizerRequests(); await decideCeiling(p, c, d); tokenizerRequests() === before
 */
export function tokenizerRequests(): number {
  return requests
}

/**
 * Counts o200k tokens of `texts`, stopping as soon as the count passes `limit`. Each pre-token costs
 * at most O(LONG_PIECE_UNITS²) and adds at least one token, so an over-limit answer is reached after
 * at most `limit + 1` pre-tokens — at most about `limit` tokens of text — whatever the prompt's length.
 * (gpt-tokenizer's `isWithinTokenLimit` exits early too, but merges any pre-token in full: see
 * {@link LONG_PIECE_UNITS}.)
 *
 * @example
 * const r = await countWithinDetailed(['user', longText], 600_000)
 * if (!r.within) reject(`more than ${r.tokens - 1} tokens`)
 */
export async function countWithinDetailed(
  texts: readonly string[],
  limit = Number.POSITIVE_INFINITY,
): Promise<CountResult> {
  const { split, countPiece } = await counter()
  let tokens = 0
  let exact = true
  let scannedUnits = 0
  for (const text of texts) {
    for (const match of text.matchAll(split)) {
      const piece = match[0]
      scannedUnits += piece.length
      if (piece.length > LONG_PIECE_UNITS) {
        tokens += utf8Length(piece)
        exact = false
      } else tokens += countPiece(piece)
      if (tokens > limit) return { tokens, within: false, exact: false, scannedUnits }
    }
  }
  return { tokens, within: true, exact, scannedUnits }
}

/**
 * o200k tokens of all `texts` (exact for any real text; pathological pre-tokens are charged their
 * byte length, an upper bound). Loads the tokenizer on first use.
 *
 * @example
 * await countTokens(['user', 'Hello, world']) // 4
 */
export async function countTokens(texts: readonly string[]): Promise<number> {
  return (await countWithinDetailed(texts)).tokens
}

/**
 * The token count of `texts` if it is at most `limit`, else `false` — decided after tokenizing at
 * most about `limit` tokens of text, however long the input.
 *
 * @example
 * await countWithin(['a long prompt …'], 1_000) // 5, or false past 1,000 tokens
 */
export async function countWithin(
  texts: readonly string[],
  limit: number,
): Promise<number | false> {
  const result = await countWithinDetailed(texts, limit)
  return result.within ? result.tokens : false
}
