import { env } from 'cloudflare:test'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { CANARY_PATTERN } from '../../src'
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { chat, document, sseText } from '../support/prompts'
import { KEY_A, KEY_B, POOL_BELOW_PROFILE, post, sim } from '../support/worker'

/**
 * The Worker's heartbeat (`GUARD_HEARTBEAT_MS`), on and off, as the client receives it: the deployed
 * Worker sets it (wrangler.toml), the local one (wrangler.dev.toml, these tests) leaves it unset. The
 * measurements behind the deployed value: docs/streaming.md, "Heartbeat", `npm run bench -- silent-stream`.
 */

const MODEL = '@cf/zai-org/glm-5.3'
const BEAT = ': held\n\n'

/** A reasoning model that thinks ~1.5 s before the reply that proves the prompt was read. */
const THINKER = {
  mode: 'fixed',
  prefillTokensPerSecond: 500_000,
  decodeTokensPerSecond: 200,
  extraReasoningTokens: 300,
} as const

/** Tenant A's streamed question, with the heartbeat every 100 ms. */
const beatingAsk = (): Promise<Response> =>
  postWith(
    { GUARD_HEARTBEAT_MS: '100' },
    { model: MODEL, stream: true, ...chat(document('TENANT-A', 400)) },
    KEY_A,
  )

/** The Worker's app over the test bindings with `vars` changed (a fresh guard: one per env object). */
function postWith(vars: Partial<Env>, body: unknown, key: string): Promise<Response> {
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} }
  const bindings = { ...(env as unknown as Env), ...vars }
  return Promise.resolve(
    createApp().fetch(
      new Request('http://guard.test/v1/chat/completions', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
      bindings,
      ctx as unknown as ExecutionContext,
    ),
  )
}

/** Comment lines at the body's start: the beats sent while it was held. */
function leadingBeats(text: string): number {
  let n = 0
  while (text.startsWith(BEAT, n * BEAT.length)) n++
  return n
}

describe('heartbeat through the Worker', () => {
  describe('an honest stream held for its verdict', () => {
    beforeEach(async () => {
      await sim.reset(THINKER)
    })

    it('should send `: held` comments while held when GUARD_HEARTBEAT_MS is set, then the answer', async () => {
      const res = await beatingAsk()
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('text/event-stream')
      const text = await res.text()
      // Beats come first, before any event: a client reads comments as nothing (bench: silent-stream).
      expect(leadingBeats(text)).toBeGreaterThanOrEqual(2)
      const { content } = sseText(text.replaceAll(BEAT, ''))
      expect(content).toContain('TENANT-A')
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    })

    for (const value of [undefined, '0', ''] as const) {
      it(`should send no comment and no byte before the verdict when GUARD_HEARTBEAT_MS is ${value === undefined ? 'unset' : JSON.stringify(value)}`, async () => {
        const res = await postWith(
          value === undefined ? {} : { GUARD_HEARTBEAT_MS: value },
          { model: MODEL, stream: true, ...chat(document('TENANT-A', 400)) },
          KEY_A,
        )
        expect(res.status).toBe(200)
        const text = await res.text()
        expect(text).not.toContain(': held')
        expect(text.startsWith('data: {')).toBe(true)
        expect(sseText(text).content).toContain('TENANT-A')
      })
    }

    it('should refuse a heartbeat that is not a whole number of at least 100 ms, naming the option', async () => {
      // The Worker logs the configuration error once per guard it fails to build: expected here.
      const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
      for (const bad of ['50', 'often']) {
        const res = await postWith(
          { GUARD_HEARTBEAT_MS: bad },
          { model: MODEL, stream: true, ...chat('hi') },
          KEY_A,
        )
        expect(res.status).toBe(503)
        const body = (await res.json()) as { error: { code: string; message: string } }
        expect(body.error.code).toBe('guard_unavailable')
        expect(body.error.message).toContain('heartbeatMs')
      }
      expect(logged).toHaveBeenCalled()
      logged.mockRestore()
    })
  })

  describe('a leaking stream withheld', () => {
    beforeEach(async () => {
      await sim.reset(POOL_BELOW_PROFILE)
      const a = await post(
        '/v1/chat/completions',
        { model: MODEL, ...chat(document('TENANT-A', 6_000)) },
        KEY_A,
      )
      expect(a.status).toBe(200)
    })

    const leaking = { model: MODEL, stream: true, ...chat(document('TENANT-B', 12_000)) }

    // On, the leak is caught on its first tokens, before the first beat: the beating response never
    // began. (Its record counts the prompt, the tokenizer's first load in this isolate: seconds here.)
    it.each([
      ['off', {}],
      ['on, the verdict before the first beat', { GUARD_HEARTBEAT_MS: '30000' }],
    ])(
      'should answer 422 with x-should-retry: false and no byte of the answer, heartbeat %s',
      async (_, vars) => {
        const res = await postWith(vars, leaking, KEY_B)
        expect(res.status).toBe(422)
        expect(res.headers.get('x-should-retry')).toBe('false')
        const body = await res.text()
        expect((JSON.parse(body) as { error: { code: string } }).error.code).toBe(
          'response_quarantined',
        )
        expect(body).not.toContain('TENANT-A')
        expect(body).not.toContain(': held')
      },
    )
  })

  describe('an answer withheld after it was held past a beat', () => {
    beforeEach(async () => {
      // The thinker never echoes: held for its proof, retried, then withheld.
      await sim.reset({ ...THINKER, echoIgnoreRate: 1 })
    })

    it('should end the beating stream with the quarantine error event, under a 200 and no byte of the answer', async () => {
      const res = await beatingAsk()
      // The price of the heartbeat: the response began before the verdict.
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('text/event-stream')
      const text = await res.text()
      expect(leadingBeats(text)).toBeGreaterThanOrEqual(2)
      const events = text.replaceAll(BEAT, '')
      expect(events.startsWith('data: {"error":')).toBe(true)
      expect(events.trimEnd().split('\n\n')).toHaveLength(1)
      const error = (
        JSON.parse(events.trim().slice('data: '.length)) as { error: Record<string, unknown> }
      ).error
      expect(error.code).toBe('response_quarantined')
      expect(error.incident_id).toMatch(/\S/)
      // Withheld: not one word of the answer, which quotes the prompt, left.
      expect(text).not.toContain('TENANT-A')
      expect(text).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))
    })
  })
})
