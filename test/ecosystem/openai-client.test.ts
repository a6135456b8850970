import { SELF } from 'cloudflare:test'
import OpenAI from 'openai'
import { beforeEach, describe, expect, it } from 'vitest'
import { document } from '../support/prompts'
import { ADMIN, get, sim } from '../support/worker'
import { apiError, ask, client, expectOwn, expectQuarantined } from './openai-client'

const BASE = 'http://guard.test/v1'
const viaSelf = {
  fetch: (input: string | URL | Request, init?: RequestInit) => SELF.fetch(input, init),
}
const a = client(BASE, 'tenant-a', viaSelf)
const b = client(BASE, 'tenant-b', viaSelf)

/**
 * The simulator leaks like the incident, scaled down: an 8,192-token pool behind a 16,384-token window.
 * The Worker's profile believes the published 681,280-token pool, so B's 12k-token prompt passes the
 * ceiling, reaches the engine, and is answered from A's stale pages: only canaries and timing stop it.
 */
const LEAKING = {
  mode: 'pd-abort-leak',
  poolTokens: 8_192,
  contextWindow: 16_384,
  prefillTokensPerSecond: 200_000,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
} as const

beforeEach(async () => {
  await sim.reset(LEAKING)
})

describe('the openai client against the Worker', () => {
  for (const stream of [false, true]) {
    it(`should deliver the tenant own answer, ${stream ? 'streamed' : 'whole'}, canary stripped`, async () => {
      const answer = await ask(a, document('TENANT-A', 2_000), stream)
      expectOwn(answer, 'TENANT-A', ['TENANT-B'])
    }, 30_000)
  }

  it('should surface the ceiling as BadRequestError with code context_length_exceeded, no call made', async () => {
    const before = (await sim.stats()).requests.total
    const error = await apiError(
      ask(a, document('TENANT-A', 200), false, { max_tokens: 1_000_000 }),
    )
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error.status).toBe(400)
    expect(error.code).toBe('context_length_exceeded')
    // The output reserve alone is over the pool: the field to fix is max_tokens.
    expect(error.param).toBe('max_tokens')
    expect(error.message).toContain('681,280')
    expect((await sim.stats()).requests.total).toBe(before)
    // Must not fire: the same prompt with a sane output limit is answered.
    expectOwn(await ask(a, document('TENANT-A', 200), false, { max_tokens: 160 }), 'TENANT-A', [])
  }, 30_000)

  for (const stream of [false, true]) {
    it(`should surface a leaked answer as a 422 APIError with the incident id (${stream ? 'stream' : 'whole'})`, async () => {
      expectOwn(await ask(a, document('TENANT-A', 6_000), false), 'TENANT-A', ['TENANT-B'])
      const error = await apiError(ask(b, document('TENANT-B', 12_000), stream))
      const incident = expectQuarantined(error, ['TENANT-A'])
      const record = (await (await get(`/admin/incidents/${incident}`, ADMIN)).json()) as {
        tenant: string
        reasons: string[]
        sourceTenants: string[]
      }
      expect(record.tenant).toBe('tenant-b')
      expect(record.reasons.join(',')).toMatch(/foreign_canary|ttft_impossible|echo_missing/)
    }, 30_000)
  }

  // A quarantine is not transient: each retry would send the oversized prompt to the leaking engine
  // again. Every client library is checked in ./client-retries.test.ts; this one with retries asked for.
  it('should not be retried by the client default retry policy', async () => {
    const retrying = client(BASE, 'tenant-b', { ...viaSelf, maxRetries: 2 })
    await ask(a, document('TENANT-A', 6_000), false)
    const before = (await sim.stats()).requests.total
    expectQuarantined(await apiError(ask(retrying, document('TENANT-B', 12_000), false)), [])
    expect((await sim.stats()).requests.total - before).toBeLessThanOrEqual(2)
  }, 30_000)

  // Chat front-ends list models before anything else; the client's models.list() got a 404.
  it('should list the guarded models through models.list()', async () => {
    const ids: string[] = []
    for await (const model of a.models.list()) ids.push(model.id)
    expect(ids).toContain('@cf/zai-org/glm-5.3')
    const one = (await a.models.list()).data[0]!
    expect(one.object).toBe('model')
    expect(typeof one.owned_by).toBe('string')
  })
})
