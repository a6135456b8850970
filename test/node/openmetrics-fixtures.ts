/**
 * @module What the /admin/metrics format tests render: a day's worth of verdicts summed into the rows
 * D1's upserts would hold.
 */
import type { VerdictLog } from '../../src'
import type { CounterRow, HistogramRow, MetricsSnapshot } from '../../src/worker/telemetry/types'
import { incrementsOf } from '../../src/worker/telemetry/verdict-rows'

/** Most model label values on the page, the rest folded into `other` (docs/telemetry.md). */
export const MAX_MODEL_SERIES = 32

export const GLM = '@cf/zai-org/glm-5.3'
export const LLAMA = '@cf/meta/llama-3.3-70b-instruct-fp8-fast'
export const MODELS = new Set([GLM, LLAMA])

/** Sums a list of verdicts into rows, as D1's upserts would. */
export function snapshotOf(events: VerdictLog[]): MetricsSnapshot {
  const counters = new Map<string, CounterRow>()
  const histograms = new Map<string, HistogramRow>()
  for (const event of events) {
    const { counters: add, observations } = incrementsOf(event, MODELS)
    for (const row of add) {
      const key = JSON.stringify([row.metric, row.model, row.action, row.reason, row.script])
      const old = counters.get(key)
      if (old) old.value += row.value
      else counters.set(key, { ...row })
    }
    for (const o of observations) {
      const key = JSON.stringify([o.metric, o.model, o.le])
      const old = histograms.get(key) ?? {
        metric: o.metric,
        model: o.model,
        le: o.le,
        count: 0,
        sum: 0,
      }
      old.count += 1
      old.sum += o.seconds
      histograms.set(key, old)
    }
  }
  return { counters: [...counters.values()], histograms: [...histograms.values()] }
}

export function verdict(overrides: Partial<VerdictLog>): VerdictLog {
  return {
    requestId: 'r',
    tenant: 'tenant-a',
    model: GLM,
    action: 'release',
    reasons: [],
    ...overrides,
  }
}

/** A day's worth of shapes: clean releases, retries, refusals by script, quarantines, a store failure. */
export const TRAFFIC: VerdictLog[] = [
  ...Array.from({ length: 40 }, (_, i) =>
    verdict({ ttftMs: 30 + i * 137, firstByteMs: 35 + i * 140, estimatedTokens: 1000 * i }),
  ),
  verdict({ model: LLAMA, ttftMs: 800, firstByteMs: 900 }),
  verdict({ reasons: ['released_after_retry'], ttftMs: 2_400, firstByteMs: 2_500 }),
  verdict({ action: 'reject', reasons: ['context_length_exceeded'], scripts: ['georgian'] }),
  verdict({ action: 'reject', reasons: ['context_length_exceeded'], scripts: ['han', 'latin'] }),
  verdict({ action: 'reject', reasons: ['echo_cut_off'] }),
  verdict({
    action: 'quarantine',
    reasons: ['foreign_canary', 'echo_missing'],
    ttftMs: 4,
    incidentId: 'inc_1',
    sourceTenants: ['tenant-b'],
  }),
  verdict({ action: 'quarantine', reasons: ['ttft_impossible', 'store_failed'], ttftMs: 2 }),
  verdict({ ttftMs: 300_000, firstByteMs: 300_100 }), // beyond the last bound: +Inf only
  verdict({
    secrets: { substituted: { 'card-number': 2, 'openai-key': 1 }, detected: { 'us-ssn': 1 } },
  }),
  verdict({ secrets: { substituted: { 'card-number': 3 }, restored: { 'card-number': 3 } } }),
  verdict({
    action: 'quarantine',
    reasons: ['foreign_stand_in'],
    incidentId: 'inc_2',
    secrets: { foreign: { 'github-token': 1 } },
  }),
]
