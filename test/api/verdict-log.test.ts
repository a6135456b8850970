import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { createGuard, guardAi, type VerdictLog } from '../../src'
import { SCRIPT_CLASSES } from '../../src/core/ceiling/script'
import type { VerdictContext } from '../../src/core/vocabulary/options'
import { LEAK } from '../support/leak-scenario'
import { chat, document, english } from '../support/prompts'

/**
 * The verdict log's size figures mean what their names say: `estimatedTokens` is the model's tokens
 * (never a byte count — 0.2 logged 840,224 "estimated tokens" for a prompt of 374,383), and a prompt
 * admitted by its bytes alone says so with `tokenBound`.
 */
const MODEL = '@cf/zai-org/glm-5.3'

async function logged(tokens: number): Promise<{ log: VerdictLog; reported: number }> {
  const logs: VerdictLog[] = []
  // An honest engine on a virtual clock shared with the guard: prefill takes its simulated time.
  const clock = new VirtualClock()
  const engine = new SimEngine({ mode: 'fixed', prefillTokensPerSecond: 100_000 }, { clock })
  const ai = guardAi(engine.binding('app'), {
    secret: 'verdict-log-test-secret-0123456789abcdef',
    hooks: { onVerdict: (event) => logs.push(event), now: () => clock.now() },
  })
  const out = (await ai.run(MODEL, chat(english(tokens)))) as { usage: { prompt_tokens: number } }
  expect(logs.map((l) => l.action)).toEqual(['release'])
  return { log: logs[0]!, reported: out.usage.prompt_tokens }
}

describe('verdict log figures', { timeout: 60_000 }, () => {
  it('should log a short prompt admitted by its bytes with a token bound, not an estimate', async () => {
    const { log, reported } = await logged(2_000)
    expect(log.estimatedTokens).toBeUndefined()
    // The bytes of English text: about four times its tokens, and never fewer than them.
    expect(log.tokenBound).toBeGreaterThan(reported * 3)
  })

  it('should log a counted prompt’s estimate in the model’s tokens, close above what the engine counted', async () => {
    const { log, reported } = await logged(300_000)
    expect(log.tokenBound).toBeUndefined()
    expect(log.estimatedTokens).toBeGreaterThanOrEqual(reported)
    expect(log.estimatedTokens).toBeLessThan(reported * 1.1)
  })
})

/**
 * What the Worker's telemetry reads from each verdict line: a refusal names the script
 * classes behind its estimate, a quarantine the tenants whose data it carried, and the hook gets the
 * request's `waitUntil` so its writes never stand in front of the answer.
 */
describe('verdict log context', { timeout: 60_000 }, () => {
  const SMALL = { contextWindow: 16_384, kvPoolTokens: 8_192, defaultOutputReserve: 256 }

  it('should name the script classes that drove a refusal, and pass the request’s waitUntil', async () => {
    const logs: [VerdictLog, VerdictContext][] = []
    const engine = new SimEngine({ mode: 'fixed' })
    const guard = createGuard({
      secret: 'verdict-log-test-secret-0123456789abcdef',
      models: { [MODEL]: SMALL },
      hooks: { onVerdict: (event, context) => logs.push([event, context]) },
    })
    const pending: Promise<unknown>[] = []
    const waitUntil = (promise: Promise<unknown>) => {
      pending.push(promise)
    }
    const ai = guard.wrap(engine.binding('app'), { tenant: 't1', waitUntil })
    // Georgian splits about 7× finer than English in the model's tokens: 20,000 characters are far over.
    const georgian = 'ქართული ენა არის ლამაზი. '.repeat(800)
    await expect(ai.run(MODEL, chat(georgian))).rejects.toMatchObject({
      code: 'context_length_exceeded',
    })
    expect(logs).toHaveLength(1)
    const [event, context] = logs[0]!
    expect(event.action).toBe('reject')
    expect(event.reasons).toEqual(['context_length_exceeded'])
    expect(event.scripts?.[0]).toBe('georgian')
    expect(event.scripts!.every((s) => (SCRIPT_CLASSES as readonly string[]).includes(s))).toBe(
      true,
    )
    expect(context.waitUntil).toBeTypeOf('function')
    // The hook's waitUntil is the request's: what the hook hands it is what the host receives.
    const marker = Promise.resolve('telemetry write')
    context.waitUntil!(marker)
    expect(pending).toContain(marker)
  })

  it('should name the source tenants of a quarantine, and give no waitUntil when the host has none', async () => {
    const logs: [VerdictLog, VerdictContext][] = []
    const clock = new VirtualClock()
    const engine = new SimEngine({ ...LEAK.sim, mode: 'fixed' }, { clock })
    const guard = createGuard({
      secret: LEAK.secret,
      models: { [LEAK.model]: LEAK.wrongProfile },
      hooks: { onVerdict: (event, context) => logs.push([event, context]), now: () => clock.now() },
      timing: { minEvidenceMs: 5 },
    })
    const a = guard.wrap(engine.binding('app'), { tenant: 'tenant-a' })
    await a.run(MODEL, chat(document('TENANT-A', 5_000)))
    engine.configure({ mode: 'pd-abort-leak' })
    const b = guard.wrap(engine.binding('app'), { tenant: 'tenant-b' })
    await expect(b.run(MODEL, chat(document('TENANT-B', 9_000)))).rejects.toMatchObject({
      code: 'response_quarantined',
    })
    const quarantined = logs.filter(([event]) => event.action === 'quarantine')
    expect(quarantined).toHaveLength(1)
    const [event, context] = quarantined[0]!
    expect(event.tenant).toBe('tenant-b')
    expect(event.reasons).toContain('foreign_canary')
    expect(event.sourceTenants).toEqual(['tenant-a'])
    expect(event.incidentId).toMatch(/\S/)
    expect(context).toEqual({})
    // Releases carry neither field.
    const released = logs.find(([e]) => e.action === 'release')![0]
    expect(released.sourceTenants).toBeUndefined()
    expect(released.scripts).toBeUndefined()
  })
})
