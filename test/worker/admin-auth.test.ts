import { env, SELF } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { mintSession } from '../../src/worker/admin/auth'
import { STYLE_PATH } from '../../src/worker/admin/style'
import { ADMIN, KEY_A } from '../support/worker'

/** The login cookie's name and lifetime, as docs/console.md ("Login") states them. */
const SESSION_COOKIE = 'guard_admin'
const SESSION_TTL_MS = 8 * 60 * 60 * 1000
/** The Content-Security-Policy of every admin response, as docs/console.md ("Headers") states it. */
const ADMIN_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const BASE = 'http://guard.test'
const HTML = { accept: 'text/html,application/xhtml+xml' }
/** Every console page and API route; none may answer without a session or the bearer secret. */
const PAGES = ['/admin/', '/admin/incidents', '/admin/incidents/inc_missing']
const API = ['/admin/incidents', '/admin/incidents/inc_missing', '/admin/stats', '/admin/metrics']

function fetchAdmin(path: string, init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(`${BASE}${path}`, { redirect: 'manual', ...init })
}

/** Logs in through the form as a browser would; resolves with the session cookie's value. */
async function login(client = '198.51.100.1'): Promise<string> {
  const res = await fetchAdmin('/admin/login', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: BASE,
      'sec-fetch-site': 'same-origin',
      'cf-connecting-ip': client,
    },
    body: new URLSearchParams({ secret: ADMIN, next: '/admin/incidents' }),
  })
  expect(res.status).toBe(303)
  expect(res.headers.get('location')).toBe('/admin/incidents')
  const cookie = res.headers.get('set-cookie') ?? ''
  return /guard_admin=([^;]+)/.exec(cookie)![1]!
}

/** The CSRF token a page's logout form carries for this session. */
async function csrfOf(session: string): Promise<string> {
  const page = await (
    await fetchAdmin('/admin/incidents', {
      headers: { ...HTML, cookie: `${SESSION_COOKIE}=${session}` },
    })
  ).text()
  return /name="_csrf" value="([^"]+)"/.exec(page)![1]!
}

/** Records a minted session as a login does (its row in the D1 the Worker checks). */
async function record(value: string): Promise<void> {
  const [, expires, nonce] = value.split('.') as [string, string, string]
  const digest = new Uint8Array(
    await crypto.subtle.digest('SHA-256', new TextEncoder().encode(nonce)),
  )
  const id = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
  await (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB.prepare(
    'INSERT INTO admin_sessions (id, expires) VALUES (?, ?)',
  )
    .bind(id, Number(expires))
    .run()
}

function logout(session: string, fields: Record<string, string>, headers: Record<string, string>) {
  return fetchAdmin('/admin/logout', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: `${SESSION_COOKIE}=${session}`,
      ...headers,
    },
    body: new URLSearchParams(fields),
  })
}

describe('console auth', () => {
  it('should send a browser without a session to the login page, and give scripts a 401', async () => {
    for (const path of PAGES) {
      const res = await fetchAdmin(path, { headers: HTML })
      expect([path, res.status]).toEqual([path, 303])
      expect(res.headers.get('location')).toBe(`/admin/login?next=${encodeURIComponent(path)}`)
    }
    for (const path of API) {
      for (const headers of <Record<string, string>[]>[
        {},
        { authorization: `Bearer ${KEY_A}` },
        { cookie: 'guard_admin=x' },
      ]) {
        const res = await fetchAdmin(path, { headers })
        expect([path, res.status]).toEqual([path, 401])
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized')
      }
    }
  })

  it('should serve every page and route to the bearer secret, pages as HTML and the API as JSON', async () => {
    for (const path of PAGES) {
      const res = await fetchAdmin(path, { headers: { ...HTML, authorization: `Bearer ${ADMIN}` } })
      expect([path, res.status]).toEqual([path, path.endsWith('missing') ? 404 : 200])
      expect(res.headers.get('content-type')).toContain('text/html')
      // A bearer request has no session: no logout form, no CSRF token on the page.
      expect(await res.text()).not.toContain('_csrf')
    }
    for (const path of API) {
      const res = await fetchAdmin(path, { headers: { authorization: `Bearer ${ADMIN}` } })
      expect([path, res.status]).toEqual([path, path.endsWith('missing') ? 404 : 200])
      expect(res.headers.get('content-type')).not.toContain('text/html')
    }
  })

  it('should set an HttpOnly, Secure, SameSite=Strict session cookie scoped to /admin', async () => {
    const res = await fetchAdmin('/admin/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: BASE },
      body: new URLSearchParams({ secret: ADMIN }),
    })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/admin/')
    const attributes = (res.headers.get('set-cookie') ?? '').split(';').map((a) => a.trim())
    expect(attributes[0]).toMatch(/^guard_admin=v1\.\d+\.[\w-]{22}\.[\w-]{43}$/)
    expect(attributes.slice(1).sort()).toEqual(
      [
        'HttpOnly',
        `Max-Age=${SESSION_TTL_MS / 1000}`,
        'Path=/admin',
        'SameSite=Strict',
        'Secure',
      ].sort(),
    )
  })

  it('should let a session read pages and the JSON API', async () => {
    const session = await login('198.51.100.2')
    const cookie = `${SESSION_COOKIE}=${session}`
    for (const path of PAGES) {
      const res = await fetchAdmin(path, { headers: { ...HTML, cookie } })
      expect([path, res.status]).toEqual([path, path.endsWith('missing') ? 404 : 200])
    }
    for (const path of API) {
      const res = await fetchAdmin(path, { headers: { cookie } })
      expect([path, res.status]).toEqual([path, path.endsWith('missing') ? 404 : 200])
    }
  })

  it('should refuse a wrong secret, an off-site next, and a cross-site login form', async () => {
    const form = (secret: string, next = '/admin/') => new URLSearchParams({ secret, next })
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      'cf-connecting-ip': '198.51.100.3',
    }
    const wrong = await fetchAdmin('/admin/login', { method: 'POST', headers, body: form('nope') })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('set-cookie')).toBeNull()
    expect(await wrong.text()).toContain('Wrong admin secret.')
    for (const next of [
      'https://evil.test/',
      '//evil.test/admin',
      '/v1/chat/completions',
      '/admin\\@evil',
      '/admin/x\r\nset-cookie: a=b',
      '/administrator',
    ]) {
      const res = await fetchAdmin('/admin/login', {
        method: 'POST',
        headers,
        body: form(ADMIN, next),
      })
      expect([next, res.headers.get('location')]).toEqual([next, '/admin/'])
    }
    for (const site of <Record<string, string>[]>[
      { origin: 'https://evil.test' },
      { 'sec-fetch-site': 'cross-site' },
    ]) {
      const res = await fetchAdmin('/admin/login', {
        method: 'POST',
        headers: { ...headers, ...site },
        body: form(ADMIN),
      })
      expect(res.status).toBe(403)
      expect(res.headers.get('set-cookie')).toBeNull()
    }
  })

  it('should slow guessing: the sixth failure a minute from one client is refused, even with the right secret', async () => {
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      'cf-connecting-ip': '203.0.113.9',
    }
    for (let i = 0; i < 5; i++) {
      const res = await fetchAdmin('/admin/login', {
        method: 'POST',
        headers,
        body: new URLSearchParams({ secret: `guess-${i}` }),
      })
      expect(res.status).toBe(401)
    }
    const blocked = await fetchAdmin('/admin/login', {
      method: 'POST',
      headers,
      body: new URLSearchParams({ secret: ADMIN }),
    })
    expect(blocked.status).toBe(429)
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(blocked.headers.get('set-cookie')).toBeNull()
    // Another client is not locked out by this one's guesses.
    expect((await login('203.0.113.10')).length).toBeGreaterThan(0)
  })

  it('should reject tampered, foreign-signed and expired cookies', async () => {
    const good = await login('198.51.100.4')
    const [v, expires, nonce, mac] = good.split('.') as [string, string, string, string]
    const flip = (s: string) => s.slice(0, -1) + (s.endsWith('A') ? 'B' : 'A')
    const later = String(Number(expires) + SESSION_TTL_MS)
    const bad = [
      `${v}.${expires}.${nonce}.${flip(mac)}`, // MAC changed
      `${v}.${later}.${nonce}.${mac}`, // expiry pushed out under the old MAC
      `${v}.${expires}.${flip(nonce)}.${mac}`, // nonce changed
      `v2.${expires}.${nonce}.${mac}`,
      await mintSession('another-deployment-admin-secret', Date.now()), // signed under another secret
      await mintSession(ADMIN, Date.now() - SESSION_TTL_MS - 1_000), // expired a second ago
      '',
      'x'.repeat(5_000),
    ]
    for (const value of bad) {
      const page = await fetchAdmin('/admin/', {
        headers: { ...HTML, cookie: `${SESSION_COOKIE}=${value}` },
      })
      expect([value.slice(0, 40), page.status]).toEqual([value.slice(0, 40), 303])
      const api = await fetchAdmin('/admin/stats', {
        headers: { cookie: `${SESSION_COOKIE}=${value}` },
      })
      expect(api.status).toBe(401)
    }
    // Minted a minute before its expiry: good while its record lives, and only then — a cookie the
    // Worker never recorded (signed with a leaked secret, or replayed from before a logout) is not.
    const fresh = await mintSession(ADMIN, Date.now() - SESSION_TTL_MS + 60_000)
    const open = () =>
      fetchAdmin('/admin/', { headers: { ...HTML, cookie: `${SESSION_COOKIE}=${fresh}` } })
    expect((await open()).status).toBe(303)
    await record(fresh)
    expect((await open()).status).toBe(200)
  })

  it('should reject a state-changing request without its token, with a wrong one, or from another origin', async () => {
    const session = await login('198.51.100.5')
    const csrf = await csrfOf(session)
    const other = await csrfOf(await login('198.51.100.6'))
    expect(other).not.toBe(csrf)
    const same = { origin: BASE, 'sec-fetch-site': 'same-origin' }
    const refused: [string, Record<string, string>, Record<string, string>][] = [
      ['no token', {}, same],
      ['empty token', { _csrf: '' }, same],
      ['wrong token', { _csrf: flipLast(csrf) }, same],
      ['another session’s token', { _csrf: other }, same],
      ['cross-origin', { _csrf: csrf }, { origin: 'https://evil.test' }],
      ['cross-site fetch', { _csrf: csrf }, { 'sec-fetch-site': 'cross-site' }],
      ['same-site sibling', { _csrf: csrf }, { 'sec-fetch-site': 'same-site' }],
      ['null origin', { _csrf: csrf }, { origin: 'null' }],
    ]
    for (const [label, fields, headers] of refused) {
      const res = await logout(session, fields, headers)
      const { error } = (await res.json()) as { error: { code: string } }
      expect([label, res.status, error.code]).toEqual([label, 403, 'forbidden'])
      expect(res.headers.get('set-cookie')).toBeNull()
    }
    const res = await logout(session, { _csrf: csrf }, same)
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/admin/login')
    expect(res.headers.get('set-cookie')).toMatch(/^guard_admin=; Max-Age=0; Path=\/admin/)
  })

  it('should put the CSP and the other headers on every admin response', async () => {
    const session = await login('198.51.100.7')
    const cases: [string, RequestInit][] = [
      ['/admin/login', { headers: HTML }],
      ['/admin/', { headers: HTML }],
      ['/admin/', { headers: { ...HTML, cookie: `${SESSION_COOKIE}=${session}` } }],
      ['/admin/incidents', { headers: { ...HTML, cookie: `${SESSION_COOKIE}=${session}` } }],
      ['/admin/incidents/inc_missing', { headers: { ...HTML, authorization: `Bearer ${ADMIN}` } }],
      ['/admin/incidents', { headers: { authorization: `Bearer ${ADMIN}` } }],
      ['/admin/stats', {}],
      ['/admin/metrics', { headers: { authorization: `Bearer ${ADMIN}` } }],
      [STYLE_PATH, {}],
    ]
    for (const [path, init] of cases) {
      const res = await fetchAdmin(path, init)
      const h = res.headers
      expect([path, h.get('content-security-policy')]).toEqual([path, ADMIN_CSP])
      expect([
        path,
        h.get('x-content-type-options'),
        h.get('referrer-policy'),
        h.get('x-frame-options'),
      ]).toEqual([path, 'nosniff', 'no-referrer', 'DENY'])
      const cache = path === STYLE_PATH ? 'public, max-age=31536000, immutable' : 'no-store'
      expect([path, h.get('cache-control')]).toEqual([path, cache])
      await res.arrayBuffer()
    }
    const css = await fetchAdmin(STYLE_PATH)
    // No source of script at all, and nothing unsafe allowed.
    expect(css.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(css.headers.get('content-security-policy')).not.toMatch(/script-src|unsafe/)
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8')
    expect((await fetchAdmin('/admin/assets/console.00000000.css')).status).toBe(404)
  })
})

function flipLast(token: string): string {
  return token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')
}
