/**
 * @module What the Worker does with each verdict: one log line, a sampled record for the console and
 * the metrics, and an alert for leaks. Nothing here may delay or change an answer.
 */
import type { VerdictContext, VerdictLog } from '../core'
import { alertOnVerdict } from './alerts/worker-alerts'
import type { Env } from './env'
import { recordVerdict } from './telemetry/worker-telemetry'

/**
 * The Worker's `onVerdict`: the log line first (it never fails), then background work through
 * `waitUntil` (a failure there is logged by its owner, never thrown into the guard).
 */
export function observeVerdict(env: Env, event: VerdictLog, context: VerdictContext): void {
  console.log(JSON.stringify({ event: 'ai_guard_verdict', ...event }))
  recordVerdict(env, event, context)
  alertOnVerdict(env, event, context)
}
