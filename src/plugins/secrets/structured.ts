/**
 * @module Detectors of secrets with a structure to check: PEM private-key blocks (the whole block,
 * BEGIN to END), JSON Web Tokens (three base64url parts whose header decodes to a JSON object with an
 * `alg`), and the password of a URL's `user:password@` part.
 */
import {
  KEY_RUN,
  regexDetector,
  type SecretDetector,
  type SecretSpan,
  tokenEnd,
  tokenStart,
} from './detector'

/** The largest PEM block taken whole (an RSA-8192 key is ~6.5 KB; longer is not one key). */
const MAX_PEM = 16_384

/** Up to three label words of up to 16 characters: bounded, so a stand-in's length is too. */
const PEM_BEGIN = /-----BEGIN ((?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?)-----/g
/** A block with no END is taken through this run of base64 and newlines (real or escaped). */
const PEM_RUN = /(?:[A-Za-z0-9+/=\s]|\\[nr]){64,16384}/y
const PEM_LINE = /^(?:[A-Za-z0-9+/=]*|[A-Za-z-]+: .*)$/

/** A PEM body: lines of base64, RFC 1421 headers (`Proc-Type:`, `DEK-Info:`), escaped newlines. */
function pemBody(body: string): boolean {
  return body.split(/\r?\n|(?:\\r)?\\n/).every((line) => PEM_LINE.test(line.trim()))
}

/**
 * PEM private keys: `-----BEGIN … PRIVATE KEY-----` to its matching END line (RSA, EC, DSA, OpenSSH,
 * encrypted PKCS#8, PGP blocks), with at least 64 base64 characters between. A block whose END is
 * missing (a truncated paste) is taken to the end of its base64 run.
 */
const privateKey: SecretDetector = {
  kind: 'private-key',
  confidence: 'high',
  find(text) {
    const spans: SecretSpan[] = []
    const re = new RegExp(PEM_BEGIN.source, 'g')
    // The next END of each label, found once and reused while it lies ahead: a text of many BEGIN
    // lines and no END costs one search per label, not one per BEGIN (which would be quadratic).
    const nextEnd = new Map<string, number>()
    let m = re.exec(text)
    while (m !== null) {
      const bodyStart = m.index + m[0].length
      const footer = `-----END ${m[1]}-----`
      let endAt = nextEnd.get(footer)
      if (endAt === undefined || (endAt !== -1 && endAt < bodyStart)) {
        endAt = text.indexOf(footer, bodyStart)
        nextEnd.set(footer, endAt)
      }
      let end = -1
      if (endAt !== -1 && endAt - m.index <= MAX_PEM) {
        if (pemBody(text.slice(bodyStart, endAt))) end = endAt + footer.length
      } else {
        PEM_RUN.lastIndex = bodyStart
        const run = PEM_RUN.exec(text)
        if (run) end = bodyStart + run[0].trimEnd().length
      }
      if (end !== -1 && base64Count(text, bodyStart, end) >= 64) {
        spans.push({ kind: 'private-key', start: m.index, end })
        re.lastIndex = end
      }
      m = re.exec(text)
    }
    return spans
  },
}

function base64Count(text: string, start: number, end: number): number {
  let n = 0
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i)
    if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57)) n++
  }
  return n
}

/**
 * Decodes base64url (no padding) to a string, or undefined when it is not base64url.
 *
 * @example
 * decodeBase64Url('eyJhbGciOiJIUzI1NiJ9') // '{"alg":"HS256"}'
 */
export function decodeBase64Url(part: string): string | undefined {
  if (part.length % 4 === 1) return undefined
  try {
    const binary = atob(part.replace(/-/g, '+').replace(/_/g, '/'))
    const bytes = new Uint8Array(binary.length)
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    return undefined
  }
}

function jsonObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

/**
 * JWTs (JWS compact form): header and payload decode to JSON objects, the header names its `alg`, and
 * a signature is present unless `alg` is `none`.
 */
const jwt = regexDetector(
  'jwt',
  'high',
  new RegExp(
    `${tokenStart()}eyJ[A-Za-z0-9_-]{8,2000}\\.[A-Za-z0-9_-]{2,8000}\\.[A-Za-z0-9_-]{0,2000}${tokenEnd(KEY_RUN)}`,
    'g',
  ),
  (m) => {
    const [header, payload, signature] = m[0].split('.') as [string, string, string]
    const alg = jsonObject(decodeBase64Url(header))?.alg
    if (typeof alg !== 'string') return false
    if (jsonObject(decodeBase64Url(payload)) === undefined) return false
    return alg === 'none' || signature.length >= 16
  },
)

/** Passwords that are placeholders in documentation and templates, not secrets. */
const PLACEHOLDER =
  /^(?:password|passwd|pass|pwd|secret|changeme|example|\*+|x+|\.+|<[^>]*>|\$\{[^}]*\}|\{\{[^}]*\}\}|\$[A-Za-z_]\w*|%s|\[[^\]]*\])$/i

/**
 * Credentials in URLs: `scheme://user:password@host` — the span is the password only (the user name
 * is kept: the model may need it, and alone it opens nothing). Placeholders (`password`, `***`,
 * `${DB_PASS}`, `<pass>`) are not secrets.
 */
const urlCredentials = regexDetector(
  'url-password',
  'high',
  // Anchored on `://`, the scheme checked by hand: a look-behind for it would be tried (and
  // backtracked through) at every position of the text.
  /:\/\/[^\s:@/?#'"<>]{0,128}:[^\s@/?#'"<>]{1,256}@(?=[A-Za-z0-9[])/g,
  (m, text) => {
    if (!schemeBefore(text, m.index)) return false
    const colon = m[0].indexOf(':', 3)
    const password = m[0].slice(colon + 1, -1)
    return !PLACEHOLDER.test(password)
  },
)

/**
 * Whether a URL scheme (a letter, then up to 15 of letters, digits, `+ . -`) ends at `offset`. It
 * may follow anything, an escape ending in a letter or digit included (`\npostgres://`,
 * `%3Dpostgres://`): any letter of the run before `://` can start one.
 */
function schemeBefore(text: string, offset: number): boolean {
  for (let i = offset - 1; i >= 0 && offset - i <= 16; i--) {
    const c = text[i]!
    if (/[A-Za-z]/.test(c)) return true
    if (!/[0-9+.-]/.test(c)) return false
  }
  return false
}

/** The URL detector matched `://user:password@`; its span is narrowed to the password. */
const urlPassword: SecretDetector = {
  kind: urlCredentials.kind,
  confidence: urlCredentials.confidence,
  find(text) {
    return urlCredentials.find(text).map((span) => {
      const colon = text.indexOf(':', span.start + 3)
      return { kind: span.kind, start: colon + 1, end: span.end - 1 }
    })
  },
}

/**
 * The structured detectors: PEM private keys, JWTs, URL passwords.
 *
 * @example
 * findSecrets(text, structuredDetectors())
 */
export function structuredDetectors(): SecretDetector[] {
  return [privateKey, jwt, urlPassword]
}
