/**
 * @module What an attacker without a key can do to the console, tried: lock the operator out with
 * failed logins from many addresses, flood the brake to reset a guesser's count, replay a cookie after
 * logout (in the isolate that logged out and in another), and send bodies the console must not read
 * (chunked past the limit, dripped).
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { ADMIN } from '../support/worker'

const BASE = 'http://guard.test'
const COOKIE = 'guard_admin'
const HTML = { accept: 'text/html' }
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const SAME = { origin: BASE, 'sec-fetch-site': 'same-origin' }

/** One Worker isolate: its own app (login brake, caches) and its own bindings object. */
function isolate(over: Partial<Env> = {}) {
  const app = createApp()
  const bindings = { ...(env as unknown as Env), ...over }
  return async (path: string, init: RequestInit = {}): Promise<Response> => {
    const ctx = createExecutionContext()
    const res = await app.fetch(
      new Request(`${BASE}${path}`, { redirect: 'manual', ...init }),
      bindings,
      ctx,
    )
    await waitOnExecutionContext(ctx)
    return res
  }
}

type Fetch = ReturnType<typeof isolate>

function tryLogin(fetch: Fetch, client: string, secret: string): Promise<Response> {
  return fetch('/admin/login', {
    method: 'POST',
    headers: { ...FORM, ...SAME, 'cf-connecting-ip': client },
    body: new URLSearchParams({ secret }),
  })
}

async function sessionOf(fetch: Fetch, client: string): Promise<string> {
  const res = await tryLogin(fetch, client, ADMIN)
  expect(res.status).toBe(303)
  return /guard_admin=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!
}

/** The status of the JSON API and of a page for a session cookie. */
async function access(fetch: Fetch, session: string): Promise<[number, number]> {
  const cookie = `${COOKIE}=${session}`
  const api = await fetch('/admin/stats', { headers: { cookie } })
  const page = await fetch('/admin/incidents', { headers: { ...HTML, cookie } })
  return [api.status, page.status]
}

async function logout(fetch: Fetch, session: string): Promise<Response> {
  const cookie = `${COOKIE}=${session}`
  const page = await (await fetch('/admin/incidents', { headers: { ...HTML, cookie } })).text()
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!
  return fetch('/admin/logout', {
    method: 'POST',
    headers: { ...FORM, ...SAME, cookie },
    body: new URLSearchParams({ _csrf: csrf }),
  })
}

/** A body of `total` bytes (no Content-Length: chunked), counting what the Worker pulled of it. */
function chunkedBody(total: number, chunk = 64 * 1024) {
  let pulled = 0
  const bytes = new Uint8Array(chunk).fill(0x61)
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulled >= total) return controller.close()
        pulled += bytes.byteLength
        controller.enqueue(bytes)
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, pulled: () => pulled }
}

/** A body that sends `head` and then nothing, until cancelled. */
function stalledBody(head: string) {
  let cancelled = false
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(head))
    },
    cancel() {
      cancelled = true
    },
  })
  return { stream, cancelled: () => cancelled }
}

/** `promise`, or 'pending' when it has not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))])
}

describe('login brake: slows the client that fails, never everyone', () => {
  it('should log in a new client with the right secret after 10 clients failed 5 times each', async () => {
    const fetch = isolate()
    for (let c = 0; c < 10; c++) {
      for (let i = 0; i < 5; i++) {
        expect((await tryLogin(fetch, `192.0.2.${c + 1}`, `guess-${c}-${i}`)).status).toBe(401)
      }
    }
    // Each of the ten is slowed …
    expect((await tryLogin(fetch, '192.0.2.1', ADMIN)).status).toBe(429)
    // … and the operator, from an address that has not failed, is let in.
    expect((await tryLogin(fetch, '198.51.100.77', ADMIN)).status).toBe(303)
  })

  it('should still slow a guesser after 1,000 other addresses have failed', async () => {
    const fetch = isolate()
    const guesser = '203.0.113.200'
    for (let i = 0; i < 5; i++) expect((await tryLogin(fetch, guesser, `g${i}`)).status).toBe(401)
    for (let n = 0; n < 1000; n++) {
      const other = `10.${(n >> 8) & 255}.${n & 255}.1`
      expect((await tryLogin(fetch, other, `flood-${n}`)).status).toBe(401)
    }
    const slowed = await tryLogin(fetch, guesser, ADMIN)
    expect(slowed.status).toBe(429)
    expect(Number(slowed.headers.get('retry-after'))).toBeGreaterThan(0)
    // The flood locked no one else out.
    expect((await tryLogin(fetch, '198.51.100.78', ADMIN)).status).toBe(303)
  })

  it('should count an IPv6 guesser by its /64: new addresses in it do not buy new guesses', async () => {
    const fetch = isolate()
    for (let i = 1; i <= 5; i++) {
      expect((await tryLogin(fetch, `2001:db8:aa:bb::${i.toString(16)}`, `v6-${i}`)).status).toBe(
        401,
      )
    }
    // Same /64, written differently (leading zeros, a full form): still the same client.
    expect((await tryLogin(fetch, '2001:0db8:00aa:00bb:1:2:3:4', ADMIN)).status).toBe(429)
    expect((await tryLogin(fetch, '2001:db8:aa:bb:ffff::9', ADMIN)).status).toBe(429)
    // The neighbouring /64 has not failed.
    expect((await tryLogin(fetch, '2001:db8:aa:bc::1', ADMIN)).status).toBe(303)
    // IPv4 written as IPv6 is its IPv4 address, not one shared "::ffff" client.
    for (let i = 0; i < 5; i++) await tryLogin(fetch, '::ffff:192.0.2.50', `m${i}`)
    expect((await tryLogin(fetch, '192.0.2.50', ADMIN)).status).toBe(429)
    expect((await tryLogin(fetch, '::ffff:192.0.2.51', ADMIN)).status).toBe(303)
  })
})

describe('sessions: logout ends them in every isolate', () => {
  it('should refuse an old cookie after logout, in the isolate that logged out and in another', async () => {
    const first = isolate()
    const second = isolate()
    const session = await sessionOf(first, '198.51.100.90')
    expect(await access(first, session)).toEqual([200, 200])
    expect(await access(second, session)).toEqual([200, 200])
    const out = await logout(second, session)
    expect(out.status).toBe(303)
    expect(out.headers.get('set-cookie')).toMatch(/^guard_admin=; Max-Age=0/)
    // The cookie kept by the browser (or copied from it) is refused everywhere: 401, the login page.
    expect(await access(first, session)).toEqual([401, 303])
    expect(await access(second, session)).toEqual([401, 303])
    // A third isolate, started after the logout, refuses it too.
    expect(await access(isolate(), session)).toEqual([401, 303])
  })

  it('should not let a revoked cookie act: a replayed logout or form post is 401 and revives nothing', async () => {
    const fetch = isolate()
    const session = await sessionOf(fetch, '198.51.100.91')
    const cookie = `${COOKIE}=${session}`
    const page = await (await fetch('/admin/incidents', { headers: { ...HTML, cookie } })).text()
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!
    const post = () =>
      fetch('/admin/logout', {
        method: 'POST',
        headers: { ...FORM, ...SAME, cookie },
        body: new URLSearchParams({ _csrf: csrf }),
      })
    expect((await post()).status).toBe(303)
    // Replayed with its own valid CSRF token: the session is gone, so is everything it could do.
    expect((await post()).status).toBe(401)
    expect(await access(fetch, session)).toEqual([401, 303])
    // Another session is untouched by this one's replays.
    const other = await sessionOf(fetch, '198.51.100.92')
    expect((await post()).status).toBe(401)
    expect(await access(fetch, other)).toEqual([200, 200])
  })

  it('should let no session in when its store cannot be read (fail closed)', async () => {
    const session = await sessionOf(isolate(), '198.51.100.96')
    const down = {
      prepare() {
        throw new Error('D1 is down')
      },
    } as unknown as D1Database
    expect(await access(isolate({ QUARANTINE_DB: down }), session)).toEqual([401, 303])
  })

  it('should end a session at logout without D1 too, in the isolate that holds it', async () => {
    const fetch = isolate({ QUARANTINE_DB: undefined })
    const session = await sessionOf(fetch, '198.51.100.93')
    expect(await access(fetch, session)).toEqual([200, 200])
    expect((await logout(fetch, session)).status).toBe(303)
    expect(await access(fetch, session)).toEqual([401, 303])
  })
})

describe('console bodies: counted as they stream, whatever the headers', () => {
  it('should refuse a chunked body past the limit on /admin/login and /admin/logout, reading no further', async () => {
    const fetch = isolate()
    const session = await sessionOf(fetch, '198.51.100.94')
    const routes: [string, Record<string, string>][] = [
      ['/admin/login', { ...FORM, ...SAME, 'cf-connecting-ip': '198.51.100.95' }],
      ['/admin/logout', { ...FORM, ...SAME, cookie: `${COOKIE}=${session}` }],
    ]
    for (const [path, headers] of routes) {
      const body = chunkedBody(8 * 1024 * 1024, 1024)
      const res = await fetch(path, {
        method: 'POST',
        headers,
        body: body.stream,
        duplex: 'half',
      } as RequestInit)
      expect([path, res.status]).toEqual([path, 413])
      // The 4 KiB limit, the chunk that crossed it, and one the runtime may have read ahead.
      expect(body.pulled()).toBeLessThanOrEqual(4096 + 2 * 1024)
    }
    // The session is still live: the refused logout form was never read as one.
    expect(await access(fetch, session)).toEqual([200, 200])
  })

  it('should answer 408 to a login form that does not arrive in time, and log in one that does', async () => {
    const fetch = isolate({ BODY_GRACE_MS: '300', BODY_MIN_BYTES_PER_SECOND: '1000' })
    const body = stalledBody('secret=')
    const res = await within(
      fetch('/admin/login', {
        method: 'POST',
        headers: { ...FORM, ...SAME, 'content-length': '300', 'cf-connecting-ip': '192.0.2.99' },
        body: body.stream,
        duplex: 'half',
      } as RequestInit),
      5_000,
    )
    expect(res === 'pending' ? 'pending' : res.status).toBe(408)
    expect(body.cancelled()).toBe(true)
    // Guard must not fire: the same pace lets an ordinary form through.
    expect((await tryLogin(fetch, '192.0.2.99', ADMIN)).status).toBe(303)
  })
})
