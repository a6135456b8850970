import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import type { SimConfig } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { type GuardOptions, MemoryQuarantineStore, type VerdictLog } from '../../src'
import { Guard } from '../../src/core/guard/guard'
import { DEFAULT_PLUGINS } from '../../src/default-plugins'
import type { FingerprintBook } from '../../src/plugins/foreign-content/fingerprint-book'
import { document } from '../support/prompts'
import { privateText, STALE_MIDDLE_PROFILE, STALE_MIDDLE_SIM } from '../support/stale-middle'
import { recordVerdicts } from '../support/verdicts'

/**
 * The memo of each tenant's long texts (src/core/memo) against its adversaries: a resent prompt must stay
 * as protected as a new one (its fingerprints in the table, a leak of it withheld naming its sender),
 * and no verdict may differ with the memo on or off — only how fast it comes.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'text-memo-guard-test-secret-0123456789abcdef'
const LEAKY = STALE_MIDDLE_SIM
const PROFILE = STALE_MIDDLE_PROFILE

function setup(options: Partial<GuardOptions> = {}) {
  const clock = new VirtualClock()
  const engine = new SimEngine(LEAKY, { clock })
  const quarantine = new MemoryQuarantineStore()
  const guard = new Guard(
    {
      secret: SECRET,
      models: { [MODEL]: PROFILE },
      quarantine: { store: quarantine },
      hooks: { onVerdict: () => {}, now: () => clock.now() },
      ...options,
    },
    DEFAULT_PLUGINS,
  )
  /** One whole request of `tenant`: the text it received, or the error. */
  const send = async (tenant: string, messages: Record<string, unknown>[]) => {
    const ai = guard.runner(engine.binding('gateway'), tenant)
    try {
      const out = (await ai.run(MODEL, { messages, max_tokens: 1_024 })) as {
        choices: { message: Record<string, string> }[]
      }
      const message = out.choices[0]!.message
      return { delivered: `${message.reasoning_content ?? ''}${message.content ?? ''}` }
    } catch (error) {
      return { delivered: '', error }
    }
  }
  const lastIncident = async () => {
    const [summary] = await quarantine.list()
    return summary ? quarantine.get(summary.id) : undefined
  }
  return { engine, guard, send, lastIncident, clock }
}

/** A conversation's turn: the long document first, then what was said so far, then a question. */
function turn(document: string, history: string[], question: string): Record<string, unknown>[] {
  return [
    { role: 'user', content: document },
    ...history.flatMap((answer, i) => [
      { role: 'assistant', content: answer },
      { role: 'user', content: `Follow-up ${i + 1}?` },
    ]),
    { role: 'user', content: question },
  ]
}

describe('text memo: a resent prompt is as protected as a new one', () => {
  it("should withhold B's answer quoting A's document that A resent turn after turn", async () => {
    const { engine, guard, send, lastIncident } = setup()
    const a = privateText(1)
    const history: string[] = []
    for (let i = 0; i < 3; i++) {
      const answer = await send('tenant-a', turn(a, history, `Question ${i}?`))
      expect(answer.error).toBeUndefined()
      history.push(answer.delivered.slice(0, 200))
    }
    // Turns two and three found the document's count and print in the memo.
    expect(guard.memo!.stats().hits).toBeGreaterThanOrEqual(4)
    engine.configure({ staleRate: 1 })
    const b = await send('tenant-b', turn(privateText(2), [], 'Summarise.'))
    expect(b.error).toBeDefined()
    expect(b.delivered).toBe('')
    const incident = await lastIncident()
    expect(incident?.reasons).toEqual(['foreign_content'])
    expect(incident?.sourceTenants).toEqual(['tenant-a'])
  }, 60_000)

  it('should put a resent document in the table again once the table has rotated', async () => {
    // A small table: a few prompts of other tenants make it rotate twice, dropping what A sent first.
    const { engine, guard, send, lastIncident } = setup({
      content: { budgetBytes: 256 * 1024 },
    })
    const table = (guard.content as unknown as { book: FingerprintBook }).book.table
    const a = privateText(3)
    expect((await send('tenant-a', turn(a, [], 'First?'))).error).toBeUndefined()
    const start = table.rotations
    for (let i = 0; table.rotations < start + 2; i++) {
      expect(i).toBeLessThan(200)
      await send(`filler-${i % 6}`, turn(privateText(100 + i), [], 'Go on.'))
    }
    // A's document now lives only in the memo's "added" mark: the table has dropped it.
    expect((await send('tenant-a', turn(a, ['An answer.'], 'Second?'))).error).toBeUndefined()
    engine.configure({ staleRate: 1 })
    // B's stale pages are A's (the fillers' pages were freed before A's last request).
    const b = await send('tenant-b', turn(privateText(4), [], 'Summarise.'))
    const sources = engine.stats().recent.findLast((r) => r.staleSources.length > 0)!.staleSources
    expect(sources.length).toBeGreaterThan(0)
    expect(b.error).toBeDefined()
    expect(b.delivered).toBe('')
    expect((await lastIncident())?.sourceTenants).toEqual(['tenant-a'])
  }, 120_000)

  it('should keep a resent document visible for the ttl after its last send', async () => {
    // ttl 60 s: a resent document is left as it is in the table for at most a second (ttl / 60).
    const { engine, send, lastIncident, clock } = setup({ content: { ttlMs: 60_000 } })
    const a = privateText(5)
    expect((await send('tenant-a', turn(a, [], 'First?'))).error).toBeUndefined()
    // Resent 25 s later, within one table generation (they rotate at the ttl).
    clock.advance(25_000)
    expect((await send('tenant-a', turn(a, ['Answer.'], 'Second?'))).error).toBeUndefined()
    // 70 s after the first send, 45 s after the last: visible only if the resend moved its time.
    clock.advance(45_000)
    engine.configure({ staleRate: 1 })
    const b = await send('tenant-b', turn(privateText(6), [], 'Summarise.'))
    expect(b.error).toBeDefined()
    expect(b.delivered).toBe('')
    expect((await lastIncident())?.sourceTenants).toEqual(['tenant-a'])
  }, 60_000)
})

describe('text memo: the same verdicts on or off', () => {
  /** The timing test's scale: an honest engine at 50,000 tok/s, a physical bound of 200,000. */
  const TIMED_SIM: Partial<SimConfig> = {
    mode: 'pd-abort-leak',
    poolTokens: 65_536,
    contextWindow: 131_072,
    prefillTokensPerSecond: 50_000,
    decodeTokensPerSecond: 100,
    seed: 5,
  }
  const TIMED = {
    contextWindow: 131_072,
    kvPoolTokens: 131_072,
    maxPrefillTokensPerSecond: 200_000,
    defaultOutputReserve: 256,
  }

  /** One fixed sequence of requests; what the guard decided about each, without ids. */
  async function decisions(
    textMemo: NonNullable<GuardOptions['ceiling']>['textMemo'],
  ): Promise<Partial<VerdictLog>[]> {
    const clock = new VirtualClock()
    const engine = new SimEngine(TIMED_SIM, { clock })
    const verdicts = recordVerdicts()
    let id = 0
    const guard = new Guard(
      {
        secret: SECRET,
        models: { [MODEL]: TIMED },
        quarantine: { store: new MemoryQuarantineStore() },
        hooks: {
          onVerdict: verdicts.onVerdict,
          now: () => clock.now(),
          requestId: () => `request-${id++}`,
        },
        ceiling: { textMemo },
      },
      DEFAULT_PLUGINS,
    )
    const run = (tenant: string, messages: Record<string, unknown>[], stream = false) =>
      guard
        .runner(engine.binding('account'), tenant)
        .run(MODEL, { messages, max_tokens: 200, ...(stream ? { stream: true } : {}) })
        .then(async (out) => {
          if (out instanceof ReadableStream) await new Response(out).text()
        })
        .catch(() => {})
    const docA = document('TENANT-A', 30_000)
    await run('tenant-a', turn(docA, [], 'One?'))
    await run('tenant-a', turn(docA, ['Answer one.'], 'Two?'), true)
    // Over the pool: answered from a placeholder, at once — timing and content must both say so.
    await run('tenant-b', turn(document('TENANT-B', 70_000), [], 'Three?'))
    await run('tenant-a', turn(docA, ['Answer one.', 'Answer two.'], 'Four?'))
    // Another tenant sends A's very document: its own prompt, nothing remembered of it for C.
    await run('tenant-c', turn(docA, [], 'Five?'), true)
    await run('tenant-b', turn(document('TENANT-B', 70_000), [], 'Six?'), true)
    return verdicts.events.map((event) => ({
      tenant: event.tenant,
      action: event.action,
      reasons: event.reasons,
      estimatedTokens: event.estimatedTokens,
      tokenBound: event.tokenBound,
      ttftMs: event.ttftMs,
      expectedMinMs: event.expectedMinMs,
    }))
  }

  it('should decide every request the same with the memo on or off', async () => {
    const on = await decisions(undefined)
    const off = await decisions(false)
    expect(on).toEqual(off)
    // The sequence exercises both outcomes, so the comparison means something.
    expect(on.map((d) => d.action)).toContain('release')
    expect(on.map((d) => d.action)).toContain('quarantine')
    expect(on.some((d) => d.estimatedTokens !== undefined)).toBe(true)
  }, 120_000)
})
