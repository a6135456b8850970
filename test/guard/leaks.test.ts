import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import type { SimMode } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { CANARY_PATTERN, MemoryQuarantineStore } from '../../src'
import { chat, document } from '../support/prompts'
import { type Delivered, direct, middleware, type Surface } from '../support/surfaces'

/**
 * The incident, scaled down 80× so every case runs in well under a second: a 8,192-token pool behind a
 * 16,384-token window, and a guard whose profile wrongly believes the pool is as large as the window —
 * so over-pool requests reach the engine and only the canary and timing guards stand in the way.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'leak-test-canary-secret-0123456789abcdef'
const SIM = {
  poolTokens: 8_192,
  contextWindow: 16_384,
  prefillTokensPerSecond: 400_000,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  seed: 11,
}
const WRONG_PROFILE = {
  contextWindow: 16_384,
  kvPoolTokens: 16_384,
  maxPrefillTokensPerSecond: 800_000,
  defaultOutputReserve: 256,
}

function leaked(delivered: Delivered): string[] {
  const found: string[] = []
  if (delivered.text.includes('TENANT-A')) found.push('TENANT-A text')
  if (new RegExp(CANARY_PATTERN.source, 'i').test(delivered.text)) found.push('a canary')
  return found
}

const surfaces: [string, Surface][] = [
  ['guardAi', direct],
  ['middleware', middleware],
]

const cases: { mode: SimMode; bTokens: number; reason: RegExp }[] = [
  { mode: 'pd-abort-leak', bTokens: 12_000, reason: /foreign_canary|ttft_impossible/ },
  { mode: 'truncate', bTokens: 12_000, reason: /echo_missing|usage_undercount/ },
  { mode: 'stale-pages', bTokens: 5_000, reason: /foreign_canary|echo_missing/ },
]

describe('canaries against the leaking engine', () => {
  for (const [surfaceName, surface] of surfaces) {
    for (const { mode, bTokens, reason } of cases) {
      for (const stream of [false, true]) {
        it(`should deliver no byte of tenant A to tenant B (${surfaceName}, ${mode}, ${stream ? 'stream' : 'whole'})`, async () => {
          // One virtual clock for engine and guard: TTFT is the simulated prefill, to the millisecond.
          const clock = new VirtualClock()
          const engine = new SimEngine({ ...SIM, mode: 'fixed' }, { clock })
          const quarantine = new MemoryQuarantineStore()
          const send = surface(engine.binding('account'), {
            secret: SECRET,
            models: { [MODEL]: WRONG_PROFILE },
            quarantine,
            minTimingEvidenceMs: 5,
            now: () => clock.now(),
          })
          // Tenant A's answer is A's own: released, A's text in it, no canary.
          const a = await send('tenant-a', MODEL, chat(document('TENANT-A', 6_000), { stream }))
          expect(a.status).toBe(200)
          expect(a.text).toContain('TENANT-A')
          expect(new RegExp(CANARY_PATTERN.source, 'i').test(a.text)).toBe(false)

          engine.configure({ mode })
          const b = await send('tenant-b', MODEL, chat(document('TENANT-B', bTokens), { stream }))
          expect(leaked(b)).toEqual([])
          expect(b.status).toBe(502)
          expect(b.code).toBe('response_quarantined')
          const record = await quarantine.get(b.incidentId!)
          expect(record?.tenant).toBe('tenant-b')
          expect(record?.reasons.join(',')).toMatch(reason)
          if (record?.reasons.includes('foreign_canary')) {
            expect(record.sourceTenants).toEqual(['tenant-a'])
          }
        }, 30_000)
      }
    }
  }

  it('should release in-limit answers with their own content and the canary stripped', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine({ ...SIM, mode: 'pd-abort-leak' }, { clock })
    const send = direct(engine.binding('account'), {
      secret: SECRET,
      models: { [MODEL]: WRONG_PROFILE },
      minTimingEvidenceMs: 1,
      now: () => clock.now(),
    })
    for (const stream of [false, true]) {
      const b = await send('tenant-b', MODEL, chat(document('TENANT-B', 3_000), { stream }))
      expect(b.status).toBe(200)
      expect(b.text).toContain('TENANT-B')
      expect(new RegExp(CANARY_PATTERN.source, 'i').test(b.text)).toBe(false)
    }
  }, 30_000)
})
