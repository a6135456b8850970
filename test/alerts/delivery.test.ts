import { describe, expect, it } from 'vitest'
import {
  backoffDelay,
  DEFAULT_RETRY_POLICY,
  type DeliveryDeps,
  deliverWebhook,
  retryAfterMs,
  verifySignature,
} from '../../src/worker/alerts'

const SECRET = 'test-alert-secret-0123456789-abcdefghij'
const BODY = '{"version":1}'

/** A fake host: the clock moves only when the delivery sleeps; fetch answers from a script. */
function host(answers: (Response | Error)[], random = 0.5) {
  let t = 1_800_000_000_000
  const requests: {
    headers: Headers
    body: string
    at: number
    signal: AbortSignal | undefined
  }[] = []
  const deps: Required<DeliveryDeps> = {
    now: () => t,
    sleep: async (ms) => {
      t += ms
    },
    random: () => random,
    fetch: async (_url, init) => {
      requests.push({
        headers: new Headers(init.headers),
        body: String(init.body),
        at: t,
        signal: init.signal ?? undefined,
      })
      const next = answers.shift() ?? new Response('ok')
      if (next instanceof Error) throw next
      return next
    },
  }
  return { deps, requests, now: () => t }
}

describe('webhook delivery', () => {
  it('should retry 5xx, network errors and 429 with exponential backoff and jitter, then succeed', async () => {
    const h = host([
      new Response('', { status: 500 }),
      new TypeError('connection refused'),
      new Response('', { status: 429 }),
      new Response('', { status: 503 }),
      new Response('ok'),
    ])
    const result = await deliverWebhook(
      { url: 'https://hook.example/x', secret: SECRET, body: BODY },
      {},
      h.deps,
    )
    expect(result).toEqual({ ok: true, attempts: 5, status: 200, delays: [375, 750, 1500, 3000] })
    // Each attempt signed at its own time, and verifiable then.
    for (const r of h.requests) {
      const header = r.headers.get('x-guard-signature')
      expect(header).toMatch(new RegExp(`^t=${Math.floor(r.at / 1000)},`))
      expect(
        (await verifySignature(SECRET, header, r.body, { nowSeconds: Math.floor(r.at / 1000) }))
          .valid,
      ).toBe(true)
    }
    expect(h.requests.map((r) => r.headers.get('x-guard-attempt'))).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
    ])
    expect(h.requests[0]!.headers.get('content-type')).toBe('application/json')
  })

  it('should bound the jitter to between half and all of the exponential step, capped', () => {
    const p = DEFAULT_RETRY_POLICY
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, p, () => 0))).toEqual([
      250, 500, 1000, 2000, 4000, 4000,
    ])
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, p, () => 0.999999))).toEqual([
      500, 1000, 2000, 4000, 8000, 8000,
    ])
  })

  it('should not retry a 4xx other than 408 and 429', async () => {
    for (const status of [400, 401, 403, 404, 410, 413, 422]) {
      const h = host([new Response('', { status })])
      const result = await deliverWebhook(
        { url: 'https://h.example', secret: SECRET, body: BODY },
        {},
        h.deps,
      )
      expect(result).toEqual({
        ok: false,
        attempts: 1,
        status,
        error: `HTTP ${status}`,
        delays: [],
      })
    }
    const h = host([new Response('', { status: 408 }), new Response('ok')])
    expect(
      (await deliverWebhook({ url: 'https://h.example', secret: SECRET, body: BODY }, {}, h.deps))
        .attempts,
    ).toBe(2)
  })

  it('should not follow a redirect (a signed alert goes only where it was configured)', async () => {
    const h = host([
      new Response(null, { status: 302, headers: { location: 'https://elsewhere' } }),
    ])
    const result = await deliverWebhook(
      { url: 'https://h.example', secret: SECRET, body: BODY },
      {},
      h.deps,
    )
    expect(result).toMatchObject({ ok: false, attempts: 1, status: 302 })
  })

  it('should wait as long as a Retry-After asks, within the cap, and give up beyond it', async () => {
    const h = host([
      new Response('', { status: 429, headers: { 'retry-after': '4' } }),
      new Response('ok'),
    ])
    const ok = await deliverWebhook(
      { url: 'https://h.example', secret: SECRET, body: BODY },
      {},
      h.deps,
    )
    expect(ok).toMatchObject({ ok: true, attempts: 2, delays: [4000] })
    const far = host([new Response('', { status: 503, headers: { 'retry-after': '60' } })])
    const gaveUp = await deliverWebhook(
      { url: 'https://h.example', secret: SECRET, body: BODY },
      {},
      far.deps,
    )
    expect(gaveUp).toMatchObject({ ok: false, attempts: 1, status: 503 })
    expect(gaveUp.error).toContain('Retry-After beyond 10000 ms')
  })

  it('should read Retry-After as seconds or an HTTP date', () => {
    const now = Date.UTC(2026, 0, 1)
    expect(retryAfterMs('3', now)).toBe(3000)
    expect(retryAfterMs(new Date(now + 7000).toUTCString(), now)).toBe(7000)
    expect(retryAfterMs(new Date(now - 7000).toUTCString(), now)).toBe(0)
    expect(retryAfterMs('soon', now)).toBeUndefined()
    expect(retryAfterMs(null, now)).toBeUndefined()
  })

  it('should stop after maxAttempts, and inside the total budget', async () => {
    const fails = () => Array.from({ length: 20 }, () => new Response('', { status: 500 }))
    const h = host(fails())
    const result = await deliverWebhook(
      { url: 'https://h.example', secret: SECRET, body: BODY },
      {},
      h.deps,
    )
    expect(result).toMatchObject({ ok: false, attempts: 5, status: 500 })
    expect(result.error).toContain('attempts exhausted')
    // A budget smaller than the schedule: no attempt starts that could not run inside it.
    const tight = host(fails(), 0.999999)
    const start = tight.now()
    const cut = await deliverWebhook(
      { url: 'https://h.example', secret: SECRET, body: BODY },
      { budgetMs: 4_000, maxAttempts: 10 },
      tight.deps,
    )
    expect(cut.error).toContain('budget of 4000 ms spent')
    expect(cut.delays).toEqual([500, 1000, 2000])
    expect(tight.now() - start).toBeLessThanOrEqual(4_000)
  })

  it('should abort an attempt that outlives its timeout and count it as retryable', async () => {
    let calls = 0
    const result = await deliverWebhook(
      { url: 'https://h.example', secret: SECRET, body: BODY },
      { attemptTimeoutMs: 20, maxAttempts: 2, baseDelayMs: 1 },
      {
        sleep: async () => {},
        fetch: (_url, init) => {
          calls++
          if (calls === 2) return Promise.resolve(new Response('ok'))
          // Never answers: only the abort ends it.
          return new Promise((_, reject) =>
            init.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
          )
        },
      },
    )
    expect(result).toMatchObject({ ok: true, attempts: 2 })
  })

  it('should report a timeout that never ends in success as the error', async () => {
    const result = await deliverWebhook(
      { url: 'https://h.example', secret: SECRET, body: BODY },
      { attemptTimeoutMs: 10, maxAttempts: 1 },
      {
        fetch: (_url, init) =>
          new Promise((_, reject) =>
            init.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
          ),
      },
    )
    expect(result).toMatchObject({ ok: false, attempts: 1 })
    expect(result.error).toMatch(/^timeout after 10 ms/)
  })
})
