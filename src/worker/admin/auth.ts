/**
 * @module Console auth: the bearer secret for scripts, a signed expiring session cookie for browsers,
 * CSRF tokens bound to the session, and a per-isolate brake on login guesses.
 */
import { constantTimeEqual } from '../../crypto/bytes'

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

/** A verified session: its expiry and the token its forms must send back. */
export interface Session {
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
 * another secret, or expired at `now`.
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
  return { expires, csrf: await mac(secret, 'csrf', nonce) }
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

/** Failed logins per client within {@link LOGIN_WINDOW_MS}, per isolate. */
const LOGIN_FAILURES_ALLOWED = 5
/** The window failed logins are counted in. */
const LOGIN_WINDOW_MS = 60_000
/** Failures across every client per window before the isolate refuses all logins for its rest. */
const LOGIN_FAILURES_GLOBAL = 50

/**
 * A brake on guessing ADMIN_SECRET: five failures per client address per minute, fifty per isolate.
 * Per isolate only (Workers spread load over many), so it slows a guesser rather than stopping one:
 * the secret's length is what makes guessing hopeless; this keeps logs and CPU quiet.
 *
 * @example
 * const limiter = new LoginLimiter()
 * if (limiter.blocked(ip, now)) return c.text('Too many attempts', 429)
 */
export class LoginLimiter {
  #clients = new Map<string, { start: number; failures: number }>()
  #global = { start: 0, failures: 0 }

  /** ms until `client` may try again, or 0. */
  retryAfter(client: string, now: number): number {
    const global = this.#global
    if (now - global.start < LOGIN_WINDOW_MS && global.failures >= LOGIN_FAILURES_GLOBAL) {
      return global.start + LOGIN_WINDOW_MS - now
    }
    const entry = this.#clients.get(client)
    if (!entry || now - entry.start >= LOGIN_WINDOW_MS) return 0
    return entry.failures >= LOGIN_FAILURES_ALLOWED ? entry.start + LOGIN_WINDOW_MS - now : 0
  }

  /** Counts one failed attempt. */
  fail(client: string, now: number): void {
    if (now - this.#global.start >= LOGIN_WINDOW_MS) this.#global = { start: now, failures: 0 }
    this.#global.failures++
    let entry = this.#clients.get(client)
    if (!entry || now - entry.start >= LOGIN_WINDOW_MS) {
      // Bounded: an attacker rotating addresses fills the map at most to the global cap per window.
      if (this.#clients.size > LOGIN_FAILURES_GLOBAL * 4) this.#clients.clear()
      entry = { start: now, failures: 0 }
      this.#clients.set(client, entry)
    }
    entry.failures++
  }
}
