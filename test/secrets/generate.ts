/**
 * @module Deterministic generators of secrets of every built-in kind, with valid checks (so they are
 * positives), and of hard negatives (near misses that fail exactly one check), for the corpus, the
 * property tests and the bench. Seeded: the same seed gives the same values on every run.
 */
import { prng } from '../../sim/random'
import {
  BASE62,
  crc32,
  githubChecksum,
  ibanRemainder,
  luhnValid,
  validFodselsnummer,
  validPersonnummer,
} from '../../src/plugins/secrets'
import { base62 } from '../../src/plugins/secrets/checksums'

export type Rand = () => number

export const rng = (seed: number): Rand => prng(seed)

const ALNUM = BASE62
const B64URL = `${ALNUM}-_`
const B64 = `${ALNUM}+/`
const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

export function pick<T>(r: Rand, list: readonly T[]): T {
  return list[Math.floor(r() * list.length)]!
}

export function chars(r: Rand, alphabet: string, n: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)]
  return s
}

/** A random string of `n` chars with at least one upper, one lower and one digit. */
function mixed(r: Rand, alphabet: string, n: number): string {
  for (;;) {
    const s = chars(r, alphabet, n)
    if (/[A-Z]/.test(s) && /[a-z]/.test(s) && /[0-9]/.test(s)) return s
  }
}

function digits(r: Rand, n: number): string {
  return chars(r, '0123456789', n)
}

function b64url(text: string): string {
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function luhnComplete(partial: string): string {
  for (let d = 0; d < 10; d++) if (luhnValid(partial + d)) return partial + d
  throw new Error('unreachable')
}

const CARD_PREFIXES: [string, number][] = [
  ['4', 16],
  ['4', 13],
  ['51', 16],
  ['55', 16],
  ['2223', 16],
  ['34', 15],
  ['37', 15],
  ['6011', 16],
  ['65', 16],
  ['3530', 16],
  ['36', 14],
  ['62', 19],
]

function group(number: string, sep: string): string {
  if (number.length === 15)
    return [number.slice(0, 4), number.slice(4, 10), number.slice(10)].join(sep)
  // 13 digits are printed 4-3-3-3 as often as in fours; chosen by a digit, so no draw is added.
  if (number.length === 13 && Number(number[5]) % 2 === 0)
    return [number.slice(0, 4), number.slice(4, 7), number.slice(7, 10), number.slice(10)].join(sep)
  return number.match(/.{1,4}/g)!.join(sep)
}

const IBAN_SPECS: [string, string][] = [
  ['NO', 'nnnnnnnnnnn'],
  ['DE', 'nnnnnnnnnnnnnnnnnn'],
  ['GB', 'aaaannnnnnnnnnnnnn'],
  ['FR', 'nnnnnnnnnnnnnnnnnnnnnnn'],
  ['NL', 'aaaannnnnnnnnn'],
  ['SE', 'nnnnnnnnnnnnnnnnnnnn'],
  ['ES', 'nnnnnnnnnnnnnnnnnnnn'],
  ['CH', 'nnnnnnnnnnnnnnnnn'],
]

function ibanFrom(r: Rand, country: string, spec: string): string {
  const bban = [...spec]
    .map((c) => (c === 'n' ? digits(r, 1) : chars(r, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 1)))
    .join('')
  const check = String(98 - ibanRemainder(`${country}00${bban}`)).padStart(2, '0')
  return `${country}${check}${bban}`
}

function date(r: Rand, from: number, to: number): { y: number; m: number; d: number } {
  const t = Date.UTC(from, 0, 1) + Math.floor(r() * (Date.UTC(to, 0, 1) - Date.UTC(from, 0, 1)))
  const x = new Date(t)
  return { y: x.getUTCFullYear(), m: x.getUTCMonth() + 1, d: x.getUTCDate() }
}

const p2 = (n: number) => String(n).padStart(2, '0')

function fnr(r: Rand, variant: 'plain' | 'd' | 'h'): string {
  for (;;) {
    const { y, m, d } = date(r, 1940, 2024)
    const individual = y >= 2000 ? 500 + Math.floor(r() * 500) : Math.floor(r() * 500)
    const day = variant === 'd' ? d + 40 : d
    const month = variant === 'h' ? m + 40 : m
    const nine = `${p2(day)}${p2(month)}${p2(y % 100)}${String(individual).padStart(3, '0')}`
    for (let k = 0; k < 100; k++) {
      const candidate = `${nine}${p2(k)}`
      if (validFodselsnummer(candidate)) return candidate
    }
  }
}

function personnummer(r: Rand): string {
  for (;;) {
    const { y, m, d } = date(r, 1940, 2010)
    const nine = `${p2(y % 100)}${p2(m)}${p2(d)}${digits(r, 3)}`
    const ten = luhnComplete(nine)
    const text =
      r() < 0.7 ? `${ten.slice(0, 6)}-${ten.slice(6)}` : `${y}${p2(m)}${p2(d)}-${ten.slice(6)}`
    if (validPersonnummer(text)) return text
  }
}

function ssn(r: Rand): string {
  for (;;) {
    const area = 1 + Math.floor(r() * 899)
    if (area === 666) continue
    const group = 1 + Math.floor(r() * 99)
    const serial = 1 + Math.floor(r() * 9999)
    const text = `${String(area).padStart(3, '0')}-${p2(group)}-${String(serial).padStart(4, '0')}`
    if (!['078-05-1120', '219-09-9999', '123-45-6789', '111-11-1111'].includes(text)) return text
  }
}

function pem(r: Rand): string {
  const label = pick(r, ['RSA PRIVATE KEY', 'PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY'])
  const lines = Array.from({ length: 4 + Math.floor(r() * 20) }, () => chars(r, B64, 64))
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n${chars(r, B64, 20)}==\n-----END ${label}-----`
}

function jwt(r: Rand): string {
  const header = b64url(JSON.stringify({ alg: pick(r, ['HS256', 'RS256', 'ES256']), typ: 'JWT' }))
  const payload = b64url(
    JSON.stringify({
      sub: chars(r, ALNUM, 10),
      iat: 1_700_000_000 + Math.floor(r() * 1e7),
      name: 'Ada',
    }),
  )
  return `${header}.${payload}.${chars(r, B64URL, 43)}`
}

/** One generated secret and the kind its detector reports. */
export interface Generated {
  kind: string
  value: string
  /** The text around it in a realistic line, `$` marking the value. */
  line: string
}

/** Generators of every built-in kind: a value and a realistic line it sits in. */
export const GENERATORS: Record<string, (r: Rand) => Generated> = {
  'openai-key': (r) => {
    const value =
      r() < 0.5
        ? `sk-proj-${chars(r, B64URL, 74)}T3BlbkFJ${chars(r, B64URL, 74)}`
        : `sk-${chars(r, ALNUM, 20)}T3BlbkFJ${chars(r, ALNUM, 20)}`
    return { kind: 'openai-key', value, line: 'export OPENAI_API_KEY="$"' }
  },
  'anthropic-key': (r) => ({
    kind: 'anthropic-key',
    value: `sk-ant-api03-${chars(r, B64URL, 93)}AA`,
    line: 'client = Anthropic(api_key="$")',
  }),
  'github-token': (r) => {
    const random = chars(r, ALNUM, 30)
    const value = `${pick(r, ['ghp', 'gho', 'ghu', 'ghs', 'ghr'])}_${random}${githubChecksum(random)}`
    return {
      kind: 'github-token',
      value,
      line: 'git clone https://x-access-token@github.com/acme/app # token $',
    }
  },
  'github-pat': (r) => ({
    kind: 'github-token',
    value: `github_pat_${chars(r, ALNUM, 22)}_${chars(r, ALNUM, 59)}`,
    line: 'GITHUB_TOKEN=$',
  }),
  'stripe-key': (r) => ({
    kind: 'stripe-key',
    value: `${pick(r, ['sk_live_', 'rk_live_', 'sk_test_'])}${mixed(r, ALNUM, 24 + Math.floor(r() * 76))}`,
    line: "const stripe = new Stripe('$')",
  }),
  'slack-token': (r) => ({
    kind: 'slack-token',
    value: `xoxb-${digits(r, 12)}-${digits(r, 13)}-${chars(r, ALNUM, 24)}`,
    line: 'SLACK_BOT_TOKEN=$',
  }),
  'google-api-key': (r) => ({
    kind: 'google-api-key',
    value: `AIza${chars(r, B64URL, 35)}`,
    line: 'https://maps.googleapis.com/maps/api/geocode/json?address=Oslo&key=$',
  }),
  'aws-access-key-id': (r) => ({
    kind: 'aws-access-key-id',
    value: `${pick(r, ['AKIA', 'ASIA'])}${chars(r, B32, 16)}`,
    line: 'aws_access_key_id = $',
  }),
  'aws-secret-access-key': (r) => ({
    kind: 'aws-secret-access-key',
    value: mixed(r, B64, 40),
    line: 'aws_secret_access_key = $',
  }),
  'cloudflare-api-token': (r) => ({
    kind: 'cloudflare-api-token',
    value: mixed(r, B64URL, 40),
    line: 'CLOUDFLARE_API_TOKEN=$ npx wrangler deploy',
  }),
  'private-key': (r) => ({
    kind: 'private-key',
    value: pem(r),
    line: 'Here is the key:\n$\nkeep it safe',
  }),
  'private-key-escaped': (r) => ({
    kind: 'private-key',
    value: pem(r).replace(/\n/g, '\\n'),
    line: '{"type": "service_account", "private_key": "$", "client_email": "ci@acme.iam"}',
  }),
  jwt: (r) => ({ kind: 'jwt', value: jwt(r), line: 'Authorization: Bearer $' }),
  'url-password': (r) => ({
    kind: 'url-password',
    value: mixed(r, `${ALNUM}!*~`, 8 + Math.floor(r() * 20)),
    line: `DATABASE_URL=postgres://app_user:$@db.internal:5432/app`,
  }),
  'card-number': (r) => {
    const [prefix, length] = pick(r, CARD_PREFIXES)
    const number = luhnComplete(prefix + digits(r, length - prefix.length - 1))
    const value = r() < 0.5 ? number : group(number, pick(r, [' ', '-']))
    return { kind: 'card-number', value, line: 'Please charge card $ exp 09/29 for the order.' }
  },
  iban: (r) => {
    const [country, spec] = pick(r, IBAN_SPECS)
    const compact = ibanFrom(r, country, spec)
    const value = r() < 0.5 ? compact : compact.match(/.{1,4}/g)!.join(' ')
    return { kind: 'iban', value, line: 'Transfer to IBAN $ by Friday.' }
  },
  'no-fodselsnummer': (r) => ({
    kind: 'no-fodselsnummer',
    value: fnr(r, pick(r, ['plain', 'plain', 'd', 'h'] as const)),
    line: 'Fødselsnummer: $ (pasient)',
  }),
  'se-personnummer': (r) => ({
    kind: 'se-personnummer',
    value: personnummer(r),
    line: 'Personnummer $ registrerat.',
  }),
  'us-ssn': (r) => ({ kind: 'us-ssn', value: ssn(r), line: 'SSN: $ on file' }),
}

/** Hard negatives: near misses of every kind and ordinary look-alikes (hashes, UUIDs, base64). */
export const NEGATIVES: Record<string, (r: Rand) => string> = {
  sha1: (r) => `commit ${chars(r, '0123456789abcdef', 40)}`,
  sha256: (r) => `sha256:${chars(r, '0123456789abcdef', 64)}`,
  uuid: (r) =>
    `id=${chars(r, '0123456789abcdef', 8)}-${chars(r, '0123456789abcdef', 4)}-4${chars(r, '0123456789abcdef', 3)}-a${chars(r, '0123456789abcdef', 3)}-${chars(r, '0123456789abcdef', 12)}`,
  base64Blob: (r) => `data:image/png;base64,${chars(r, B64, 120)}==`,
  longIdent: (r) =>
    `const ${pick(r, ['requestHandlerFactoryProvider', 'AbstractSingletonProxyFactoryBean'])}${chars(r, ALNUM, 12)} = 1`,
  logLine: (r) =>
    `2026-11-30T12:${p2(Math.floor(r() * 60))}:00Z INFO req=${chars(r, '0123456789abcdef', 16)} took ${Math.floor(r() * 900)}ms status=200 bytes=${digits(r, 7)}`,
  cardBadLuhn: (r) => {
    const number = luhnComplete(`4${digits(r, 14)}`)
    const last = (Number(number.at(-1)) + 1 + Math.floor(r() * 9)) % 10
    return `order ${number.slice(0, -1)}${last} shipped`
  },
  cardUnknownIssuer: (r) => `ref ${luhnComplete(`9${digits(r, 14)}`)}`,
  ibanBadCheck: (r) => {
    const good = ibanFrom(r, 'DE', 'nnnnnnnnnnnnnnnnnn')
    const check = String(
      ((Number(good.slice(2, 4)) - 2 + 1 + Math.floor(r() * 90)) % 97) + 2,
    ).padStart(2, '0')
    return `account ${good.slice(0, 2)}${check}${good.slice(4)}`
  },
  fnrBadControl: (r) => {
    const good = fnr(r, 'plain')
    return `nr ${good.slice(0, 10)}${(Number(good[10]) + 1 + Math.floor(r() * 9)) % 10}`
  },
  fnrBadDate: (r) => `nr 3102${digits(r, 7)}`,
  elevenDigits: (r) => `phone +47 ${digits(r, 8)}, order ${digits(r, 11)}`,
  ssnRules: (r) => `case ${pick(r, ['000', '666', '912'])}-${digits(r, 2)}-${digits(r, 4)}`,
  githubBadCrc: (r) => {
    const random = chars(r, ALNUM, 30)
    return `ghp_${random}${base62((crc32(random) + 7) >>> 0, 6)}`
  },
  openAiNoMarker: (r) => `sk-${chars(r, ALNUM, 48)}`,
  jwtNotJson: (r) => `eyJ${chars(r, B64URL, 30)}.${chars(r, B64URL, 40)}.${chars(r, B64URL, 43)}`,
  urlPlaceholder: (r) =>
    `postgres://user:${pick(r, ['password', '$' + '{DB_PASS}', '****', '<password>'])}@localhost/db`,
  awsNoContext: (r) => `path ${mixed(r, B64, 40)} in the cache`,
  cloudflareNoContext: (r) => `build ${mixed(r, B64URL, 40)} finished`,
  versionNumbers: (r) =>
    `v${Math.floor(r() * 20)}.${Math.floor(r() * 100)}.${Math.floor(r() * 100)} released ${2000 + Math.floor(r() * 30)}-${p2(1 + Math.floor(r() * 12))}-${p2(1 + Math.floor(r() * 28))}`,
  prose: (r) =>
    pick(r, [
      'The committee met on 12 March 2024 and approved budget line 4411-2093 for 1,250,000 NOK.',
      'Call the office at 555-0134 or +1 (415) 555-0199 between 9 and 5.',
      'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.',
      'Invoice 2024-000193 totals 13 450,00 kr; due 2024-12-31.',
      'ISBN 978-3-16-148410-0 and ISSN 0317-8471 are cited in chapter 7.',
    ]),
}

/**
 * Units of text built against the detectors, each repeated into a long input: runs of each format's
 * alphabet after each prefix, with and without separators, repeated headers with no END, digits with
 * every separator. A detector that backtracks (quadratic or worse) takes minutes on 1 MB of one; a
 * linear one milliseconds.
 */
export const ADVERSARIAL_UNITS = [
  'a',
  'A',
  '1',
  '1 ',
  '1-',
  '12 ',
  'sk-',
  'sk-proj-',
  'sk-ant-api03-',
  'ghp_',
  'github_pat_',
  'xoxb-1-',
  'AIza',
  'AKIA',
  'aws ',
  'Aa1',
  'Aa1_',
  'Aa1/',
  'eyJ',
  'eyJhbGciOiJub25lIn0.',
  'a.',
  'a://a:a@',
  '://:',
  '-----BEGIN PRIVATE KEY-----\n',
  'GB82 ',
  'GB82',
  'NO93 8601 ',
  '811218-',
  '0101',
  '123-45-',
  '4242 ',
  'cloudflare ',
] as const

/** `unit` repeated to exactly `length` characters (the last repetition cut). */
export function adversarialInput(unit: string, length: number): string {
  return unit.repeat(Math.ceil(length / unit.length)).slice(0, length)
}

/**
 * The costliest operator pattern the rule allows (src/plugins/secrets/operator-pattern.ts): a run of
 * letters after letters, tried at every start.
 */
export const WORST_ALLOWED_OPERATOR = {
  name: 'worst-allowed',
  pattern: '[a-z]{1,8}[a-z0-9]{1,16}x',
}
