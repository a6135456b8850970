import { env } from 'cloudflare:test'
import { describe, expect, it, vi } from 'vitest'
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { chat } from '../support/prompts'
import { KEY_A } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'
const APP = 'https://app.example.com'

/** The Worker with `GUARD_CORS_ORIGINS` set to `origins` (or unset), answering one request. */
async function fetchWith(origins: string | undefined, path: string, init: RequestInit) {
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} }
  const bindings = { ...(env as unknown as Env), GUARD_CORS_ORIGINS: origins }
  return await createApp().fetch(
    new Request(`http://guard.test${path}`, init),
    bindings,
    ctx as unknown as ExecutionContext,
  )
}

function preflight(origin: string): RequestInit {
  return {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  }
}

function chatFrom(origin: string, key = KEY_A): RequestInit {
  return {
    method: 'POST',
    headers: { origin, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, ...chat('hi') }),
  }
}

describe('CORS for the operator’s origins', () => {
  it('should answer an allowed origin’s preflight with 204 and its CORS headers, without a key', async () => {
    for (const path of ['/v1/chat/completions', `/ai/run/${MODEL}`, '/v1/models']) {
      const res = await fetchWith(`${APP}, http://localhost:5173`, path, preflight(APP))
      expect(res.status, path).toBe(204)
      expect(res.headers.get('access-control-allow-origin')).toBe(APP)
      expect(res.headers.get('access-control-allow-headers')).toContain('authorization')
      expect(res.headers.get('access-control-allow-methods')).toContain('POST')
    }
  })

  it('should let the allowed origin read the answer and the guard’s headers', async () => {
    const res = await fetchWith(APP, '/v1/chat/completions', chatFrom(APP))
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe(APP)
    expect(res.headers.get('access-control-expose-headers')).toContain('x-guard-incident-id')
    expect(res.headers.get('vary')).toContain('Origin')
    // An error too: a browser app can show it.
    const refused = await fetchWith(APP, '/v1/chat/completions', chatFrom(APP, 'not-a-key'))
    expect(refused.status).toBe(401)
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP)
  })

  // Must not fire: another origin, no list, or a request without an Origin gets no CORS header.
  it('should give no CORS header to an origin not on the list, or when there is no list', async () => {
    for (const [list, origin] of [
      [APP, 'https://evil.example'],
      [APP, `${APP}.evil.example`],
      [undefined, APP],
      ['', APP],
    ] as const) {
      const pre = await fetchWith(list, '/v1/chat/completions', preflight(origin))
      expect(pre.status).toBe(204)
      expect(pre.headers.get('access-control-allow-origin')).toBeNull()
      const res = await fetchWith(list, '/v1/chat/completions', chatFrom(origin))
      expect(res.headers.get('access-control-allow-origin')).toBeNull()
    }
  })

  // An operator's `*` (or a wildcard host) would open the Worker to every site: it allows nothing.
  it('should never honour *, a wildcard or anything that is not an exact origin', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      for (const list of [
        '*',
        'https://*.example.com',
        `${APP}/`,
        `${APP}/path`,
        'null',
        'app.example.com',
      ]) {
        const res = await fetchWith(list, '/v1/chat/completions', preflight(APP))
        expect(res.headers.get('access-control-allow-origin'), list).toBeNull()
        const sent = await fetchWith(list, '/v1/chat/completions', preflight('null'))
        expect(sent.headers.get('access-control-allow-origin'), list).toBeNull()
      }
      expect(error.mock.calls.some((c) => String(c[0]).includes('GUARD_CORS_ORIGINS'))).toBe(true)
      // A listed origin beside a `*` still works; the `*` adds nothing.
      const mixed = await fetchWith(`*, ${APP}`, '/v1/chat/completions', preflight(APP))
      expect(mixed.headers.get('access-control-allow-origin')).toBe(APP)
      const other = await fetchWith(
        `*, ${APP}`,
        '/v1/chat/completions',
        preflight('https://evil.example'),
      )
      expect(other.headers.get('access-control-allow-origin')).toBeNull()
    } finally {
      error.mockRestore()
    }
  })

  it('should keep the admin console out of CORS', async () => {
    const res = await fetchWith(APP, '/admin/incidents', preflight(APP))
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
  })
})
