import { env, SELF } from 'cloudflare:test'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { guardAi } from '../../src'
import { type CanaryKey, importCanaryKey } from '../../src/core/canary'
import { KEY_A, sim } from '../support/worker'
import {
  decodeChunks,
  encodeCases,
  expectedEvents,
  judgeHttp,
  judgeRun,
  MODEL,
  rawBody,
  requestValue,
  splitBytes,
  sseCases,
} from './properties'

/**
 * Property-based: whatever the request, every surface answers with an allowed status and an
 * OpenAI-style body (never a 500, never a live canary); whatever the SSE byte split, the decoder
 * yields the same events. CI-sized runs here; `npm run bench -- fuzz` runs many more.
 */
const DEV_SECRET = (env as unknown as { GUARD_SECRET: string }).GUARD_SECRET
const SEED = 20_261_117
const FAST_SIM = {
  mode: 'fixed' as const,
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
}
let key: CanaryKey

beforeAll(async () => {
  key = await importCanaryKey(DEV_SECRET)
  await sim.reset(FAST_SIM)
})

describe('arbitrary requests', { timeout: 30_000 }, () => {
  it('should answer any body POSTed to /v1/chat/completions with an allowed status, never 500', async () => {
    const statuses = new Map<number, number>()
    await fc.assert(
      fc.asyncProperty(rawBody, async (body) => {
        const res = await SELF.fetch('http://guard.test/v1/chat/completions', {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
          body,
        })
        const verdict = await judgeHttp(res, key)
        statuses.set(verdict.status, (statuses.get(verdict.status) ?? 0) + 1)
        expect(verdict.problem).toBeUndefined()
      }),
      { numRuns: 150, seed: SEED },
    )
    // The generator reaches both answers and refusals.
    expect(statuses.get(200)).toBeGreaterThan(0)
    expect(statuses.get(400)).toBeGreaterThan(0)
  }, 30_000)

  it('should resolve or reject guardAi.run with a GuardError for any inputs', async () => {
    const ai = guardAi(new SimEngine(FAST_SIM).binding('tenant-a'), { secret: DEV_SECRET })
    const statuses = new Map<number, number>()
    await fc.assert(
      fc.asyncProperty(requestValue, async (inputs) => {
        const verdict = await judgeRun(ai, MODEL, inputs, key)
        statuses.set(verdict.status, (statuses.get(verdict.status) ?? 0) + 1)
        expect(verdict.problem).toBeUndefined()
      }),
      { numRuns: 200, seed: SEED },
    )
    expect(statuses.get(200)).toBeGreaterThan(0)
    expect(statuses.get(400)).toBeGreaterThan(0)
  }, 30_000)
})

describe('the SSE decoder under arbitrary splits', { timeout: 30_000 }, () => {
  it('should yield the same events however the bytes are split', async () => {
    await fc.assert(
      fc.asyncProperty(sseCases, fc.array(fc.nat(), { maxLength: 12 }), async (cases, cuts) => {
        const bytes = encodeCases(cases)
        const whole = await decodeChunks([bytes])
        const split = await decodeChunks(splitBytes(bytes, cuts))
        expect(whole.events).toEqual(expectedEvents(cases))
        expect(split.events).toEqual(whole.events)
        expect(split.truncated).toBe(false)
      }),
      { numRuns: 300, seed: SEED },
    )
  })

  it('should flag a stream cut inside its last event as truncated, wherever it is cut', async () => {
    await fc.assert(
      fc.asyncProperty(
        sseCases.filter((c) => c.length > 0),
        fc.nat(),
        async (cases, at) => {
          const bytes = encodeCases(cases)
          // Cut off the last event's terminating blank line (1 or 2 bytes) and maybe more.
          const eol = cases.at(-1)!.eol.length
          const cut = bytes.length - eol - (at % 3)
          const { truncated, events } = await decodeChunks([bytes.slice(0, cut)])
          expect(truncated).toBe(true)
          expect(events.length).toBe(cases.length - 1)
        },
      ),
      { numRuns: 200, seed: SEED },
    )
  })
})
