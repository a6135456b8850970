/**
 * @module Console auth: the bearer secret for scripts, a signed expiring session cookie for browsers
 * (honoured while its record lives, ./sessions.ts), CSRF tokens bound to the session, and a brake on
 * login guesses that slows only the guessing client.
 */
import { constantTimeEqual } from '../../core'

/**
 * The session cookie's name. Not `__Host-`: that prefix forces `Path=/`, which would send the admin
 * session with every model request too; the value is signed, so a cookie tossed in from a sibling
 * subdomain cannot forge a session, only fail to verify.
 *
 * @example
 * `${SESSION_COOKIE}=${value}`
 */
const SESSION_COOKIE = 'guard_admin'

/**
 * How long a session lasts: a working day. The expiry is inside the signed value, so a cookie kept past
 * its `Max-Age` (a copied header, a browser that ignores it) is refused all the same.
 *
 * @example
 * const expires = now + SESSION_TTL_MS
 */
const SESSION_TTL_MS = 8 * 60 * 60 * 1000

/** The form field and header that carry the CSRF token. */
export const CSRF_FIELD = '_csrf'

/**
 * A verified session: its record's id (the SHA-256 of its nonce: a store that leaks holds no cookie),
 * its expiry and the token its forms must send back.
 */
export interface Session {
  id: string
  expires: number
  csrf: string
}

const utf8 = new TextEncoder()
const keys = new Map<string, Promise<CryptoKey>>()

/**
 * The session key: HMAC-SHA-256 under a key derived from ADMIN_SECRET with its own label, so a session
 * MAC is never a MAC any other part of the guard computes, and rotating the secret ends every session.
 */
function sessionKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret)
  if (!key) {
    key = (async () => {
      const root = await crypto.subtle.importKey(
        'raw',
        utf8.encode(secret),
        { name: 'HMAC', hash: 'SHA-256' },
        false,
        ['sign'],
      )
      const derived = await crypto.subtle.sign(
        'HMAC',
        root,
        utf8.encode('workers-ai-guard/admin-session/v1'),
      )
      return crypto.subtle.importKey('raw', derived, { name: 'HMAC', hash: 'SHA-256' }, false, [
        'sign',
      ])
    })()
    // One secret per deployment: the map holds one entry, two while a secret is being rotated.
    if (keys.size > 4) keys.clear()
    keys.set(secret, key)
  }
  return key
}

async function mac(secret: string, label: string, data: string): Promise<string> {
  const sig = await crypto.subtle.sign(
    'HMAC',
    await sessionKey(secret),
    utf8.encode(`${label}\0${data}`),
  )
  return base64url(new Uint8Array(sig))
}

function base64url(bytes: Uint8Array): string {
  let binary = ''
  for (const b of bytes) binary += String.fromCharCode(b)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/**
 * A new session value: `v1.<expires ms>.<nonce>.<mac>`. The nonce makes every login's value (and CSRF
 * token) distinct.
 *
 * @example
 * const value = await mintSession(env.ADMIN_SECRET, Date.now())
 */
export async function mintSession(secret: string, now: number): Promise<string> {
  const nonce = base64url(crypto.getRandomValues(new Uint8Array(16)))
  const body = `v1.${now + SESSION_TTL_MS}.${nonce}`
  return `${body}.${await mac(secret, 'session', body)}`
}

/**
 * The session a cookie value stands for, or undefined when it is malformed, tampered with, signed under
 * another secret, or expired at `now`. Whether it is still recorded (not logged out) is the session
 * store's to say (./sessions.ts).
 *
 * @example
 * const session = await verifySession(env.ADMIN_SECRET, cookieValue, Date.now())
 */
export async function verifySession(
  secret: string,
  value: string | undefined,
  now: number,
): Promise<Session | undefined> {
  if (!value || value.length > 200) return undefined
  const match = /^(v1\.(\d{1,16})\.([A-Za-z0-9_-]{22}))\.([A-Za-z0-9_-]{43})$/.exec(value)
  if (!match) return undefined
  const [, body, expiresText, nonce, given] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
  ]
  if (!constantTimeEqual(await mac(secret, 'session', body), given)) return undefined
  const expires = Number(expiresText)
  if (!(expires > now)) return undefined
  return { id: await digest(nonce), expires, csrf: await mac(secret, 'csrf', nonce) }
}

async function digest(text: string): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(text)))
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/**
 * The `Set-Cookie` value of a session. `Secure` (browsers accept it on http://localhost too),
 * `HttpOnly` (no script reads it), `SameSite=Strict` (no cross-site request carries it), and scoped to
 * `/admin`.
 *
 * @example
 * c.header('set-cookie', sessionCookie(value))
 */
export function sessionCookie(value: string): string {
  const maxAge = Math.floor(SESSION_TTL_MS / 1000)
  return `${SESSION_COOKIE}=${value}; Max-Age=${maxAge}; Path=/admin; HttpOnly; Secure; SameSite=Strict`
}

/**
 * The `Set-Cookie` value that ends a session in the browser.
 *
 * @example
 * c.header('set-cookie', clearedCookie())
 */
export function clearedCookie(): string {
  return `${SESSION_COOKIE}=; Max-Age=0; Path=/admin; HttpOnly; Secure; SameSite=Strict`
}

/**
 * The session cookie's value in a `Cookie` header (the first one of that name).
 *
 * @example
 * readCookie(c.req.header('cookie'))
 */
export function readCookie(header: string | undefined): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim()
  }
  return undefined
}

/**
 * Whether `Authorization` carries exactly the admin secret as a bearer token (compared in constant time).
 *
 * @example
 * bearerMatches(c.req.header('authorization'), env.ADMIN_SECRET)
 */
export function bearerMatches(header: string | undefined, secret: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return match !== null && constantTimeEqual(match[1]!, secret)
}

/**
 * Whether a state-changing browser request comes from the console's own pages: `Sec-Fetch-Site`, when
 * sent, says same-origin, and `Origin`, when sent, names this origin. Browsers send both on every form
 * POST; a cross-site form, fetch or frame fails one of them before its token is even read.
 *
 * @example
 * if (!sameOrigin(c.req.raw)) return forbidden()
 */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin')
  const site = request.headers.get('sec-fetch-site')
  if (site !== null && site !== 'same-origin') return false
  // Under `Referrer-Policy: no-referrer` browsers send `Origin: null` on a form POST, even to their own
  // origin; `Sec-Fetch-Site: same-origin` (which no page can forge) then vouches for it.
  if (origin === 'null') return site === 'same-origin'
  if (origin !== null) {
    const own = new URL(request.url)
    let given: URL
    try {
      given = new URL(origin)
    } catch {
      return false
    }
    // The Host header is what the browser connected to; the URL is what the runtime reconstructed
    // (the same in production), so either naming it is enough.
    if (given.host !== own.host && given.host !== request.headers.get('host')) return false
  }
  return true
}

/** Failed logins per client within {@link LOGIN_WINDOW_MS} before that client waits. */
const LOGIN_FAILURES_ALLOWED = 5
/** The window failed logins are counted in. */
const LOGIN_WINDOW_MS = 60_000
/**
 * Clients whose failures are remembered per isolate (about 100 bytes each, 1 MB in all). Past it the
 * least recently failed is forgotten first: to free a guesser's place, others must fail from this many
 * distinct addresses (or IPv6 /64s) after it, each failure a request of their own.
 */
const LOGIN_CLIENTS_KEPT = 10_000

/**
 * A brake on guessing ADMIN_SECRET that slows only the client that fails: five failures per client
 * address (an IPv6 client by its /64, which any one host is given whole) per minute, then that client
 * waits out the minute. There is no isolate-wide cap: failures from other addresses never refuse a
 * client that has not failed, so no one can lock the operator out. Per isolate (Workers spread load
 * over many), so it slows a guesser rather than stopping one: the secret's length is what makes
 * guessing hopeless; this keeps logs and CPU quiet.
 *
 * @example
 * const limiter = new LoginLimiter()
 * if (limiter.retryAfter(ip, now) > 0) return c.text('Too many attempts', 429)
 */
export class LoginLimiter {
  /** Failures per client, least recently failed first (a Map keeps insertion order). */
  readonly #clients = new Map<string, { start: number; failures: number }>()
  readonly #capacity: number

  constructor(capacity = LOGIN_CLIENTS_KEPT) {
    this.#capacity = capacity
  }

  /** ms until `address` may try again, or 0. */
  retryAfter(address: string, now: number): number {
    const entry = this.#clients.get(clientOf(address))
    if (!entry || now - entry.start >= LOGIN_WINDOW_MS) return 0
    return entry.failures >= LOGIN_FAILURES_ALLOWED ? entry.start + LOGIN_WINDOW_MS - now : 0
  }

  /** Counts one failed attempt from `address`. */
  fail(address: string, now: number): void {
    const client = clientOf(address)
    let entry = this.#clients.get(client)
    if (!entry || now - entry.start >= LOGIN_WINDOW_MS) entry = { start: now, failures: 0 }
    entry.failures++
    // Re-inserted: the map's first entry is always the least recently failed, the one to forget.
    this.#clients.delete(client)
    this.#clients.set(client, entry)
    if (this.#clients.size > this.#capacity) {
      const oldest = this.#clients.keys().next().value
      if (oldest !== undefined) this.#clients.delete(oldest)
    }
  }
}

/**
 * The client an address stands for: an IPv4 address itself, an IPv6 address its /64 (the first four
 * groups, expanded), so a host cannot spread its guesses over the 2^64 addresses it was given.
 */
function clientOf(address: string): string {
  // IPv4, and IPv4 written as IPv6 (`::ffff:192.0.2.1`): the address alone.
  if (address.includes('.')) return address.slice(address.lastIndexOf(':') + 1)
  if (!address.includes(':')) return address
  const [head = '', tail = ''] = address.toLowerCase().split('%')[0]!.split('::')
  const groups = head === '' ? [] : head.split(':')
  if (groups.length < 4 && address.includes('::')) {
    const after = tail === '' ? [] : tail.split(':')
    const missing = 8 - groups.length - after.length
    groups.push(...Array<string>(Math.max(0, missing)).fill('0'), ...after)
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}
