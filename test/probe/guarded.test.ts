import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { guardAi } from '../../src/create-guard'
import { ratioMargin, runnerTransport, runProbe } from '../../src/probe'
import { expectLimitPinned, GLM, probeSim } from './sim'

describe('probe of healthy and guarded deployments', { timeout: 30_000 }, () => {
  it('should call a deployment safe (exit 0) when its pool holds the whole window', async () => {
    const report = await probeSim(
      { mode: 'pd-abort-leak', contextWindow: 131_072, poolTokens: 262_144 },
      { window: 131_072 },
    )
    expect(report).toMatchObject({
      verdict: 'safe',
      exitCode: 0,
      leak: false,
      impossibleTtft: false,
    })
    expect(report.smallestFailure).toBeNull()
    // The top is the largest prompt sent, sized with the target's count ratio learnt from the answer
    // before it (Qwen3 counts the probe's filler about 1.46× o200k); once answered it stays put.
    expect(report.largestOk?.tokens).toBe(report.top)
    // In the target's tokens it leaves room for max_tokens and the template, and the ratio margin
    // (0.4% for a ratio learnt at 65,536 tokens) for the next prompt's own ratio, and little else.
    const top = report.largestOk?.reportedPromptTokens ?? 0
    const room = 131_072 - 1024 - 64
    expect(top).toBeGreaterThan(room * (1 - ratioMargin(65_536)) - 200)
    expect(top).toBeLessThanOrEqual(131_072 - 1024)
    expect(report.steps.map((s) => s.kind)).toEqual(report.steps.map(() => 'ok'))
    expect(report.summary).toMatch(/^SAFE/)
  })

  it('should measure the guard’s own ceiling, below the pool, with no leak', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine(
      { contextWindow: 131_072, poolTokens: 65_536, decodeTokensPerSecond: Infinity },
      { clock },
    )
    // The simulated model quotes the last line it sees; the guard's echo directive would be that
    // line, so its canary is scanned for but not echoed (a real model follows both instructions).
    const guarded = guardAi(engine.binding('probe'), {
      secret: 'probe-test-secret-that-is-at-least-32-bytes',
      tenant: 'probe',
      now: () => clock.now(),
      models: { [GLM]: { contextWindow: 131_072, kvPoolTokens: 65_536, echo: 'scan-only' } },
      onVerdict: () => undefined,
    })
    const report = await runProbe({
      transport: runnerTransport(guarded, { model: GLM, now: () => clock.now() }),
      window: 131_072,
      seed: 5,
    })
    expect(report).toMatchObject({ verdict: 'unsafe', leak: false, impossibleTtft: false })
    expect(report.smallestFailure?.kind).toBe('error')
    expect(report.smallestFailure?.detail).toMatch(/^400: /)
    // The guard refuses below the pool (output reserve, drift margin): the engine never leaks. In the
    // engine's own tokens, which is what the pool holds.
    const good = report.largestOk?.reportedPromptTokens ?? 0
    expect(good).toBeLessThan(65_536 - 1024)
    expect(good).toBeGreaterThan(65_536 * 0.8)
    expect(engine.stats().requests.byOutcome.placeholder).toBe(0)
  })

  it('should pin a small pool too (the same search at another scale)', async () => {
    const report = await probeSim(
      { mode: 'pd-abort-leak', contextWindow: 65_536, poolTokens: 20_480 },
      { window: 65_536 },
    )
    expectLimitPinned(report, 20_480 - 1 - 5)
    expect(report.leak).toBe(true)
  })
})
