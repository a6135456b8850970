/**
 * @module The scaled-down incident as a reusable suite: any way of reaching the leaking engine (the
 * binding, an OpenAI-compatible HTTP server) must keep every byte of tenant A away from tenant B.
 */
import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import type { SimMode } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { CANARY_PATTERN, MemoryQuarantineStore } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { chat, document } from './prompts'
import { type Delivered, direct, SURFACES } from './surfaces'
import { recordVerdicts } from './verdicts'

/**
 * The incident, scaled down 80× so every case runs in well under a second: a 8,192-token pool behind a
 * 16,384-token window, and a guard whose profile wrongly believes the pool is as large as the window —
 * so over-pool requests reach the engine and only the canary and timing guards stand in the way.
 */
export const LEAK = {
  model: '@cf/zai-org/glm-5.3',
  secret: 'leak-test-canary-secret-0123456789abcdef',
  sim: {
    poolTokens: 8_192,
    contextWindow: 16_384,
    prefillTokensPerSecond: 400_000,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    seed: 11,
  },
  wrongProfile: {
    contextWindow: 16_384,
    kvPoolTokens: 16_384,
    maxPrefillTokensPerSecond: 800_000,
    defaultOutputReserve: 256,
  },
} as const

/** How a suite reaches the engine: the binding itself, or any adapter in front of it. */
export type UpstreamOf = (engine: SimEngine) => AiRunner

/** Whether a text holds anything shaped like a canary (stripped ones must leave no trace). */
export function hasCanary(text: string): boolean {
  return new RegExp(CANARY_PATTERN.source, 'i').test(text)
}

/** What of tenant A, or of any canary, a delivery to someone else contains. */
export function leaked(delivered: Delivered): string[] {
  const found: string[] = []
  if (delivered.text.includes('TENANT-A')) found.push('TENANT-A text')
  if (hasCanary(delivered.text)) found.push('a canary')
  return found
}

/**
 * `document(tenant, …)` sized to `tokens` in the engine's own tokenizer (Qwen3 by default splits its
 * numbered lines about 1.3× finer than the nominal 16 tokens a line): sizes must sit between the real
 * pool and the window whatever the simulated model counts.
 */
async function documentOf(engine: SimEngine, tenant: string, tokens: number): Promise<string> {
  const nominal = Math.round(
    (tokens * tokens) / (await engine.countTokens(chat(document(tenant, tokens)))),
  )
  return document(tenant, nominal)
}

/** B's size in the engine's tokens: over the real limit (8,186) and under the wrong ceiling (16,128). */
const CASES: { mode: SimMode; bTokens: number; reason: RegExp }[] = [
  { mode: 'pd-abort-leak', bTokens: 12_000, reason: /foreign_canary|ttft_impossible/ },
  { mode: 'truncate', bTokens: 12_000, reason: /echo_missing|usage_undercount/ },
  { mode: 'stale-pages', bTokens: 5_000, reason: /foreign_canary|echo_missing/ },
]

/**
 * Registers the leak suite for one way of reaching the engine: every leak mode, whole and streamed,
 * through `guardAi` and the middleware (must quarantine), and in-limit answers (must release).
 *
 * @example
 * leakScenario('binding', (engine) => engine.binding('account'))
 */
export function leakScenario(name: string, upstreamOf: UpstreamOf): void {
  describe(`canaries against the leaking engine (${name})`, () => {
    for (const [surfaceName, surface] of SURFACES) {
      for (const { mode, bTokens, reason } of CASES) {
        for (const stream of [false, true]) {
          it(`should deliver no byte of tenant A to tenant B (${surfaceName}, ${mode}, ${stream ? 'stream' : 'whole'})`, async () => {
            // One virtual clock for engine and guard: TTFT is the simulated prefill, to the millisecond.
            const clock = new VirtualClock()
            const engine = new SimEngine({ ...LEAK.sim, mode: 'fixed' }, { clock })
            const quarantine = new MemoryQuarantineStore()
            const verdicts = recordVerdicts()
            const send = surface(upstreamOf(engine), {
              secret: LEAK.secret,
              models: { [LEAK.model]: LEAK.wrongProfile },
              quarantine: { store: quarantine },
              hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
              timing: { minEvidenceMs: 5 },
            })
            // Tenant A's answer is A's own: released, A's text in it, no canary.
            const a = await send(
              'tenant-a',
              LEAK.model,
              chat(await documentOf(engine, 'TENANT-A', 6_000), { stream }),
            )
            expect(a.status).toBe(200)
            expect(a.text).toContain('TENANT-A')
            expect(hasCanary(a.text)).toBe(false)

            engine.configure({ mode })
            const b = await send(
              'tenant-b',
              LEAK.model,
              chat(await documentOf(engine, 'TENANT-B', bTokens), { stream }),
            )
            expect(leaked(b)).toEqual([])
            expect(b.status).toBe(422)
            expect(b.code).toBe('response_quarantined')
            const record = await quarantine.get(b.incidentId!)
            expect(record?.tenant).toBe('tenant-b')
            expect(record?.reasons.join(',')).toMatch(reason)
            if (record?.reasons.includes('foreign_canary')) {
              expect(record.sourceTenants).toEqual(['tenant-a'])
            }
            // The operator's log names the incident once, under B.
            const logged = verdicts.of('quarantine')
            expect(logged.map((v) => [v.tenant, v.incidentId])).toEqual([
              ['tenant-b', b.incidentId],
            ])
          }, 30_000)
        }
      }
    }

    it('should release in-limit answers with their own content and the canary stripped', async () => {
      const clock = new VirtualClock()
      const engine = new SimEngine({ ...LEAK.sim, mode: 'pd-abort-leak' }, { clock })
      const verdicts = recordVerdicts()
      const send = direct(upstreamOf(engine), {
        hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
        secret: LEAK.secret,
        models: { [LEAK.model]: LEAK.wrongProfile },
        timing: { minEvidenceMs: 1 },
      })
      for (const stream of [false, true]) {
        const text = await documentOf(engine, 'TENANT-B', 3_000)
        const b = await send('tenant-b', LEAK.model, chat(text, { stream }))
        expect(b.status).toBe(200)
        expect(b.text).toContain('TENANT-B')
        expect(leaked(b)).toEqual([])
      }
      expect(verdicts.events.map((v) => v.action)).toEqual(['release', 'release'])
    }, 30_000)
  })
}
