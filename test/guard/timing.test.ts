import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { MemoryQuarantineStore } from '../../src'
import { chat, document } from '../support/prompts'
import { SURFACES, type Surface } from '../support/surfaces'
import { recordVerdicts } from '../support/verdicts'

/**
 * Timing as the only signal: echo off, ceiling misconfigured to the window. The engine and the guard
 * share a virtual clock, so a TTFT is exactly the simulated prefill: no wall time, no flakiness.
 * Scale: pool 65,536 / window 131,072; honest prefill 50,000 tok/s; the profile's physical bound 200,000.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'timing-test-canary-secret-0123456789abcdef'
const SIM = {
  poolTokens: 65_536,
  contextWindow: 131_072,
  prefillTokensPerSecond: 50_000,
  decodeTokensPerSecond: 100,
  seed: 5,
}
const TIMING_ONLY = {
  contextWindow: 131_072,
  kvPoolTokens: 131_072,
  maxPrefillTokensPerSecond: 200_000,
  defaultOutputReserve: 256,
  echo: 'off' as const,
}

function setup(surface: Surface) {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...SIM, mode: 'pd-abort-leak' }, { clock })
  const quarantine = new MemoryQuarantineStore()
  const verdicts = recordVerdicts()
  const send = surface(engine.binding('account'), {
    secret: SECRET,
    models: { [MODEL]: TIMING_ONLY },
    quarantine: { store: quarantine },
    hooks: { now: () => clock.now(), onVerdict: verdicts.onVerdict },
    // The timing guard alone: the placeholder answers here quote A's text, which the foreign-content
    // check would catch too (test/guard/foreign-content.test.ts).
    content: false,
  })
  return { send, quarantine, engine, verdicts }
}

describe('time to first token', () => {
  for (const [name, surface] of SURFACES) {
    for (const stream of [false, true]) {
      const how = `${name}, ${stream ? 'stream' : 'whole'}`

      it(`should quarantine an over-pool answer by timing alone (${how})`, async () => {
        const { send, quarantine, verdicts } = setup(surface)
        const a = await send('tenant-a', MODEL, chat(document('TENANT-A', 40_000), { stream }))
        expect(a.status).toBe(200)
        expect(a.text).toContain('TENANT-A')
        // About 95,000 tokens for the simulated model (Qwen3): over the pool, well inside the window.
        const b = await send('tenant-b', MODEL, chat(document('TENANT-B', 70_000), { stream }))
        expect(b.text).not.toContain('TENANT-A')
        expect(b.code).toBe('response_quarantined')
        const record = await quarantine.get(b.incidentId!)
        expect(record?.reasons).toEqual(['ttft_impossible'])
        expect(record?.figures.expectedMinMs).toBeGreaterThan(200)
        expect(record?.figures.ttftMs).toBeLessThan(10)
        // The withheld text is kept for review: it is A's, delivered to nobody.
        expect(record?.withheld.content ?? record?.withheld.reasoning).toContain('TENANT-A')
        // The log carries the timing figures an operator needs, and the incident to look up.
        const [logged, ...more] = verdicts.of('quarantine')
        expect(more).toEqual([])
        expect(logged).toMatchObject({ tenant: 'tenant-b', incidentId: b.incidentId })
        expect(logged?.expectedMinMs).toBeGreaterThan(200)
        expect(logged?.ttftMs).toBeLessThan(10)
      }, 30_000)

      it(`should release honest long answers, and a repeated prefix served from cache (${how})`, async () => {
        const { send, engine } = setup(surface)
        const doc = document('TENANT-A', 40_000)
        const first = await send('tenant-a', MODEL, chat(`${doc}\nQuestion one?`, { stream }))
        expect(first.status).toBe(200)
        expect(first.text).toContain('TENANT-A')
        const again = await send('tenant-a', MODEL, chat(`${doc}\nQuestion two?`, { stream }))
        expect(again.status).toBe(200)
        expect(again.text).toContain('TENANT-A')
        // The engine really served the second from its prefix cache: fast, and honest.
        const last = engine.stats().recent.at(-1)!
        expect(last.cachedTokens).toBeGreaterThan(30_000)
        // Another tenant sending the same document hits the same cache (one upstream account); the
        // guard's per-tenant record cannot foresee it, but the upstream's cached_tokens can.
        const other = await send('tenant-c', MODEL, chat(`${doc}\nQuestion three?`, { stream }))
        expect(other.status).toBe(200)
        expect(other.text).toContain('TENANT-A ledger')
      }, 30_000)
    }
  }
})
