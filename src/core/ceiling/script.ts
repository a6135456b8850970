/**
 * @module Script classes: which writing system a piece of text is in, decided in one pass over its
 * code units with table lookups, so the ceiling can charge, learn and explain per script.
 *
 * Why classes at all: the model's tokenizer splits scripts very differently (English about as o200k
 * does, Georgian up to 7× finer), so margins learned from one script must not move another's
 * (a Russian report must never shrink an English tenant's ceiling), and a refused user deserves to
 * hear which script filled the window. The list is fixed and exported so calibration state and
 * reports can key on it; its order is part of the wire format of nothing (states key by name).
 */

/**
 * Every script class, in a fixed order. `latin` is ASCII letters only (English, code identifiers);
 * `latin-ext` is any piece with a non-ASCII Latin letter or combining mark (Norwegian, German,
 * Vietnamese …), whose model tokens per o200k token run 1.3–1.6×, not English's 1.0×.
 * `whitespace`, `symbols` and `digits` are the pieces between words. `other` is every script
 * without its own class (Syriac, Thaana, Mongolian, Cherokee, private use, lone surrogates …).
 *
 * @example
 * SCRIPT_CLASSES.includes('georgian') // true
 */
export const SCRIPT_CLASSES = [
  'latin',
  'latin-ext',
  'digits',
  'whitespace',
  'symbols',
  'emoji',
  'cyrillic',
  'greek',
  'armenian',
  'georgian',
  'hebrew',
  'arabic',
  'devanagari',
  'bengali',
  'gurmukhi',
  'gujarati',
  'oriya',
  'tamil',
  'telugu',
  'kannada',
  'malayalam',
  'sinhala',
  'thai',
  'lao',
  'tibetan',
  'myanmar',
  'khmer',
  'ethiopic',
  'han',
  'kana',
  'hangul',
  'other',
] as const

/** One of {@link SCRIPT_CLASSES}. */
export type ScriptClass = (typeof SCRIPT_CLASSES)[number]

/** Human names for messages ("the text is mostly Georgian script …"). */
export const SCRIPT_CLASS_NAMES: Readonly<Record<ScriptClass, string>> = {
  latin: 'English-alphabet (ASCII Latin)',
  'latin-ext': 'accented Latin',
  digits: 'digits',
  whitespace: 'whitespace',
  symbols: 'punctuation and symbols',
  emoji: 'emoji',
  cyrillic: 'Cyrillic',
  greek: 'Greek',
  armenian: 'Armenian',
  georgian: 'Georgian',
  hebrew: 'Hebrew',
  arabic: 'Arabic',
  devanagari: 'Devanagari',
  bengali: 'Bengali',
  gurmukhi: 'Gurmukhi',
  gujarati: 'Gujarati',
  oriya: 'Odia',
  tamil: 'Tamil',
  telugu: 'Telugu',
  kannada: 'Kannada',
  malayalam: 'Malayalam',
  sinhala: 'Sinhala',
  thai: 'Thai',
  lao: 'Lao',
  tibetan: 'Tibetan',
  myanmar: 'Myanmar',
  khmer: 'Khmer',
  ethiopic: "Ge'ez (Ethiopic)",
  han: 'Chinese (Han)',
  kana: 'Japanese kana',
  hangul: 'Korean (Hangul)',
  other: 'other',
}

const ID: Readonly<Record<ScriptClass, number>> = Object.fromEntries(
  SCRIPT_CLASSES.map((name, i) => [name, i]),
) as Record<ScriptClass, number>

// Which class wins when a piece mixes classes: a script's letters over emoji, over unclassified
// scripts, over Latin, over digits, symbols and whitespace. Mixing Latin into a Georgian word
// therefore charges the word at Georgian's margin: a request can only make its own figure stricter.
const PRIORITY = new Uint8Array(SCRIPT_CLASSES.length).fill(7)
PRIORITY[ID.whitespace] = 0
PRIORITY[ID.symbols] = 1
PRIORITY[ID.digits] = 2
PRIORITY[ID.latin] = 3
PRIORITY[ID['latin-ext']] = 4
PRIORITY[ID.other] = 5
PRIORITY[ID.emoji] = 6

// BMP code-unit ranges [first, last, class]; later entries override earlier ones. Unlisted units
// are `other`. Ranges follow the Unicode block chart; exactness matters only for which margin and
// message apply — the bound itself comes from the token table, whatever the class.
const BMP_RANGES: ReadonlyArray<readonly [number, number, ScriptClass]> = [
  [0x0000, 0x007f, 'symbols'],
  [0x0041, 0x005a, 'latin'],
  [0x0061, 0x007a, 'latin'],
  [0x0030, 0x0039, 'digits'],
  [0x0009, 0x000d, 'whitespace'],
  [0x0020, 0x0020, 'whitespace'],
  [0x0080, 0x00bf, 'symbols'],
  [0x0085, 0x0085, 'whitespace'],
  [0x00a0, 0x00a0, 'whitespace'],
  [0x00aa, 0x00aa, 'latin-ext'],
  [0x00ba, 0x00ba, 'latin-ext'],
  [0x00c0, 0x02ff, 'latin-ext'],
  [0x00d7, 0x00d7, 'symbols'],
  [0x00f7, 0x00f7, 'symbols'],
  [0x0300, 0x036f, 'latin-ext'],
  [0x0370, 0x03ff, 'greek'],
  [0x0400, 0x052f, 'cyrillic'],
  [0x0530, 0x058f, 'armenian'],
  [0x0590, 0x05ff, 'hebrew'],
  [0x0600, 0x06ff, 'arabic'],
  [0x0750, 0x077f, 'arabic'],
  [0x0870, 0x08ff, 'arabic'],
  [0x0900, 0x097f, 'devanagari'],
  [0x0980, 0x09ff, 'bengali'],
  [0x0a00, 0x0a7f, 'gurmukhi'],
  [0x0a80, 0x0aff, 'gujarati'],
  [0x0b00, 0x0b7f, 'oriya'],
  [0x0b80, 0x0bff, 'tamil'],
  [0x0c00, 0x0c7f, 'telugu'],
  [0x0c80, 0x0cff, 'kannada'],
  [0x0d00, 0x0d7f, 'malayalam'],
  [0x0d80, 0x0dff, 'sinhala'],
  [0x0e00, 0x0e7f, 'thai'],
  [0x0e80, 0x0eff, 'lao'],
  [0x0f00, 0x0fff, 'tibetan'],
  [0x1000, 0x109f, 'myanmar'],
  [0x10a0, 0x10ff, 'georgian'],
  [0x1100, 0x11ff, 'hangul'],
  [0x1200, 0x139f, 'ethiopic'],
  [0x1680, 0x1680, 'whitespace'],
  [0x1780, 0x17ff, 'khmer'],
  [0x19e0, 0x19ff, 'khmer'],
  [0x1ab0, 0x1aff, 'latin-ext'],
  [0x1c80, 0x1c8f, 'cyrillic'],
  [0x1c90, 0x1cbf, 'georgian'],
  [0x1cd0, 0x1cff, 'devanagari'],
  [0x1d00, 0x1dff, 'latin-ext'],
  [0x1e00, 0x1eff, 'latin-ext'],
  [0x1f00, 0x1fff, 'greek'],
  [0x2000, 0x206f, 'symbols'],
  [0x2000, 0x200a, 'whitespace'],
  [0x200d, 0x200d, 'emoji'], // zero-width joiner: the glue of emoji sequences
  [0x2028, 0x2029, 'whitespace'],
  [0x202f, 0x202f, 'whitespace'],
  [0x205f, 0x205f, 'whitespace'],
  [0x2070, 0x209f, 'digits'], // super- and subscripts
  [0x20a0, 0x20cf, 'symbols'],
  [0x20d0, 0x20ff, 'latin-ext'], // combining marks for symbols
  [0x20e3, 0x20e3, 'emoji'], // keycap
  [0x2100, 0x25ff, 'symbols'],
  [0x2600, 0x27bf, 'emoji'],
  [0x27c0, 0x2bff, 'symbols'],
  [0x2b00, 0x2bff, 'emoji'],
  [0x2c60, 0x2c7f, 'latin-ext'],
  [0x2d00, 0x2d2f, 'georgian'],
  [0x2d80, 0x2ddf, 'ethiopic'],
  [0x2de0, 0x2dff, 'cyrillic'],
  [0x2e00, 0x2e7f, 'symbols'],
  [0x2e80, 0x2fdf, 'han'],
  [0x3000, 0x303f, 'symbols'],
  [0x3000, 0x3000, 'whitespace'],
  [0x3040, 0x30ff, 'kana'],
  [0x3130, 0x318f, 'hangul'],
  [0x31c0, 0x31ef, 'han'],
  [0x31f0, 0x31ff, 'kana'],
  [0x3200, 0x33ff, 'symbols'],
  [0x3400, 0x4dbf, 'han'],
  [0x4dc0, 0x4dff, 'symbols'],
  [0x4e00, 0x9fff, 'han'],
  [0xa640, 0xa69f, 'cyrillic'],
  [0xa720, 0xa7ff, 'latin-ext'],
  [0xa8e0, 0xa8ff, 'devanagari'],
  [0xa960, 0xa97f, 'hangul'],
  [0xa9e0, 0xa9ff, 'myanmar'],
  [0xaa60, 0xaa7f, 'myanmar'],
  [0xab00, 0xab2f, 'ethiopic'],
  [0xab30, 0xab6f, 'latin-ext'],
  [0xac00, 0xd7ff, 'hangul'],
  [0xf900, 0xfaff, 'han'],
  [0xfb00, 0xfb06, 'latin-ext'],
  [0xfb13, 0xfb17, 'armenian'],
  [0xfb1d, 0xfb4f, 'hebrew'],
  [0xfb50, 0xfdff, 'arabic'],
  [0xfe00, 0xfe0f, 'emoji'], // variation selectors (emoji presentation)
  [0xfe10, 0xfe6f, 'symbols'],
  [0xfe70, 0xfefe, 'arabic'],
  [0xfeff, 0xfeff, 'whitespace'],
  [0xff00, 0xff65, 'symbols'],
  [0xff10, 0xff19, 'digits'],
  [0xff21, 0xff3a, 'latin-ext'],
  [0xff41, 0xff5a, 'latin-ext'],
  [0xff66, 0xff9f, 'kana'],
  [0xffa0, 0xffdc, 'hangul'],
  [0xffe0, 0xffef, 'symbols'],
]

// Astral code points [first, last, class], checked in order; anything else is `other`.
const ASTRAL_RANGES: ReadonlyArray<readonly [number, number, number]> = [
  [0x1f000, 0x1faff, ID.emoji],
  [0xe0000, 0xe007f, ID.emoji], // tag characters (subdivision flags)
  [0x20000, 0x3ffff, ID.han],
  [0x1b000, 0x1b16f, ID.kana],
  [0x1d400, 0x1d7ff, ID['latin-ext']], // mathematical alphanumerics
]

let bmp: Uint8Array | undefined

/** The class id of every BMP code unit, built on first use (64 KiB, under a millisecond). */
function bmpTable(): Uint8Array {
  if (bmp) return bmp
  const table = new Uint8Array(0x10000).fill(ID.other)
  for (const [first, last, name] of BMP_RANGES) table.fill(ID[name], first, last + 1)
  // Surrogates are resolved by the scanners (a pair is an astral code point, a lone one `other`).
  bmp = table
  return table
}

function astralClass(codePoint: number): number {
  for (const [first, last, id] of ASTRAL_RANGES) {
    if (codePoint >= first && codePoint <= last) return id
  }
  return ID.other
}

/** Mask of the class id in {@link pieceFacts}. */
export const CLASS_MASK = 0x3f

/** Flag in {@link pieceFacts}: the piece holds a surrogate that is not half of a pair. */
export const LONE_SURROGATE = 0x40

/**
 * The class id of one o200k pre-token piece (an index into {@link SCRIPT_CLASSES}): the
 * highest-priority class among its characters (a script's letters over emoji, over Latin, over
 * digits, symbols and whitespace), so a piece's whole cost is attributed to one class. With
 * {@link LONE_SURROGATE} set when it holds a lone surrogate (which some tokenizers count as three
 * bytes, and o200k as one U+FFFD token): one pass over code units for both.
 *
 * @example
 * SCRIPT_CLASSES[pieceFacts(' Привет') & CLASS_MASK] // 'cyrillic'
 * pieceFacts('\ud835') & LONE_SURROGATE // 64
 */
export function pieceFacts(piece: string): number {
  const table = bmpTable()
  let best = ID.whitespace
  let bestPriority = -1
  let flags = 0
  const length = piece.length
  for (let i = 0; i < length; i++) {
    const unit = piece.charCodeAt(i)
    let id: number
    if (unit >= 0xd800 && unit <= 0xdfff) {
      const next = i + 1 < length ? piece.charCodeAt(i + 1) : 0
      if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        id = astralClass(((unit - 0xd800) << 10) + (next - 0xdc00) + 0x10000)
        i++
      } else {
        id = ID.other
        flags = LONE_SURROGATE
      }
    } else id = table[unit] ?? ID.other
    const priority = PRIORITY[id] ?? 0
    if (priority > bestPriority) {
      best = id
      bestPriority = priority
    }
  }
  return best | flags
}

function add(totals: Float64Array, id: number, bytes: number): void {
  totals[id] = (totals[id] ?? 0) + bytes
}

/**
 * Adds the UTF-8 bytes of `text` to `totals`, per class of each character (not per piece: this is
 * the byte path, which never runs the pre-tokenizer). The sum over classes equals `utf8Length`.
 * Returns the highest UTF-16 unit outside ASCII (0 for ASCII text), so a caller can tell without
 * another pass whether NFC may change the text ({@link NFC_STABLE_BELOW}).
 *
 * @example
 * const bytes = new Float64Array(SCRIPT_CLASSES.length)
 * addClassBytes('Hei ქ', bytes) // 0x10e5; latin 3, whitespace 1, georgian 3
 */
export function addClassBytes(text: string, totals: Float64Array): number {
  const table = bmpTable()
  // ASCII — the bulk of almost any prompt — is tallied per character and classed once at the end:
  // one increment per character instead of a class lookup and a float add on one hot total. (A V8
  // string holds at most 2³⁰ units, so no count can pass the 2³² of a Uint32.)
  const ascii = new Uint32Array(0x80)
  let highest = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) {
      ascii[unit]!++
      continue
    }
    if (unit > highest) highest = unit
    if (unit < 0x800) {
      add(totals, table[unit] ?? 0, 2)
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      const next = i + 1 < length ? text.charCodeAt(i + 1) : 0
      if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        add(totals, astralClass(((unit - 0xd800) << 10) + (next - 0xdc00) + 0x10000), 4)
        i++
      } else add(totals, ID.other, 3) // TextEncoder writes U+FFFD
    } else add(totals, table[unit] ?? 0, 3)
  }
  for (let unit = 0; unit < 0x80; unit++) {
    const count = ascii[unit]!
    if (count > 0) add(totals, table[unit] ?? 0, count)
  }
  return highest
}

/**
 * Text whose UTF-16 units are all below this is its own NFC form: the first character NFC can change
 * or compose with what precedes it is U+0300 (the combining grave accent; Unicode's NFC_Quick_Check
 * is Yes for every code point below it), so such a text needs no `normalize` call to know it.
 */
export const NFC_STABLE_BELOW = 0x300

/** A unit at or above {@link NFC_STABLE_BELOW}: only text holding one can change under NFC. */
const NFC_MAY_CHANGE = /[\u0300-\uffff]/

/**
 * The NFC form of `text` (Qwen3 tokenizes that form): `text` itself, without a `normalize` call, when
 * no unit can change — V8's `normalize` copies the whole text through ICU even then (~2 ns a
 * character, 0.3 ms for a 32k-token English prompt), where the test stops at the first such unit.
 *
 * @example
 * nfcForm('Cafe\u0301') // 'Café' (U+00E9)
 * nfcForm('plain ASCII') // the same string, never normalized
 */
export function nfcForm(text: string): string {
  return NFC_MAY_CHANGE.test(text) ? text.normalize('NFC') : text
}
