/**
 * @module Whole characters as the first parts of o200k's byte-pair merge, where that provably gives
 * the merge from bytes: a Han, kana, Hangul, Thai or Cyrillic character is then one part instead of
 * two or three, and the merges inside it (a third to a half of a pre-token's merges) are not made.
 *
 * Why it is the same merge. Start from bytes; call a character "whole-able" in a pre-token when
 * (a) its bytes merged on their own end as one token T, the highest rank merged on the way being R;
 * (b) no token covers part of it together with bytes outside it, at its place in this pre-token; and
 * (c) every token that holds it and more ranks after R.
 * By (b), until the character is one part its parts pair with nothing outside it, so it is merged
 * exactly as on its own, into T. Every pair the whole-character start has and the byte start does not
 * yet have joins such a character to something else: by (c) it ranks after R, so after every merge
 * still pending inside that character, and so after the merge the byte start makes next. Both starts
 * therefore make the same merges outside characters, in the same order, and end with the same parts.
 * (a) and (c) are properties of the vocabulary, checked once per character; (b) is checked at each
 * seam between two characters against every token that does not begin and end on character seams
 * (about 750 of o200k's byte-string tokens), conservatively: any doubt leaves both characters as bytes.
 */

/** A code unit not yet examined. */
const UNKNOWN = -2
/** A character that starts as its bytes. */
const BYTES = -1
/** Bits of the seam filter (2^16: 8 KiB); a false positive only leaves two characters as bytes. */
const SEAM_BITS = 16
/**
 * Bits of the filter of adjacent characters in tokens (2^20: 128 KiB, two bits for each of o200k's
 * ~25,000 pairs); a false positive only keeps a pre-token from being cut there.
 */
const PAIR_BITS = 20

/** A token's rank by its bytes (the merge's own look-up). */
type Lookup = (key: Uint8Array) => number | undefined

/** Which characters of a pre-token may enter the merge whole, and as which token. */
export interface CharStarts {
  /**
   * The token of the character whose UTF-16 unit is `unit` (not a surrogate, at least U+0080) and
   * whose UTF-8 bytes are `bytes[at, at + size)`, if it satisfies (a) and (c); else −1.
   */
  token(unit: number, bytes: Uint8Array, at: number, size: number): number
  /**
   * Which of the two characters at the seam before `bytes[from]` (the byte before it being `before`;
   * the character after it `bytes[from, to)`) some token covers in part together with something
   * outside it: {@link BEFORE_SEAM}, {@link AFTER_SEAM}, both or neither. Those start as bytes.
   */
  crossed(before: number, bytes: Uint8Array, from: number, to: number): number
  /**
   * Whether some token holds the character of code point `a` followed by that of `b` (false: no
   * token does; true may also be a filter's false positive).
   */
  joined(a: number, b: number): boolean
}

/** A token covers part of the character before the seam and something after it. */
export const BEFORE_SEAM = 1
/** A token covers part of the character after the seam and something before it. */
export const AFTER_SEAM = 2

/** UTF-8 length announced by a first byte (1 for ASCII and for bytes that cannot start one). */
function sizeOf(first: number): number {
  if (first >= 0xf0) return 4
  if (first >= 0xe0) return 3
  if (first >= 0xc0) return 2
  return 1
}

const isContinuation = (byte: number) => (byte & 0xc0) === 0x80

/** The seam key's low part: the first `k` bytes after the seam and `k` itself. */
function seamLow(bytes: Uint8Array, from: number, k: number): number {
  let low = 0
  for (let i = 0; i < k; i++) low = (low << 8) | (bytes[from + i] as number)
  return low | (k << 24)
}

function seamBit(before: number, low: number): number {
  let h = Math.imul(low ^ Math.imul(before + 1, 0x9e3779b1), 0x85ebca6b)
  h ^= h >>> 15
  return Math.imul(h, 0xc2b2ae35) >>> (32 - SEAM_BITS)
}

class CharTable implements CharStarts {
  readonly #token = new Int32Array(0x10000).fill(UNKNOWN)
  /** Per BMP unit: the lowest rank of a token that holds the character and more. */
  readonly #held = new Int32Array(0x10000).fill(0x7fffffff)
  readonly #lookup: Lookup
  readonly #seamBits = new Uint32Array(1 << (SEAM_BITS - 5))
  /** Exact seam keys (`before × 2^26 + low`) and the sides they cross, asked when the filter's bit is set. */
  readonly #seams = new Map<number, number>()
  readonly #pairBits = new Uint32Array(1 << (PAIR_BITS - 5))

  constructor(lookup: Lookup) {
    this.#lookup = lookup
  }

  /** A token of `rank` holds the character of BMP unit `unit` and more. */
  hold(unit: number, rank: number): void {
    if (rank < (this.#held[unit] as number)) this.#held[unit] = rank
  }

  /**
   * Records the token `key` crossing the seam before its byte `from`, `k` bytes of it after the
   * seam, covering in part the character on the `sides` given.
   */
  seam(key: Uint8Array, from: number, k: number, sides: number): void {
    const before = key[from - 1] as number
    const low = seamLow(key, from, k)
    const bit = seamBit(before, low)
    this.#seamBits[bit >>> 5] = (this.#seamBits[bit >>> 5] as number) | (1 << (bit & 31))
    const exact = before * 0x4000000 + low
    this.#seams.set(exact, (this.#seams.get(exact) ?? 0) | sides)
  }

  /** A token holds the character of code point `a` followed by that of `b`. */
  pair(a: number, b: number): void {
    const h = pairHash(a, b)
    const x = h >>> (32 - PAIR_BITS)
    const y = (h >>> 6) & ((1 << PAIR_BITS) - 1)
    this.#pairBits[x >>> 5] = (this.#pairBits[x >>> 5] as number) | (1 << (x & 31))
    this.#pairBits[y >>> 5] = (this.#pairBits[y >>> 5] as number) | (1 << (y & 31))
  }

  joined(a: number, b: number): boolean {
    const h = pairHash(a, b)
    const x = h >>> (32 - PAIR_BITS)
    const y = (h >>> 6) & ((1 << PAIR_BITS) - 1)
    return (
      (((this.#pairBits[x >>> 5] as number) >>> (x & 31)) & 1) === 1 &&
      (((this.#pairBits[y >>> 5] as number) >>> (y & 31)) & 1) === 1
    )
  }

  token(unit: number, bytes: Uint8Array, at: number, size: number): number {
    const known = this.#token[unit] as number
    if (known !== UNKNOWN) return known
    const found = this.#alone(bytes, at, size)
    this.#token[unit] = found
    return found
  }

  /** (a) and (c) for the character at `bytes[at, at + size)`: its token, or BYTES. */
  #alone(bytes: Uint8Array, at: number, size: number): number {
    const unit = unitOf(bytes, at, size)
    const whole = this.#lookup(bytes.slice(at, at + size))
    if (whole === undefined) return BYTES
    let highest = whole
    if (size === 3) {
      // Two merges: the lower of the two byte pairs first, then the pair it leaves, which is `whole`.
      const first = this.#lookup(bytes.slice(at, at + 2))
      const second = this.#lookup(bytes.slice(at + 1, at + 3))
      const step = Math.min(first ?? Number.POSITIVE_INFINITY, second ?? Number.POSITIVE_INFINITY)
      if (step === Number.POSITIVE_INFINITY) return BYTES
      highest = Math.max(highest, step)
    }
    return highest < (this.#held[unit] as number) ? whole : BYTES
  }

  crossed(before: number, bytes: Uint8Array, from: number, to: number): number {
    const last = Math.min(to - from, 3)
    let sides = 0
    for (let k = 1; k <= last; k++) {
      const low = seamLow(bytes, from, k)
      const bit = seamBit(before, low)
      if ((((this.#seamBits[bit >>> 5] as number) >>> (bit & 31)) & 1) === 0) continue
      sides |= this.#seams.get(before * 0x4000000 + low) ?? 0
    }
    return sides
  }
}

function pairHash(a: number, b: number): number {
  let h = Math.imul(a ^ Math.imul(b + 0x3c6ef372, 0x9e3779b1), 0x85ebca6b)
  h ^= h >>> 13
  return Math.imul(h, 0xc2b2ae35) >>> 0
}

/** The BMP code point of the 2- or 3-byte character at `bytes[at]`. */
function unitOf(bytes: Uint8Array, at: number, size: number): number {
  const a = bytes[at] as number
  const b = (bytes[at + 1] as number) & 0x3f
  if (size === 2) return ((a & 0x1f) << 6) | b
  return ((a & 0x0f) << 12) | (b << 6) | ((bytes[at + 2] as number) & 0x3f)
}

/** The code point of the `size`-byte character at `bytes[at]`. */
function pointOf(bytes: Uint8Array, at: number, size: number): number {
  if (size === 1) return bytes[at] as number
  if (size < 4) return unitOf(bytes, at, size)
  return (
    (((bytes[at] as number) & 0x07) << 18) |
    (((bytes[at + 1] as number) & 0x3f) << 12) |
    (((bytes[at + 2] as number) & 0x3f) << 6) |
    ((bytes[at + 3] as number) & 0x3f)
  )
}

/**
 * What a byte-string token (one that is not UTF-8 on its own) crosses: the seam after the part of a
 * character it starts with, and the seam before the part of one it ends with, each with the byte
 * before it and up to three bytes after it (a fourth is not compared, and the character after the
 * seam counts as covered in part: more seams match, none fewer). The whole characters it holds are
 * held by its rank.
 */
function addByteToken(table: CharTable, key: Uint8Array, rank: number): void {
  const n = key.length
  let lead = 0
  while (lead < n && isContinuation(key[lead] as number)) lead++
  if (lead > 0 && lead < n) {
    const size = sizeOf(key[lead] as number)
    const k = Math.min(size, n - lead, 3)
    table.seam(key, lead, k, k < size ? BEFORE_SEAM | AFTER_SEAM : BEFORE_SEAM)
  }
  let last = n - 1
  while (last >= 0 && isContinuation(key[last] as number)) last--
  if (last > 0 && last + sizeOf(key[last] as number) > n) {
    // What precedes the seam is a whole character unless the token starts right there.
    const sides = last === lead ? BEFORE_SEAM | AFTER_SEAM : AFTER_SEAM
    table.seam(key, last, Math.min(n - last, 3), sides)
  }
  // Whole characters inside: every first byte followed by all its continuation bytes.
  let previous = -1
  let previousEnd = -1
  for (let i = lead; i < n; ) {
    const size = sizeOf(key[i] as number)
    let whole = !isContinuation(key[i] as number) && (key[i] as number) < 0xf8 && i + size <= n
    for (let j = 1; whole && j < size; j++) whole = isContinuation(key[i + j] as number)
    if (!whole) {
      i++
      continue
    }
    const point = pointOf(key, i, size)
    if (size > 1 && size < 4) table.hold(point, rank)
    if (previousEnd === i) table.pair(previous, point)
    previous = point
    i += size
    previousEnd = i
  }
}

/**
 * The whole-character start for `core`'s vocabulary, from the tables gpt-tokenizer 4 keeps (string
 * tokens by string, the rest as sorted byte strings); undefined when it keeps them elsewhere, and
 * every character then starts as its bytes. Reading the vocabulary costs a few milliseconds, once.
 *
 * @example
 * const starts = charStarts(core, lookup)
 * starts?.token(0x4eba, utf8('人'), 0, 3) // 9430 (人's token), or −1 if it must start as bytes
 */
export function charStarts(core: object, lookup: Lookup): CharStarts | undefined {
  const strings: unknown = Reflect.get(core, 'bytePairStringRankEncoder')
  const bytes: unknown = Reflect.get(core, 'bytePairNonUtfSortedEncoder')
  if (!(strings instanceof Map) || !Array.isArray(bytes)) return undefined
  const table = new CharTable(lookup)
  for (const [key, rank] of strings) {
    if (typeof key !== 'string' || typeof rank !== 'number') return undefined
    // A one-unit token is a character alone; a surrogate pair holds no BMP character.
    if (key.length < 2) continue
    for (let i = 0; i < key.length; i++) table.hold(key.charCodeAt(i), rank)
    let previous = key.codePointAt(0) as number
    for (let i = previous > 0xffff ? 2 : 1; i < key.length; ) {
      const point = key.codePointAt(i) as number
      table.pair(previous, point)
      previous = point
      i += point > 0xffff ? 2 : 1
    }
  }
  for (const entry of bytes) {
    const key: unknown = Array.isArray(entry) ? entry[0] : undefined
    const rank: unknown = Array.isArray(entry) ? entry[1] : undefined
    if (!(key instanceof Uint8Array) || typeof rank !== 'number') return undefined
    addByteToken(table, key, rank)
  }
  return table
}
