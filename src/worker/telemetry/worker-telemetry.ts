/**
 * @module The Worker's verdict telemetry: samples and counters in D1 (QUARANTINE_DB), written in the
 * background for the console and /admin/metrics.
 */

import type { VerdictContext, VerdictLog } from '../../core'
import { BUILTIN_PROFILES } from '../../core'
import { DurableCalibration } from '../durable-calibration'
import type { Env } from '../env'
import { D1Telemetry } from './d1-telemetry'

const telemetries = new WeakMap<Env, D1Telemetry>()

/**
 * The isolate's telemetry for these bindings, or `undefined` when there is no D1 or it is switched
 * off (`VERDICT_TELEMETRY=off`). Throws when a `VERDICT_*` variable is invalid (naming it).
 *
 * @example
 * const telemetry = telemetryFor(env)
 * const points = await telemetry?.samples({ since: Date.now() - 86_400_000 })
 */
export function telemetryFor(env: Env): D1Telemetry | undefined {
  if (!env.QUARANTINE_DB || env.VERDICT_TELEMETRY === 'off') return undefined
  let telemetry = telemetries.get(env)
  if (!telemetry) {
    telemetry = new D1Telemetry(env.QUARANTINE_DB, {
      ...numberVar('sampleRate', env.VERDICT_SAMPLE_RATE),
      ...numberVar('retentionDays', env.VERDICT_RETENTION_DAYS),
      ...numberVar('maxSamples', env.VERDICT_MAX_SAMPLES),
      models: configuredModels(env),
      ...(env.GUARD_STATE ? { margins: new DurableCalibration(env.GUARD_STATE) } : {}),
    })
    telemetries.set(env, telemetry)
  }
  return telemetry
}

/**
 * Records one verdict in the background (`waitUntil`): never delays the answer and never throws; a
 * failed write is one `ai_guard_telemetry_failed` log line.
 *
 * @example
 * recordVerdict(env, event, { waitUntil: (p) => ctx.waitUntil(p) })
 */
export function recordVerdict(env: Env, event: VerdictLog, context: VerdictContext): void {
  if (!env.QUARANTINE_DB || env.VERDICT_TELEMETRY === 'off') return
  // Started on the next timer turn, not now: workerd held a response back until a D1 call begun
  // before it was returned had finished (measured in docs/telemetry.md). The verdict is logged just
  // before the answer is returned, so a write started at once would sit in front of it.
  const write = new Promise((resolve) => setTimeout(resolve, 0)).then(() => {
    const telemetry = telemetryFor(env)
    return telemetry?.record(event)
  })
  const logged = write.catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error)
    console.error(
      JSON.stringify({
        event: 'ai_guard_telemetry_failed',
        requestId: event.requestId,
        error: message.slice(0, 300),
      }),
    )
  })
  context.waitUntil?.(logged)
}

/**
 * The models the metrics name: the built-in profiles and those configured in GUARD_MODELS. Any other
 * name a request carries is counted as `other` (the guard refuses unknown models anyway).
 */
function configuredModels(env: Env): string[] {
  const models = Object.keys(BUILTIN_PROFILES)
  try {
    const configured: unknown = env.GUARD_MODELS ? JSON.parse(env.GUARD_MODELS) : {}
    if (configured && typeof configured === 'object') models.push(...Object.keys(configured))
  } catch {
    // The guard itself refuses to start on bad GUARD_MODELS and says so; nothing to add here.
  }
  return models
}

function numberVar<K extends string>(
  option: K,
  value: string | undefined,
): Partial<Record<K, number>> {
  if (value === undefined || value.trim() === '') return {}
  const n = Number(value)
  if (!Number.isFinite(n)) throw new Error(`${option} variable is not a number`)
  return { [option]: n } as Record<K, number>
}
