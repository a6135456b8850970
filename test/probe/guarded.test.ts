import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { type SimConfig, SimEngine } from '../../sim/engine'
import { guardAi, type ModelProfile } from '../../src'
import {
  ratioMargin,
  renderReport,
  runnerTransport,
  runProbe,
  UPSTREAM_HINT,
  urlTransport,
} from '../../src/tools/probe'
import worker from '../../src/worker'
import type { Env } from '../../src/worker/env'
import { sim } from '../support/worker'
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

  it('should measure the guard’s own ceiling, below the pool, with no leak, and say so', async () => {
    // The guard's echo directive ends every prompt, after the probe's end needle: the simulated
    // model follows it as an instruction and still quotes the needle line before it.
    const { engine, report } = await probeGuarded(
      { contextWindow: 131_072, poolTokens: 65_536, decodeTokensPerSecond: Infinity },
      { contextWindow: 131_072, kvPoolTokens: 65_536 },
    )
    // Everything over the guard's ceiling was refused by the guard, everything under it answered
    // correctly: the client is safe (exit 0), and no profile is derived from the guard's own ceiling.
    expect(report).toMatchObject({
      verdict: 'guarded',
      exitCode: 0,
      leak: false,
      impossibleTtft: false,
      recommendation: null,
      profile: null,
      guard: { signs: ['refusal'], quarantines: 0 },
    })
    expect(report.guard?.refusals).toBe(report.steps.filter((s) => s.kind === 'error').length)
    expect(report.guard?.note).toContain(UPSTREAM_HINT)
    expect(report.smallestFailure?.kind).toBe('error')
    expect(report.smallestFailure?.detail).toMatch(/^400: This request needs /)
    // The guard refuses below the pool (output reserve, drift margin): the engine never leaks. In the
    // engine's own tokens, which is what the pool holds.
    const good = report.largestOk?.reportedPromptTokens ?? 0
    expect(good).toBeLessThan(65_536 - 1024)
    expect(good).toBeGreaterThan(65_536 * 0.8)
    expect(engine.stats().requests.byOutcome.placeholder).toBe(0)
  })

  it('should not call a guard whose profile is above the pool guarded: it quarantines, exit 1', async () => {
    const { report } = await probeGuarded(
      {
        contextWindow: 65_536,
        poolTokens: 20_480,
        prefillTokensPerSecond: 50_000,
        decodeTokensPerSecond: Infinity,
      },
      // Wrong: the profile believes the pool is the window, so over-pool prompts reach the engine.
      { contextWindow: 65_536, kvPoolTokens: 65_536 },
    )
    expect(report).toMatchObject({ verdict: 'unsafe', exitCode: 1, profile: null })
    expect(report.guard?.quarantines).toBeGreaterThan(0)
    expect(report.guard?.note).toMatch(/its profile allows more than the engine serves/)
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

/**
 * The guard Worker itself (its fetch handler, as `npm start` serves it), in front of the simulator
 * Worker, with a profile scaled down to the simulator's pool so the run stays short.
 */
describe('probe of the guard Worker', { timeout: 120_000 }, () => {
  it('should recognise the Worker, report the guard’s ceiling, and point at the upstream', async () => {
    await sim.reset({
      mode: 'pd-abort-leak',
      contextWindow: 32_768,
      poolTokens: 20_480,
      // Real waits, under both the guard's bound (1M tok/s here) and the probe's (200,000).
      prefillTokensPerSecond: 150_000,
      decodeTokensPerSecond: Infinity,
    })
    // A bindings object of its own: the Worker builds one guard per bindings object.
    const bindings = {
      ...(env as unknown as Env),
      GUARD_MODELS: JSON.stringify({
        [GLM]: { contextWindow: 32_768, kvPoolTokens: 20_480, maxPrefillTokensPerSecond: 1e6 },
      }),
    }
    const handler = worker.fetch as unknown as (
      request: Request,
      env: Env,
      ctx: ExecutionContext,
    ) => Promise<Response>
    const transport = urlTransport({
      url: 'http://guard.test/v1',
      apiKey: 'dev-key-tenant-a',
      model: GLM,
      fetch: async (input, init) => {
        const ctx = createExecutionContext()
        const res = await handler(new Request(input, init), bindings, ctx)
        await waitOnExecutionContext(ctx)
        return res
      },
    })
    const report = await runProbe({ transport, window: 32_768, seed: 3 })
    expect(report).toMatchObject({
      verdict: 'guarded',
      exitCode: 0,
      leak: false,
      impossibleTtft: false,
      recommendation: null,
      profile: null,
      profileSnippet: null,
      guard: { signs: ['refusal', 'response-header'], quarantines: 0 },
    })
    expect(report.smallestFailure?.detail).toMatch(/^HTTP 400: This request needs /)
    // Every answer under the ceiling came through the guard; the engine never saw an over-pool prompt.
    expect(
      report.steps.filter((s) => s.kind === 'ok').every((s) => s.guard === 'response-header'),
    ).toBe(true)
    const stats = await sim.stats()
    expect(stats.requests.byOutcome.placeholder).toBe(0)

    const text = renderReport(report)
    expect(text).toMatch(
      /^endpoint {9}a workers-ai-guard Worker \(seen: the guard’s own context_length_exceeded refusals, x-guard-\* response headers\) — this measures the guard’s ceiling, not the engine’s pool$/m,
    )
    expect(text).toMatch(/^verdict {10}GUARDED \(exit 0\)$/m)
    expect(text).toMatch(/^recommended {6}none: this is the guard’s own ceiling/m)
    expect(text).toContain('GUARDED: answered correctly up to ')
    expect(text).toContain(
      'https://api.cloudflare.com/client/v4/accounts/<account-id>/ai/v1 with an API token as --key',
    )
    expect(text).toContain('`npm run sim`, then --url http://localhost:8787/v1')
    expect(text).not.toContain('Profile for guardAi')
  })
})

/** The probe run through guardAi over a simulator with `sim`, the guard believing `profile`. */
async function probeGuarded(sim: Partial<SimConfig>, profile: Partial<ModelProfile>) {
  const clock = new VirtualClock()
  const engine = new SimEngine(sim, { clock })
  const guarded = guardAi(engine.binding('probe'), {
    secret: 'probe-test-secret-that-is-at-least-32-bytes',
    tenant: 'probe',
    hooks: { now: () => clock.now(), onVerdict: () => undefined },
    models: { [GLM]: profile },
  })
  const report = await runProbe({
    transport: runnerTransport(guarded, { model: GLM, now: () => clock.now() }),
    window: sim.contextWindow ?? 1_048_576,
    seed: 5,
  })
  return { engine, report }
}
