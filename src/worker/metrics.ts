/**
 * @module /admin/metrics: the guard's counters in OpenMetrics text (auth is the admin router's job).
 */

import { DurableCalibration } from './durable-calibration'
import type { Env } from './env'
import { OPENMETRICS_CONTENT_TYPE, renderOpenMetrics } from './telemetry/openmetrics'
import type { MetricsSnapshot } from './telemetry/types'
import { telemetryFor } from './telemetry/worker-telemetry'

/**
 * The metrics page: exact counters and histograms from D1, and the learned margins now from the
 * GuardState Durable Object. Without D1 (or with telemetry off) the families are written empty. A
 * store that cannot be read answers 503 in plain text: a scrape that fails is visible in Prometheus
 * (`up` = 0), a page of zeros would not be.
 *
 * @example
 * admin.get('/metrics', (c) => metricsResponse(c.env))
 */
export async function metricsResponse(env: Env): Promise<Response> {
  let snapshot: MetricsSnapshot
  try {
    const telemetry = telemetryFor(env)
    snapshot = telemetry ? await telemetry.metrics() : { counters: [], histograms: [] }
    const margins = await currentMargins(env)
    if (margins) snapshot.margins = margins
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    console.error(
      JSON.stringify({ event: 'ai_guard_metrics_failed', error: message.slice(0, 300) }),
    )
    return new Response('metrics unavailable\n', {
      status: 503,
      headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
    })
  }
  return new Response(renderOpenMetrics(snapshot), {
    headers: { 'content-type': OPENMETRICS_CONTENT_TYPE, 'cache-control': 'no-store' },
  })
}

/** Every model's learned margin per script class now, when the Durable Object is bound. */
async function currentMargins(env: Env): Promise<MetricsSnapshot['margins']> {
  if (!env.GUARD_STATE) return undefined
  const reports = await new DurableCalibration(env.GUARD_STATE).report()
  return Object.entries(reports).flatMap(([model, report]) =>
    Object.entries(report.margins).map(([script, margin]) => ({
      model,
      script,
      margin: margin ?? 0,
    })),
  )
}
