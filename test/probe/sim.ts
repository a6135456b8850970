/**
 * @module Probe runs against the simulator on a virtual clock, shared by the probe's workerd tests.
 */
import { expect } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { type SimConfig, SimEngine } from '../../sim/engine'
import {
  type ProbeOptions,
  type ProbeReport,
  runnerTransport,
  runProbe,
} from '../../src/tools/probe'

/** The model probed. */
export const GLM = '@cf/zai-org/glm-5.3'

/** SGLang's real limit for the published pool: min(window − 1, pool − 1) − 5. */
export const REAL_LIMIT = 681_280 - 1 - 5

/**
 * Probes a fresh simulator (published figures unless `config` says otherwise) prefilling at a real
 * 50,000 tok/s on a virtual clock: TTFTs are exact and cost no wall time.
 */
export async function probeSim(
  config: Partial<SimConfig>,
  options: Omit<ProbeOptions, 'transport'> = {},
): Promise<ProbeReport> {
  const clock = new VirtualClock()
  const engine = new SimEngine({ decodeTokensPerSecond: Infinity, ...config }, { clock })
  return await runProbe({
    transport: runnerTransport(engine.binding('probe'), {
      model: GLM,
      now: () => clock.now(),
      target: 'sim',
    }),
    seed: 11,
    ...options,
  })
}

/**
 * The target's tokens per o200k token, measured on the largest answered prompt: the probe sizes its
 * prompts in o200k, and the simulated model (Qwen3) splits the probe's tagged filler more finely.
 */
export function targetRatio(report: ProbeReport): number {
  const ok = report.largestOk
  return ok?.reportedPromptTokens ? ok.reportedPromptTokens / ok.tokens : 1
}

/** The report pins `limit` (in the target's own tokens) to within 1%, from below and above. */
export function expectLimitPinned(report: ProbeReport, limit: number): void {
  const good = report.largestOk?.reportedPromptTokens ?? 0
  expect(good).toBeLessThanOrEqual(limit)
  expect(good).toBeGreaterThanOrEqual(limit * 0.99)
  // The failure was sized in o200k tokens; the same filler at the same ratio puts it, in the target's
  // tokens, just above the limit (the ratio drifts by a few hundredths of a percent between lengths).
  const failed = (report.smallestFailure?.tokens ?? 0) * targetRatio(report)
  expect(failed).toBeGreaterThan(limit * 0.999)
  expect(failed).toBeLessThanOrEqual(limit * 1.01)
  expect(report.converged).toBe(true)
}
