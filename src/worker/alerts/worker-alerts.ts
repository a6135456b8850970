/**
 * @module Leak alerts of the Worker: its variables read once per isolate into an alerter, and each
 * quarantine's deliveries handed to the request's `waitUntil` — never awaited in front of the client,
 * never thrown into the guard (docs/alerts.md).
 */

import type { VerdictContext, VerdictLog } from '../../core'
import type { Env } from '../env'
import { Alerter, parseAlertConfig } from '.'

/** The isolate's alerter per bindings; null when no destination is usable. */
const alerters = new WeakMap<Env, Alerter | null>()

/**
 * Sends the alerts a verdict calls for, in the background: quarantines with a reason in
 * `ALERT_REASONS` (default `foreign_canary,foreign_stand_in,foreign_content`) go to `ALERT_WEBHOOK_URL` and to the
 * `TENANT_WEBHOOKS` of the tenants whose data the answer carried.
 *
 * @example
 * alertOnVerdict(env, event, { waitUntil: (p) => ctx.waitUntil(p) })
 */
export function alertOnVerdict(env: Env, event: VerdictLog, context: VerdictContext): void {
  // Only quarantines alert: releases (nearly every verdict) cost one comparison here.
  if (event.action !== 'quarantine') return
  try {
    const work = alerterFor(env)?.onVerdict(event)
    if (work && context.waitUntil) context.waitUntil(work)
  } catch (error) {
    console.error(
      JSON.stringify({
        event: 'ai_guard_alert_failed',
        incidentId: event.incidentId,
        error: error instanceof Error ? error.message : 'error',
      }),
    )
  }
}

/** Reads the alert variables once per isolate; their problems are one logged line, not a crash. */
function alerterFor(env: Env): Alerter | null {
  const known = alerters.get(env)
  if (known !== undefined) return known
  const { config, errors } = parseAlertConfig({
    webhookUrl: env.ALERT_WEBHOOK_URL,
    webhookSecret: env.ALERT_WEBHOOK_SECRET,
    webhookFormat: env.ALERT_WEBHOOK_FORMAT,
    tenantWebhooks: env.TENANT_WEBHOOKS,
    reasons: env.ALERT_REASONS,
    consoleUrl: env.CONSOLE_URL,
  })
  if (errors.length > 0) {
    console.error(
      JSON.stringify({ event: 'ai_guard_error', error: `alerts: ${errors.join('; ')}` }),
    )
  }
  const alerter = new Alerter(config)
  const usable = alerter.enabled ? alerter : null
  alerters.set(env, usable)
  return usable
}
