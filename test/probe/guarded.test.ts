import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { guardAi } from '../../src/guard'
import { runnerTransport, runProbe } from '../../src/probe'
import { expectLimitPinned, GLM, probeSim, targetRatio } from './sim'

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
    // The top is the largest prompt sent, up to the last correction of the target's count ratio
    // (learnt from each answer; Qwen3 counts the probe's filler about 1.5× o200k).
    expect(Math.abs((report.largestOk?.tokens ?? 0) - report.top)).toBeLessThan(report.top * 0.001)
    // In the target's tokens it leaves room for max_tokens and the template.
    const top = report.top * targetRatio(report)
    expect(top).toBeGreaterThan(131_072 - 1024 - 64 - 200)
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
