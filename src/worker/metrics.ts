/**
 * @module /admin/metrics: the guard's counters in OpenMetrics text (issue 18: being built).
 */
import type { Env } from './env'

/** The metrics page; auth is the admin router's job. */
export async function metricsResponse(_env: Env): Promise<Response> {
  return new Response('# EOF\n', {
    headers: { 'content-type': 'application/openmetrics-text; version=1.0.0; charset=utf-8' },
  })
}
