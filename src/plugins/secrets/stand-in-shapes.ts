/**
 * @module The shape of each kind's stand-in: which characters of the secret it keeps (a provider's
 * prefix, an IBAN's country, a card's first digit), which carry the stand-in's payload (each keeps its
 * character class, or takes the kind's alphabet), and which a final fix sets so that the stand-in
 * FAILS the kind's own check — a card fails Luhn, an IBAN mod-97, a fødselsnummer its second mod-11
 * digit, a personnummer Luhn, a GitHub token its CRC-32, an SSN has the never-issued area 666. So a
 * stand-in is never somebody's real card, account or token, and the detectors do not take it again.
 * Kinds with no check (API keys) get 128+ random-looking bits: equal to a real key with odds 2^-128.
 */
import { BASE62, base62, crc32, fnrControl, ibanCheckDigits, luhnCheckDigit } from './checksums'
import {
  CARD_DIGITS,
  KEY_RUN,
  NATIONAL_START,
  NUMBER_END,
  NUMBER_START,
  TOKEN_RUN,
  tokenEnd,
  tokenStart,
} from './detector'

/** How one kind's stand-in is built from a secret (or a candidate) of that kind. */
export interface StandInShape {
  /** The template the payload is written into (the secret itself unless the kind builds one). */
  template(value: string): string
  /** How many leading characters of the template are kept as they are. */
  keep(template: string): number
  /** How many trailing characters are kept (or set by {@link fix}). */
  keepEnd(template: string): number
  /** The payload alphabet; absent: each position keeps its class (digit, upper, lower). */
  alphabet?: string
  /** Sets the kept characters that must make the stand-in fail the kind's check. */
  fix?(standIn: string): string
  /** Finds stand-in candidates of this kind in an answer (global). */
  candidates: RegExp
  /**
   * What every candidate holds, so a text without it is not searched (most prose holds no run of 24
   * key characters): a run of at least `minRun` key characters (see {@link runFacts}), and a digit
   * when `digit`. Absent (operator kinds): always searched. Each built-in claim is tested against its pattern.
   */
  gate?: { minRun: number; digit?: true }
}

/**
 * The longest run of key characters (`[A-Za-z0-9_+/-]`: every character a built-in kind's pattern
 * matches outside a PEM block's spaces, an IBAN's or a card's group separators and a JWT's dots) in
 * text[from..], and whether it holds a digit: one pass
 * over the characters, which spares most prose every kind's regular expression (a stream's next
 * words, a whole answer's sentences). It stops once a run of `enough` and a digit are seen (no gate
 * asks more), so the reported run is then at least `enough`, not always the longest.
 *
 * @example
 * runFacts('see sk_live_ab, 42') // { longestRun: 11, digit: true }
 */
export function runFacts(
  text: string,
  from = 0,
  enough = Number.POSITIVE_INFINITY,
): { longestRun: number; digit: boolean } {
  let longestRun = 0
  let run = 0
  let digit = false
  for (let i = from; i < text.length; i++) {
    // [A-Za-z0-9_+/-], the commonest first: lower 97–122, upper 65–90, '_' 95, digits 48–57,
    // '+' 43, '-' 45, '/' 47.
    const c = text.charCodeAt(i)
    if (c >= 97) {
      if (c <= 122) {
        run++
        continue
      }
    } else if (c >= 65) {
      if (c <= 90 || c === 95) {
        run++
        continue
      }
    } else if (c >= 48) {
      if (c <= 57) {
        run++
        digit = true
        continue
      }
    } else if (c === 43 || c === 45 || c === 47) {
      run++
      continue
    }
    if (run > longestRun) {
      longestRun = run
      if (digit && longestRun >= enough) return { longestRun, digit }
    }
    run = 0
  }
  return { longestRun: Math.max(longestRun, run), digit }
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/**
 * The longest candidate of any built-in kind, so the longest stand-in: a Stripe key of the longest
 * length its format allows (`sk_live_` + 247). The next are a PEM stand-in with the longest label
 * the detector accepts (234) and an OpenAI service-account key (231). A stream scanning for other
 * requests' stand-ins holds back one character less.
 *
 * @example
 * const holdBack = Math.max(CANARY_LENGTH, MAX_STAND_IN_LENGTH) - 1
 */
export const MAX_STAND_IN_LENGTH = 255

/**
 * A JWT stand-in's payload: the claims are not sent (they may be personal), only that they were.
 *
 * @example
 * standIn.split('.')[1] === JWT_STAND_IN_PAYLOAD // true
 */
const JWT_STAND_IN_PAYLOAD = 'eyJyZWRhY3RlZCI6dHJ1ZX0' // {"redacted":true}

/** The header of a JWT stand-in whose original header is over 100 characters. */
const JWT_DEFAULT_HEADER = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9' // {"alg":"HS256","typ":"JWT"}

const prefixOf = (re: RegExp) => (template: string) => re.exec(template)?.[0].length ?? 0
const fixed = (n: number) => () => n

/** The digits of a string and a way to write digits back into its non-digit layout. */
function setLastDigit(text: string, digit: number): string {
  const i = text.search(/[0-9](?=[^0-9]*$)/)
  return text.slice(0, i) + String(digit) + text.slice(i + 1)
}

const digitsOf = (text: string) => text.replace(/[^0-9]/g, '')

/** GitHub/npm: the CRC-32 of the 30 random characters, plus one: never a valid token. */
function wrongGithubChecksum(token: string): string {
  if (token.startsWith('github_pat_')) return token
  const random = token.slice(4, 34)
  return token.slice(0, 34) + base62((crc32(random) + 1) >>> 0, 6)
}

function wrongIbanCheck(iban: string): string {
  const compact = iban.replace(/ /g, '')
  const valid = Number(ibanCheckDigits(compact.slice(0, 2), compact.slice(4)))
  const wrong = String(((valid - 2 + 1) % 97) + 2).padStart(2, '0')
  return iban.slice(0, 2) + wrong + iban.slice(4)
}

function wrongFnr(fnr: string): string {
  const digits = digitsOf(fnr)
  const k2 = fnrControl(digits, 'k2')
  return setLastDigit(fnr, k2 === 10 ? 0 : (k2 + 1) % 10)
}

function wrongLuhn(text: string, tenDigits: (digits: string) => string): string {
  const digits = tenDigits(digitsOf(text))
  return setLastDigit(text, (luhnCheckDigit(digits.slice(0, -1)) + 5) % 10)
}

/** The BEGIN line of a PEM stand-in, its newline (real or escaped) included. */
// A line break as a PEM stand-in can appear in an answer: real, JSON-escaped (`\n`), or escaped twice
// (a model quoting a JSON-escaped key inside a JSON string writes `\\n`).
const pemHeader = prefixOf(/^-----BEGIN [^-]+-----(?:\n|\\n|\\\\n)/)

// The detectors' own token boundaries (src/plugins/secrets/detector.ts): a stand-in sits wherever its
// secret sat — after a comma, an `_`, an escape — and must be found there again.
const KEY_BOUNDARY = tokenStart()
const KEY_END = tokenEnd(KEY_RUN)
const ALNUM_END = tokenEnd(TOKEN_RUN)

/**
 * The built-in kinds' shapes. Operator kinds use {@link classShape}.
 *
 * @example
 * SHAPES['card-number'].fix?.(standIn) === standIn // a card stand-in fails Luhn by 5
 */
export const SHAPES: Readonly<Record<string, StandInShape>> = {
  'openai-key': {
    template: (v) => v,
    keep: prefixOf(/^sk-(?:proj-|svcacct-|admin-|None-)?/),
    keepEnd: fixed(0),
    candidates: new RegExp(
      `${KEY_BOUNDARY}sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{40,220}${KEY_END}`,
      'g',
    ),
    gate: { minRun: 43 },
  },
  'anthropic-key': {
    template: (v) => v,
    keep: prefixOf(/^sk-ant-[a-z]+\d\d-/),
    keepEnd: fixed(2),
    candidates: new RegExp(
      `${KEY_BOUNDARY}sk-ant-[a-z]+\\d\\d-[A-Za-z0-9_-]{80,120}AA${KEY_END}`,
      'g',
    ),
    gate: { minRun: 93, digit: true },
  },
  'github-token': {
    template: (v) => v,
    keep: prefixOf(/^(?:github_pat_|gh[pousr]_|npm_)/),
    // The classic tokens' last 6 characters are their checksum, set wrong by the fix.
    keepEnd: (t) => (t.startsWith('github_pat_') ? 0 : 6),
    alphabet: BASE62,
    fix: wrongGithubChecksum,
    candidates: new RegExp(
      `${KEY_BOUNDARY}(?:(?:gh[pousr]|npm)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})${ALNUM_END}`,
      'g',
    ),
    gate: { minRun: 40 },
  },
  'stripe-key': {
    template: (v) => v,
    keep: fixed(8),
    keepEnd: fixed(0),
    // Base62 at every position: with classes kept, the shortest keys (24 characters) hold ~105 bits
    // and would fall back to the compact layout; base62 holds 143.
    alphabet: BASE62,
    candidates: new RegExp(
      `${KEY_BOUNDARY}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}${ALNUM_END}`,
      'g',
    ),
    gate: { minRun: 32 },
  },
  'slack-token': {
    template: (v) => v,
    keep: fixed(5),
    keepEnd: fixed(0),
    candidates: new RegExp(
      `${KEY_BOUNDARY}xox[abposr]-(?:\\d{1,15}-){1,4}[A-Za-z0-9]{16,64}${tokenEnd(`${TOKEN_RUN}-`)}`,
      'g',
    ),
    gate: { minRun: 23, digit: true },
  },
  'google-api-key': {
    template: (v) => v,
    keep: fixed(4),
    keepEnd: fixed(0),
    candidates: new RegExp(`${KEY_BOUNDARY}AIza[0-9A-Za-z_-]{35}${KEY_END}`, 'g'),
    gate: { minRun: 39 },
  },
  'aws-access-key-id': {
    template: (v) => v,
    keep: fixed(4),
    keepEnd: fixed(0),
    alphabet: BASE32,
    candidates: new RegExp(`${KEY_BOUNDARY}(?:AKIA|ASIA)[A-Z2-7]{16}${ALNUM_END}`, 'g'),
    gate: { minRun: 20 },
  },
  'aws-secret-access-key': {
    template: (v) => v,
    keep: fixed(0),
    keepEnd: fixed(0),
    candidates: /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
    gate: { minRun: 40 },
  },
  'cloudflare-api-token': {
    template: (v) => v,
    keep: fixed(0),
    keepEnd: fixed(0),
    // As its keyword detector's tokens: a whole run of the alphabet (no prefix to start on).
    candidates: /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{40}(?![A-Za-z0-9_-])/g,
    gate: { minRun: 40 },
  },
  'private-key': {
    // One line of 64 base64 characters between the original BEGIN and END lines: the model sees a
    // key of the same type, and 384 bits carry the payload; a full-length body would cost ~1,700
    // characters of context for nothing. A key pasted with escaped newlines (`\n` in a JSON string)
    // gets escaped newlines, so the text around it stays valid JSON.
    template: (v) => {
      const label = /^-----BEGIN ([^-]+)-----/.exec(v)?.[1] ?? 'PRIVATE KEY'
      const nl = v.includes('\n') ? '\n' : v.includes('\\n') ? '\\n' : '\n'
      return `-----BEGIN ${label}-----${nl}${'A'.repeat(64)}${nl}-----END ${label}-----`
    },
    keep: pemHeader,
    keepEnd: (t) => t.length - pemHeader(t) - 64,
    alphabet: BASE64,
    candidates:
      /-----BEGIN (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----(?:\n|\\n|\\\\n)[A-Za-z0-9+/]{64}(?:\n|\\n|\\\\n)-----END (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----/g,
    gate: { minRun: 64 },
  },
  jwt: {
    // The header is kept (the algorithm is not secret, and the model may reason about it) up to
    // 100 characters, so a stand-in is at most 168 (a stream's hold-back); a longer one becomes
    // {"alg":"HS256","typ":"JWT"}. The claims are replaced (they may name a person); a 43-character
    // signature, as HS256's, carries the payload.
    template: (v) => {
      const header = v.slice(0, v.indexOf('.'))
      const kept = header.length <= 100 ? header : JWT_DEFAULT_HEADER
      return `${kept}.${JWT_STAND_IN_PAYLOAD}.${'A'.repeat(43)}`
    },
    keep: (t) => t.lastIndexOf('.') + 1,
    keepEnd: fixed(0),
    alphabet: BASE64URL,
    candidates: new RegExp(
      `${KEY_BOUNDARY}eyJ[A-Za-z0-9_-]{8,97}\\.eyJyZWRhY3RlZCI6dHJ1ZX0\\.[A-Za-z0-9_-]{43}${KEY_END}`,
      'g',
    ),
    gate: { minRun: 43 },
  },
  'url-password': {
    // Passwords have no format to keep; 24 base62 characters carry a full payload.
    template: () => 'A'.repeat(24),
    keep: fixed(0),
    keepEnd: fixed(0),
    alphabet: BASE62,
    candidates: /(?<![A-Za-z0-9])[A-Za-z0-9]{24}(?![A-Za-z0-9])/g,
    gate: { minRun: 24 },
  },
  'card-number': {
    // The first digit (the brand family: 4 Visa, 5 Mastercard, 3 Amex/JCB/Diners, 6 Discover), the
    // length and the grouping are kept; the last digit is set so that Luhn fails by 5.
    template: (v) => v,
    keep: fixed(1),
    keepEnd: fixed(1),
    fix: (s) => wrongLuhn(s, (d) => d),
    candidates: new RegExp(`${NUMBER_START}${CARD_DIGITS}${NUMBER_END}`, 'g'),
    gate: { minRun: 4, digit: true },
  },
  iban: {
    // The country (and so the length and the BBAN's letter/digit layout) is kept; the check digits
    // are set to a wrong value.
    template: (v) => v,
    keep: fixed(4),
    keepEnd: fixed(0),
    fix: wrongIbanCheck,
    candidates: new RegExp(`${KEY_BOUNDARY}[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}${ALNUM_END}`, 'g'),
    gate: { minRun: 4, digit: true },
  },
  'no-fodselsnummer': {
    // Nothing of the date is kept (a birth date is personal data); the second control digit is wrong.
    template: (v) => v,
    keep: fixed(0),
    keepEnd: fixed(1),
    fix: wrongFnr,
    candidates: new RegExp(`${NATIONAL_START}[0-9]{6} ?[0-9]{5}${NUMBER_END}`, 'g'),
    gate: { minRun: 6, digit: true },
  },
  'se-personnummer': {
    template: (v) => v,
    keep: prefixOf(/^(?=[0-9]{8}-?[0-9]{4}$)(?:19|20)/),
    keepEnd: fixed(1),
    fix: (s) => wrongLuhn(s, (d) => (d.length === 12 ? d.slice(2) : d)),
    candidates: new RegExp(
      `${NATIONAL_START}(?:(?:19|20)[0-9]{6}-?|[0-9]{6}[-+])[0-9]{4}${NUMBER_END}`,
      'g',
    ),
    gate: { minRun: 11, digit: true },
  },
  'us-ssn': {
    // Area 666 is never issued: a stand-in is never a real number.
    template: (v) => v,
    keep: fixed(3),
    keepEnd: fixed(0),
    fix: (s) => `666${s.slice(3)}`,
    candidates: new RegExp(`${NUMBER_START}666-[0-9]{2}-[0-9]{4}${NUMBER_END}`, 'g'),
    gate: { minRun: 11, digit: true },
  },
}

/**
 * The literal characters a regex source starts with (`ACME-` of `ACME-[0-9]{8}`), stopping before a
 * quantified one.
 *
 * @example
 * literalPrefix('ACME-[0-9]{8}') // 'ACME-'
 */
function literalPrefix(source: string): string {
  let out = ''
  let i = 0
  while (i < source.length) {
    let char = source[i]!
    let width = 1
    if (char === '\\') {
      const next = source[i + 1] ?? ''
      if (/[A-Za-z0-9]/.test(next)) break // a class (\d, \w) or an escape with a meaning
      char = next
      width = 2
    } else if ('^$.|?*+()[]{}'.includes(char)) {
      break
    }
    if ('?*{+'.includes(source[i + width] ?? '')) break
    out += char
    i += width
  }
  return out
}

/**
 * The shape of an operator kind: the pattern's literal prefix is kept, the rest of the match keeps
 * its character classes (digits stay digits, letters keep their case, everything else stays); its
 * stand-ins are found again by the operator's own pattern — when they still match it (a class
 * narrower than a digit or a letter of one case, like `[A-F]`, may not: then only this request's
 * own stand-ins are recognised).
 *
 * @example
 * classShape(/ACME-[0-9]{8}/g).keep('ACME-12345678') // 5
 */
export function classShape(candidates: RegExp): StandInShape {
  const prefix = literalPrefix(candidates.source).length
  return { template: (v) => v, keep: fixed(prefix), keepEnd: fixed(0), candidates }
}
