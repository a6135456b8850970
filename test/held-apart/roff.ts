/**
 * @module A manual page's roff source as the text a reader sees: requests dropped or reduced to their
 * words, and the character escapes decoded — `\(:a` and `\[:a]` (ä), groff's preconv output
 * `\[u00E5]` and `\[u0061_0308]`, strings `\*(Aq` and `\*[name]` (the page's own `.ds` ones too),
 * `\e`, `\-`, `\&` — so that a Swedish or German page keeps its å, ä, ö and ß. No file access: the
 * corpus reads the pages (test/held-apart/corpus.ts).
 */

/** Named glyphs (groff_char(7)) that are not a letter with an accent (those are composed below). */
const GLYPHS: Record<string, string> = {
  aq: "'",
  dq: '"',
  lq: '“',
  rq: '”',
  oq: '‘',
  cq: '’',
  Bq: '„',
  bq: '‚',
  Fo: '«',
  Fc: '»',
  fo: '‹',
  fc: '›',
  em: '—',
  en: '–',
  hy: '-',
  mi: '-',
  '\\-': '-',
  bu: '•',
  co: '©',
  rg: '®',
  tm: '™',
  de: '°',
  mu: '×',
  di: '÷',
  '+-': '±',
  sc: '§',
  ps: '¶',
  ct: '¢',
  Po: '£',
  Ye: '¥',
  Eu: '€',
  eu: '€',
  at: '@',
  sh: '#',
  rs: '\\',
  sl: '/',
  ha: '^',
  ti: '~',
  ga: '`',
  aa: '´',
  ad: '¨',
  ul: '_',
  ba: '|',
  or: '|',
  lB: '[',
  rB: ']',
  lC: '{',
  rC: '}',
  la: '⟨',
  ra: '⟩',
  '->': '→',
  '<-': '←',
  '<=': '≤',
  '>=': '≥',
  '!=': '≠',
  '==': '≡',
  '~=': '≅',
  '~~': '≈',
  if: '∞',
  dg: '†',
  dd: '‡',
  ss: 'ß',
  AE: 'Æ',
  ae: 'æ',
  OE: 'Œ',
  oe: 'œ',
  '/o': 'ø',
  '/O': 'Ø',
  '/l': 'ł',
  '/L': 'Ł',
  '-D': 'Đ',
  Sd: 'ð',
  TP: 'Þ',
  Tp: 'þ',
  '.i': 'ı',
  IJ: 'Ĳ',
  ij: 'ĳ',
  'r!': '¡',
  'r?': '¿',
  Of: 'ª',
  Om: 'º',
  12: '½',
  14: '¼',
  34: '¾',
  S1: '¹',
  S2: '²',
  S3: '³',
  fi: 'fi',
  fl: 'fl',
  ff: 'ff',
  Fi: 'ffi',
  Fl: 'ffl',
  // The soft hyphen: a place a word may break, nothing on the page.
  shc: '',
}

/** Greek letters, `\(*a` … `\(*W`. */
const GREEK_NAMES = 'abgdezyhiklmncoprstufxqw'
const GREEK_LOWER = 'αβγδεζηθικλμνξοπρστυφχψω'
const GREEK_UPPER = 'ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ'

/** The accents groff writes before a letter (`\(:a`, `\('e`, `\(oa`), as combining marks. */
const ACCENTS: Record<string, string> = {
  ':': '\u0308',
  "'": '\u0301',
  '`': '\u0300',
  '^': '\u0302',
  '~': '\u0303',
  ',': '\u0327',
  o: '\u030a',
  v: '\u030c',
}

/**
 * Strings the man and pod2man preambles define, as nroff prints them; a page's own unconditional
 * `.ds` definitions are added to these (the preambles' conditional ones are left to this table).
 */
const STRINGS: Record<string, string> = {
  Aq: "'",
  'L"': '“',
  'R"': '”',
  'C`': '',
  "C'": '',
  'C+': 'C++',
  '--': '—',
  PI: 'π',
  lq: '“',
  rq: '”',
  R: '®',
  Tm: '™',
}

/** The character a glyph name stands for, or '' for one this table does not know. */
export function glyph(name: string): string {
  const known = GLYPHS[name]
  if (known !== undefined) return known
  // preconv and \[u…]: one code point, or a base and combining marks joined by `_`.
  if (/^u[0-9A-F]{4,6}(?:_[0-9A-F]{4,6})*$/.test(name)) {
    const points = name
      .slice(1)
      .split('_')
      .map((hex) => Number.parseInt(hex, 16))
    if (points.every((p) => p <= 0x10ffff && (p < 0xd800 || p > 0xdfff))) {
      return String.fromCodePoint(...points).normalize('NFC')
    }
    return ''
  }
  if (/^char\d{1,3}$/.test(name)) {
    const code = Number(name.slice(4))
    return code >= 32 && code < 256 ? String.fromCharCode(code) : ''
  }
  if (name.length === 2 && name[0] === '*') {
    const i = GREEK_NAMES.indexOf(name[1]!.toLowerCase())
    if (i === -1) return ''
    return (name[1] === name[1]!.toLowerCase() ? GREEK_LOWER : GREEK_UPPER)[i]!
  }
  // An accented letter, composed: `:a` ä, `oA` Å, `'e` é, `,c` ç.
  if (name.length === 2 && /[A-Za-z]/.test(name[1]!)) {
    const mark = ACCENTS[name[0]!]
    const composed = mark === undefined ? '' : `${name[1]}${mark}`.normalize('NFC')
    if (composed.length === 1) return composed
  }
  return ''
}

/**
 * One escape sequence at a time, left to right, so that `\\` and `\e` never start another: the
 * glyph forms, strings, font and size changes, motions and the like (dropped), `\"` comments.
 */
const ESCAPE =
  /\\(?:\((..)|\[([^\]]*)\]|\*(?:\((..)|\[([^\]]*)\]|(.))|[fFm](?:\(..|\[[^\]]*\]|.)|s(?:[+-]?\d|\([+-]?\d\d|\[[^\]]*\]|[+-]?\(\d\d)|[nVgk](?:\(..|\[[^\]]*\]|.)|\$.|[hvwlLDbbBoSxXRZNC]'[^']*'|"[^\n]*|(.)|$)/g

/** Where a line is continued by the next (`\c`, a trailing `\`): removed with the line break. */
const JOIN = '\uE000'

/** What a one-character escape prints (`\e` a backslash, `\-` a minus, `\&` nothing). */
function single(c: string): string {
  switch (c) {
    case 'e':
    case '\\':
      return '\\'
    case '-':
      return '-'
    case ' ':
    case '~':
    case '0':
      return ' '
    case "'":
      return '´'
    case '`':
      return '`'
    case '.':
      return '.'
    case 't':
      return '\t'
    case 'c':
      return JOIN
    default:
      // \& \| \^ \% \: \/ \, \{ \} \c \p \r \u \d and the rest print nothing.
      return ''
  }
}

/** `text` with every escape decoded, under the page's `strings`. */
function decode(text: string, strings: Record<string, string>): string {
  return text.replace(ESCAPE, (whole, g2, gBracket, s2, sBracket, s1, one) => {
    if (g2 !== undefined) return glyph(g2)
    if (gBracket !== undefined) return glyph(gBracket.trim())
    const name = s2 ?? sBracket ?? s1
    if (name !== undefined) return strings[name] ?? ''
    if (whole.startsWith('\\N')) {
      const code = Number(whole.slice(3, -1))
      return code >= 32 && code <= 0x10ffff ? String.fromCodePoint(code) : ''
    }
    if (whole.startsWith('\\C')) return glyph(whole.slice(3, -1))
    if (one !== undefined) return single(one)
    // `\c`, or a backslash ending the line: the line goes on in the next one.
    return whole === '\\' ? JOIN : ''
  })
}

/** A request's arguments: words, or `"…"` with `""` for a quote inside; escapes kept for decode. */
function requestArgs(rest: string): string[] {
  const out: string[] = []
  for (const m of rest.matchAll(/"((?:[^"]|"")*)"?|((?:\\.|[^\s\\])+)/g)) {
    out.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2]!)
  }
  return out
}

/** The page's own unconditional string definitions, `.ds name value`, decoded. */
function pageStrings(lines: readonly string[]): Record<string, string> {
  const strings: Record<string, string> = {}
  for (const line of lines) {
    const m = /^\.ds\s+(\S+)\s?"?(.*)$/.exec(line)
    if (m && STRINGS[m[1]!] === undefined) strings[m[1]!] = m[2]!
  }
  const all = { ...strings, ...STRINGS }
  // Decoded once, against the table and each other (a definition may use another string).
  for (const [name, value] of Object.entries(strings)) all[name] = decode(value, all)
  return all
}

/**
 * A manual page's text: roff requests removed (a heading or a font request keeps its words), every
 * escape decoded, its sections as paragraphs.
 *
 * @example
 * manText('.SH BESKRIVNING\nManualen \\(:ar avsedd f\\(:or anv\\(:andare.') // '\nBESKRIVNING\n\nManualen är avsedd för användare.'
 */
export function manText(roff: string): string {
  const lines = roff.split('\n')
  const strings = pageStrings(lines)
  return lines
    .map((line) => {
      const request = /^[.'][ \t]*(\S*)[ \t]*(.*)$/.exec(line)
      if (!request) return decode(line, strings)
      const [, name, rest] = request as unknown as [string, string, string]
      if (/^(SH|SS)$/.test(name)) return `\n${decode(requestArgs(rest).join(' '), strings)}\n`
      if (/^(PP|P|LP|TP|IP|br|sp)$/.test(name)) return '\n'
      if (/^(B|I|BR|IR|RB|RI|BI|IB|SM|UR|MT)$/.test(name)) {
        return decode(requestArgs(rest).join(' '), strings)
      }
      return ''
    })
    .join('\n')
    .replaceAll(`${JOIN}\n`, '')
    .replaceAll(JOIN, '')
}
