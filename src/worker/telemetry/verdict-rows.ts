/**
 * @module What one verdict becomes in telemetry, as pure functions: whether its sample is kept (a
 * deterministic sampler), the sample row, and the counter and histogram increments with every label
 * bounded — label values come from requests, so they are hostile input.
 */

import type { VerdictLog } from '../../core'
import { SCRIPT_CLASSES } from '../../core'
import type { CounterRow, HistogramMetric, VerdictSample } from './types'

/**
 * Upper bounds of the TTFT and first-byte buckets, seconds. From a cached short prompt (tens of ms)
 * to the first-token timeout (120 s): a 1M-token prefill at the physical bound takes seconds, a
 * placeholder answer milliseconds, and both ends must fall in different buckets.
 */
export const SECONDS_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 120] as const

/** The label value every model outside the configured set is counted under. */
export const OTHER = 'other'

/** A reason code as the guard writes them; anything else is counted as {@link OTHER}. */
const REASON_CODE = /^[a-z][a-z0-9_]{0,63}$/

/** A secret kind: built-in or an operator pattern's name (src/plugins/secrets/operator-pattern.ts). */
const SECRET_KIND = /^[a-z0-9][a-z0-9-]{1,39}$/

/** Longest model and tenant names kept in a sample row (Workers AI names are far shorter). */
const MAX_NAME = 256

/**
 * Whether a verdict's sample row is kept: every refusal and quarantine, and a release when the hash of
 * its request id falls under `rate` — deterministic (the same request is always kept or always not,
 * whichever isolate sees it), unbiased (request ids are random), and free of shared state.
 *
 * @example
 * keepSample({ action: 'release', requestId: 'r1' }, 0.1) // true for about 1 request in 10
 */
export function keepSample(event: Pick<VerdictLog, 'action' | 'requestId'>, rate: number): boolean {
  if (event.action !== 'release') return true
  if (rate >= 1) return true
  if (!(rate > 0)) return false
  return unitHash(event.requestId) < rate
}

/**
 * The sample weight of a kept verdict: 1 for refusals and quarantines (all kept), 1 / rate for
 * releases (each stands for that many).
 *
 * @example
 * sampleWeight('release', 0.1) // 10
 */
export function sampleWeight(action: VerdictLog['action'], rate: number): number {
  return action === 'release' && rate > 0 && rate < 1 ? 1 / rate : 1
}

/** FNV-1a (32 bits) of a string, as a fraction in [0, 1). */
function unitHash(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  // A final avalanche: FNV's low bits mix poorly for ids that differ only in their last characters.
  hash ^= hash >>> 16
  hash = Math.imul(hash, 0x85ebca6b)
  hash ^= hash >>> 13
  return (hash >>> 0) / 2 ** 32
}

/**
 * The sample row of a verdict at time `at` (figures only: the log line carries no text either).
 *
 * @example
 * const sample = sampleOf(event, Date.now(), 1)
 */
export function sampleOf(event: VerdictLog, at: number, weight: number): VerdictSample {
  return {
    at,
    model: event.model.slice(0, MAX_NAME),
    tenant: event.tenant.slice(0, MAX_NAME),
    action: event.action,
    reasons: [...event.reasons],
    ...optional('estimatedTokens', event.estimatedTokens),
    ...optional('tokenBound', event.tokenBound),
    ...optional('ttftMs', event.ttftMs),
    ...optional('expectedMinMs', event.expectedMinMs),
    ...optional('firstByteMs', event.firstByteMs),
    ...(event.scripts && event.scripts.length > 0 ? { scripts: [...event.scripts] } : {}),
    ...(event.incidentId !== undefined ? { incidentId: event.incidentId } : {}),
    weight,
  }
}

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value !== undefined && Number.isFinite(value)
    ? ({ [key]: Math.round(value) } as Record<K, number>)
    : {}
}

/** One histogram observation: which metric, which bucket, the value in seconds. */
interface Observation {
  metric: HistogramMetric
  model: string
  le: string
  seconds: number
}

/** What one verdict adds to the exact metrics. */
interface Increments {
  /** Counter rows with `value` = the amount to add. */
  counters: CounterRow[]
  observations: Observation[]
}

/**
 * The counter and histogram increments of a verdict. Labels are bounded here, before anything is
 * stored: the model is its own name only when it is in `models` (the configured profiles — a tenant
 * cannot add one), reasons must look like reason codes, scripts must be known classes; anything else
 * becomes {@link OTHER}. There is no tenant label: tenants are as many as the operator has keys, a
 * series per tenant would multiply every other label by that number, and which tenant did what is the
 * console's question (samples, incidents), not a scrape's.
 *
 * @example
 * const { counters, observations } = incrementsOf(event, new Set(['@cf/zai-org/glm-5.3']))
 */
export function incrementsOf(event: VerdictLog, models: ReadonlySet<string>): Increments {
  const model = models.has(event.model) ? event.model : OTHER
  const action = event.action
  const reasons = [...new Set(event.reasons.map(reasonLabel))]
  const counters: CounterRow[] = []
  const add = (metric: CounterRow['metric'], labels: Partial<CounterRow>, value = 1) =>
    counters.push({ metric, model, action: '', reason: '', script: '', ...labels, value })
  // Each verdict once, under its first (strongest) reason, so the series add up to the requests.
  add('verdicts', { action, reason: reasons[0] ?? 'none' })
  for (const reason of reasons) add('verdict_reasons', { action, reason })
  if (action === 'reject') {
    const scripts = [...new Set((event.scripts ?? []).map(scriptLabel))]
    for (const script of scripts.length > 0 ? scripts : ['none']) {
      add('refusals', { reason: reasons[0] ?? 'none', script })
    }
  }
  if (event.reasons.includes('store_failed')) add('quarantine_store_failures', {})
  // Secrets by what happened to them and their kind (in the `reason` column; kinds are bounded by the
  // guard's detectors and the operator's patterns).
  for (const [part, counts] of Object.entries(event.secrets ?? {})) {
    for (const [kind, count] of Object.entries(counts ?? {})) {
      if (Number.isInteger(count) && count > 0)
        add('secrets', { action: part, reason: kindLabel(kind) }, count)
    }
  }
  const observations: Observation[] = []
  const observe = (metric: HistogramMetric, ms: number | undefined) => {
    if (ms === undefined || !Number.isFinite(ms) || ms < 0) return
    const seconds = ms / 1000
    observations.push({ metric, model, le: bucketOf(seconds), seconds })
  }
  observe('ttft', event.ttftMs)
  observe('first_byte', event.firstByteMs)
  return { counters, observations }
}

/**
 * The `le` label of the bucket a value falls in.
 *
 * @example
 * bucketOf(0.3) // '0.5'
 */
function bucketOf(seconds: number): string {
  for (const bound of SECONDS_BUCKETS) if (seconds <= bound) return String(bound)
  return '+Inf'
}

function reasonLabel(reason: string): string {
  return REASON_CODE.test(reason) ? reason : OTHER
}

function kindLabel(kind: string): string {
  return SECRET_KIND.test(kind) ? kind : OTHER
}

function scriptLabel(script: string): string {
  return (SCRIPT_CLASSES as readonly string[]).includes(script) ? script : OTHER
}
