import { describe, expect, it } from 'vitest'
import type { AttemptContext } from '../../src/core/attempt/context'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { verifyStreamedAnswer } from '../../src/core/verify/streamed-answer'
import { chunk, scripted, sse } from '../reliability/upstreams'

/**
 * The verification stage of a stream fails closed: when the guard cannot reach its verdict, nothing is
 * released and the upstream is stopped, not left streaming into nowhere.
 */
describe('verifying a stream', () => {
  it('should stop the upstream and release nothing when the verdict cannot be reached', async () => {
    const key = await importCanaryKey('streamed-answer-test-secret-0123456789')
    const canary = await mintCanary(key, { requestId: 'r', tenant: 't' })
    let keyCalls = 0
    // The verification reads what it needs from its context; here the guard's key fails once the
    // first token is in (as a broken crypto or tokenizer would), exactly when the verdict is due.
    const ctx = {
      canary,
      marker: undefined,
      // The foreign-content check off: this test is about the canary scan failing.
      content: async () => undefined,
      request: {
        proof: 'none',
        counted: false,
        admission: { estimated: 10 },
        profile: { maxPrefillTokensPerSecond: 200_000 },
      },
      startedAt: 0,
      attempt: 1,
      services: {
        options: {
          now: () => 5,
          maxHeldBytes: 1 << 20,
          minTimingEvidenceMs: 200,
          echoRetries: 2,
          timeouts: { firstTokenMs: 10_000, idleMs: 10_000, responseMs: 10_000 },
        },
        key: async () => {
          keyCalls++
          throw new Error('crypto unavailable')
        },
      },
    } as unknown as AttemptContext
    const upstream = scripted(
      [sse(chunk({ content: 'A first answer token' })), sse(chunk({ content: ' and more' }))],
      'hang',
    )
    await expect(verifyStreamedAnswer(ctx, upstream.stream)).rejects.toThrow(/crypto unavailable/)
    expect(keyCalls).toBe(1)
    expect(upstream.cancelled()).toBe(true)
  })
})
