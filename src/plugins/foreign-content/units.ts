/**
 * @module Word units of a text for content fingerprints: runs of letters, digits and marks, except that
 * each character of a script written without spaces (Han, kana, Thai, …) is a unit alone. Everything
 * else separates, so a quote survives reformatting, other quotation marks, markdown and JSON escaping.
 * Incremental: a text pushed in pieces cut anywhere gives the units of the whole.
 */

/** One unit: its normalised text and its UTF-16 `[start, end)` offsets in the input ever pushed. */
export interface Unit {
  /** NFKC-normalised and lower-cased, so `Ｆｏｏ`, `FOO` and `foo` are one unit. */
  text: string
  start: number
  end: number
}

const SEPARATOR = 1
const WORD = 2
const MARK = 3
const SINGLE = 4

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u
const COMBINING = /\p{M}/u
/**
 * Scripts written without spaces between words: a word split would need a dictionary, so every
 * character is a unit (a leaked span is then counted in characters, not words: see docs/fingerprints.md).
 */
const SPACELESS =
  /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}\p{sc=Tibetan}\p{sc=Yi}\p{sc=Tai_Tham}\p{sc=Tai_Le}\p{sc=New_Tai_Lue}\p{sc=Javanese}\p{sc=Balinese}]/u

/**
 * What one unit weighs toward a span's length, in sixths of a word: a word of a spaced script is
 * {@link WORD_WEIGHT}; a Han or kana character about half a word (Chinese words average under two
 * characters, Japanese two to three), a character of the other spaceless scripts (Thai, Lao, Khmer,
 * Myanmar…) a third. A stock sentence of 40–55 characters is then 14–27 words' weight, as its words
 * are, not 40–55 units.
 */
export const WORD_WEIGHT = 6
/** The least a unit weighs ({@link unitWeight}). */
export const MIN_UNIT_WEIGHT = 2
const HALF_WORD = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}]/u
/** Weights of the Basic Multilingual Plane from U+0E00 on, computed on first sight (0: not yet). */
const WEIGHTS = new Uint8Array(0x10000)

function computeWeight(codePoint: number): number {
  const char = String.fromCodePoint(codePoint)
  if (!SPACELESS.test(char)) return WORD_WEIGHT
  return HALF_WORD.test(char) ? WORD_WEIGHT / 2 : WORD_WEIGHT / 3
}

/**
 * The weight of a unit that starts with `codePoint` (see {@link WORD_WEIGHT}).
 *
 * @example
 * unitWeight('a'.codePointAt(0)!) // 6
 * unitWeight('人'.codePointAt(0)!) // 3
 */
export function unitWeight(codePoint: number): number {
  // Below Thai, no script is spaceless: the common case, without a table read.
  if (codePoint < 0x0e00) return WORD_WEIGHT
  if (codePoint >= 0x10000) return computeWeight(codePoint)
  let known = WEIGHTS[codePoint]!
  if (known === 0) {
    known = computeWeight(codePoint)
    WEIGHTS[codePoint] = known
  }
  return known
}

/** Classes of the Basic Multilingual Plane, computed on first sight (0: not yet). */
const BMP = new Uint8Array(0x10000)
const ASTRAL = new Map<number, number>()

function computeClass(codePoint: number): number {
  const char = String.fromCodePoint(codePoint)
  if (COMBINING.test(char)) return MARK
  if (!LETTER_OR_DIGIT.test(char)) return SEPARATOR
  return SPACELESS.test(char) ? SINGLE : WORD
}

function classOf(codePoint: number): number {
  if (codePoint < 0x10000) {
    let known = BMP[codePoint]!
    if (known === 0) {
      known = computeClass(codePoint)
      BMP[codePoint] = known
    }
    return known
  }
  let known = ASTRAL.get(codePoint)
  if (known === undefined) {
    known = computeClass(codePoint)
    // Bounded: astral letters are rare, and an unbounded cache would be memory a client controls.
    if (ASTRAL.size < 4096) ASTRAL.set(codePoint, known)
  }
  return known
}

/**
 * Normal forms of short units (every CJK unit, a Thai letter with its vowel and tone marks), bounded.
 * A Thai unit is often three code units: normalised each time, it cost workerd a call into ICU per
 * letter, 15% of a Thai prompt's CPU.
 */
const NORMAL_CHARS = new Map<string, string>()

/** NFKC, then lower case: compared forms of a unit (per unit, so offsets stay the input's). */
function normalise(text: string): string {
  if (text.length > 4) return text.normalize('NFKC').toLowerCase()
  let normal = NORMAL_CHARS.get(text)
  if (normal === undefined) {
    normal = text.normalize('NFKC').toLowerCase()
    if (NORMAL_CHARS.size < 65536) NORMAL_CHARS.set(text, normal)
  }
  return normal
}

/** ASCII letters and digits: the fast path of the scanner. */
const ASCII_WORD = new Uint8Array(128)
for (let c = 0; c < 128; c++) ASCII_WORD[c] = /[A-Za-z0-9]/.test(String.fromCharCode(c)) ? 1 : 0

/** JSON escapes that stand for a separator (`\n`, `\"`, …): the letter is consumed with the backslash. */
const SEPARATOR_ESCAPES = new Set(['n', 't', 'r', '"', '/', 'b', 'f'])

const HEX = /^[0-9a-fA-F]$/

/**
 * A completed unit. `text.slice(from, to)` is the unit: already normalised when `fold` is false; plain
 * ASCII still to lower-case when `fold` is true (so the common case allocates nothing). `start` and
 * `end` are its place in the text read.
 */
export interface UnitSpan {
  text: string
  from: number
  to: number
  fold: boolean
  start: number
  end: number
}

/**
 * Receives each completed unit: one span the reader fills again for every unit, so reading allocates
 * nothing per unit; a sink that keeps a unit copies what it keeps.
 */
export type UnitSink = (unit: Readonly<UnitSpan>) => void

/** Outside a read: one function for every reader, not a fresh closure per read. */
const NO_UNIT_SINK: UnitSink = () => {}

/**
 * Cuts text into units, incrementally. JSON escapes are read the same at any depth of escaping: a run
 * of backslashes followed by `n t r " / b f` is a separator, followed by `u` and four hex digits it is
 * the character encoded (surrogate pairs joined), so tool arguments and JSON-mode content, which arrive
 * as raw JSON text, give the units of the text they encode.
 *
 * @example
 * const reader = new UnitReader()
 * reader.push('Hello, wor', false) // [{ text: 'hello', start: 0, end: 5 }]
 * reader.push('ld', true) // [{ text: 'world', start: 7, end: 12 }]
 */
export class UnitReader {
  /** Characters ever pushed. */
  private offset = 0
  /** 0: no escape; 1: in a run of backslashes; 2: after `\u`, collecting hex digits. */
  private escape = 0
  private escapeStart = 0
  private hex = ''
  /** A high surrogate waiting for its low half, and where it started (−1: none). */
  private high = -1
  private highStart = 0
  /** The unit being built: kind (0: none), offsets, whether it is pure ASCII. */
  private kind = 0
  private start = 0
  private end = 0
  private ascii = true
  /**
   * Its text: while it is one slice of the chunk being read, only `from` (in `chunk`, −1 otherwise);
   * once it spans chunks or holds decoded characters, the string `text`.
   */
  private chunk = ''
  private from = -1
  private text = ''
  private sink: UnitSink = NO_UNIT_SINK
  private readonly unit: UnitSpan = { text: '', from: 0, to: 0, fold: false, start: 0, end: 0 }

  /**
   * Where text that may still become part of a unit starts (an open unit, escape or surrogate), or
   * the length pushed so far when nothing is open.
   *
   * @example
   * reader.push('abc', false); reader.pendingStart() // 0
   */
  pendingStart(): number {
    let at = this.offset
    if (this.kind !== 0) at = Math.min(at, this.start)
    if (this.escape !== 0) at = Math.min(at, this.escapeStart)
    if (this.high >= 0) at = Math.min(at, this.highStart)
    return at
  }

  /** Characters pushed so far. */
  get length(): number {
    return this.offset
  }

  /**
   * Reads `text` and returns the units it completed; `final` closes any open unit.
   *
   * @example
   * new UnitReader().push('Ｆｏｏ bar', true).map((u) => u.text) // ['foo', 'bar']
   */
  push(text: string, final: boolean): Unit[] {
    const out: Unit[] = []
    this.read(text, final, ({ text: source, from, to, fold, start, end }) => {
      const piece = source.slice(from, to)
      out.push({ text: fold ? piece.toLowerCase() : piece, start, end })
    })
    return out
  }

  /**
   * Reads `text`, handing each completed unit to `sink` (no allocation for plain ASCII words).
   *
   * @example
   * reader.read(chunk, false, (text, from, to) => count++)
   */
  read(text: string, final: boolean, sink: UnitSink): void {
    this.sink = sink
    this.chunk = text
    const base = this.offset
    const length = text.length
    let i = 0
    while (i < length) {
      const code = text.charCodeAt(i)
      if (this.escape === 0 && this.high < 0 && code < 128) {
        if (ASCII_WORD[code] === 1) {
          i = this.asciiRun(text, i, base)
          continue
        }
        if (code !== 92) {
          this.finish()
          i++
          continue
        }
      } else if (this.escape === 0 && this.high < 0 && (code < 0xd800 || code > 0xdfff)) {
        this.codePoint(code, base + i, base + i + 1)
        i++
        continue
      }
      this.readChar(text[i]!, code, base + i)
      i++
    }
    this.offset = base + length
    if (final) this.close()
    else if (this.kind !== 0 && this.from >= 0) this.materialize()
    this.sink = NO_UNIT_SINK
  }

  /** Appends a run of ASCII letters and digits at once (most of any Latin text). */
  private asciiRun(text: string, from: number, base: number): number {
    let i = from + 1
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c >= 128 || ASCII_WORD[c] !== 1) break
      i++
    }
    if (this.kind !== WORD) {
      this.finish()
      this.kind = WORD
      this.start = base + from
      this.ascii = true
      this.from = from
      this.text = ''
    } else if (this.from < 0) {
      this.text += text.slice(from, i)
    }
    this.end = base + i
    return i
  }

  /** The open unit's text becomes a string of its own (it outlives the chunk, or gets decoded text). */
  private materialize(): void {
    if (this.from < 0) return
    this.text = this.chunk.slice(this.from, this.from + this.end - this.start)
    this.from = -1
  }

  /** One UTF-16 code unit of input, through the escape decoder. */
  private readChar(char: string, code: number, at: number): void {
    if (this.escape === 1) {
      if (code === 92) return
      if (char === 'u') {
        this.escape = 2
        this.hex = ''
        return
      }
      this.escape = 0
      this.finish()
      if (SEPARATOR_ESCAPES.has(char)) return
    } else if (this.escape === 2) {
      if (HEX.test(char)) {
        this.hex += char
        if (this.hex.length === 4) {
          this.escape = 0
          this.codeUnit(Number.parseInt(this.hex, 16), this.escapeStart, at + 1)
        }
        return
      }
      // Not an escape after all: the backslashes, `u` and digits separate; this character is read anew.
      this.escape = 0
      this.finish()
    }
    if (code === 92) {
      this.escape = 1
      this.escapeStart = at
      return
    }
    this.codeUnit(code, at, at + 1)
  }

  /** A decoded UTF-16 code unit with its source range: joins surrogate pairs. */
  private codeUnit(code: number, start: number, end: number): void {
    if (this.high >= 0) {
      const high = this.high
      this.high = -1
      if (code >= 0xdc00 && code <= 0xdfff) {
        this.codePoint((high - 0xd800) * 0x400 + (code - 0xdc00) + 0x10000, this.highStart, end)
        return
      }
      this.finish() // a lone high surrogate separates
    }
    if (code >= 0xd800 && code <= 0xdbff) {
      this.high = code
      this.highStart = start
      return
    }
    this.codePoint(code, start, end)
  }

  private codePoint(codePoint: number, start: number, end: number): void {
    const kind = classOf(codePoint)
    if (kind === SEPARATOR) {
      this.finish()
      return
    }
    const char = String.fromCodePoint(codePoint)
    if (kind === MARK && this.kind !== 0) {
      this.append(char, end)
      return
    }
    if (kind === SINGLE || this.kind !== WORD) {
      this.finish()
      this.kind = kind === SINGLE ? SINGLE : WORD
      this.start = start
      this.text = ''
      this.from = -1
      this.ascii = true
    }
    this.append(char, end)
  }

  private append(char: string, end: number): void {
    this.materialize()
    this.text += char
    this.end = end
    if (char.charCodeAt(0) >= 128) this.ascii = false
  }

  /** Ends the open unit, if any. */
  private finish(): void {
    if (this.kind === 0) return
    this.kind = 0
    if (this.from >= 0) {
      const from = this.from
      this.from = -1
      this.emit(this.chunk, from, from + this.end - this.start, true)
      return
    }
    const text = this.ascii ? this.text : normalise(this.text)
    this.emit(text, 0, text.length, this.ascii)
    this.text = ''
  }

  /** Hands `text.slice(from, to)` to the sink, placed at the open unit's start and end. */
  private emit(text: string, from: number, to: number, fold: boolean): void {
    const unit = this.unit
    unit.text = text
    unit.from = from
    unit.to = to
    unit.fold = fold
    unit.start = this.start
    unit.end = this.end
    this.sink(unit)
  }

  private close(): void {
    this.escape = 0
    this.high = -1
    this.finish()
  }
}

/**
 * All units of a whole text.
 *
 * @example
 * units('Don\'t "panic"!').map((u) => u.text) // ['don', 't', 'panic']
 */
export function units(text: string): Unit[] {
  return new UnitReader().push(text, true)
}
