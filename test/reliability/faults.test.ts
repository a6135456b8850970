import { describe, expect, it } from 'vitest'
import { GuardError, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { ask, chunk, MODEL, SECRET, scripted, settle, sse, streaming } from './upstreams'

/** Small deadlines: a hung upstream must become a clear error in tens of milliseconds. */
const FAST = { firstTokenMs: 50, idleMs: 50, responseMs: 50 }

function throwing(error: unknown): AiRunner {
  return {
    run: async () => {
      throw error
    },
  }
}

describe('upstream faults', () => {
  it('should map each Workers AI error class to a clear status', async () => {
    const cases: [unknown, number][] = [
      [new Error('AiError: 3040: Capacity temporarily exceeded, please try again.'), 429],
      [
        new Error('AiError: 5021: Input length (700000 tokens) exceeds the maximum allowed length'),
        400,
      ],
      [new Error('InferenceUpstreamError: 500 Internal Server Error'), 502],
      [new Error('AiError: 3043: Internal server error'), 502],
      [new TypeError('fetch failed'), 502],
      [new TypeError('Network connection lost.'), 502],
      ['a bare string', 502],
      [{ not: 'an error' }, 502],
    ]
    for (const [thrown, status] of cases) {
      const r = await settle(guardAi(throwing(thrown), { secret: SECRET }).run(MODEL, ask('hi')))
      expect(r.ok).toBe(false)
      if (r.ok) continue
      expect(r.error.code).toBe('upstream_error')
      expect(r.error.status).toBe(status)
      const body = (await r.error.getResponse().json()) as { error: { type: string } }
      // OpenAI's classes: a 429 is a rate limit, a refused request the client's, the rest the server's.
      const type =
        status === 429
          ? 'rate_limit_error'
          : status < 500
            ? 'invalid_request_error'
            : 'server_error'
      expect(body.error.type).toBe(type)
    }
  })

  // BUG (reported): Workers AI's "invalid input" (5006) is the client's fault, but becomes a 502.
  it('should answer an upstream invalid-input error (5006) with 400', async () => {
    const upstream = throwing(new Error('AiError: 5006: each message needs a role'))
    const r = await settle(
      guardAi(upstream, { secret: SECRET }).run(MODEL, { messages: [{ role: '', content: 'x' }] }),
    )
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error.status).toBe(400)
  })

  it('should time out a whole answer that never comes with 504', async () => {
    const upstream: AiRunner = { run: () => new Promise(() => {}) }
    const r = await settle(
      guardAi(upstream, { secret: SECRET, timing: { timeouts: FAST } }).run(MODEL, ask('hi')),
    )
    expect(r.ok).toBe(false)
    if (!r.ok) expect([r.error.code, r.error.status]).toEqual(['upstream_error', 504])
  })

  // BUG (reported): a stream that stalls before its first byte is cancelled, but the client gets 502,
  // not the watchdog's 504: verifyStream re-wraps the watchdog's GuardError.
  it('should answer a stream that sends no first byte with 504', async () => {
    const upstream = streaming(() => [], 'hang')
    const r = await settle(
      guardAi(upstream, { secret: SECRET, timing: { timeouts: FAST } }).run(
        MODEL,
        ask('hi', { stream: true }),
      ),
    )
    expect(r.ok).toBe(false)
    if (!r.ok) expect([r.error.code, r.error.status]).toEqual(['upstream_error', 504])
  })

  it('should cancel a stream that sends no first byte, and release nothing', async () => {
    const upstream = streaming(() => [], 'hang')
    const r = await settle(
      guardAi(upstream, { secret: SECRET, timing: { timeouts: FAST } }).run(
        MODEL,
        ask('hi', { stream: true }),
      ),
    )
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error.code).toBe('upstream_error')
    expect(upstream.streams[0]?.cancelled()).toBe(true)
  })

  // BUG (reported): a stream returned for a whole request is refused but never cancelled.
  it('should cancel a stream the upstream returns for a whole request', async () => {
    const recorded = scripted([sse(chunk({ content: 'x' }))], 'hang')
    const upstream: AiRunner = { run: async () => recorded.stream }
    const r = await settle(guardAi(upstream, { secret: SECRET }).run(MODEL, ask('hi')))
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error).toBeInstanceOf(GuardError)
    expect(recorded.cancelled()).toBe(true)
  })
})
