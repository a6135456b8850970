/**
 * @module The alerter: from a verdict line to the deliveries it calls for — the operator's webhook and
 * the webhooks of the tenants whose data the answer carried — decided synchronously (so the rate limit
 * sees verdicts in order), delivered in one background promise that never rejects.
 */
import type { VerdictLog } from '../../core'
import { deriveTenantSecret, webhookKey } from '../../core'
import type { AlertConfig, AlertDestination } from './alert-config'
import { AlertLimiter, type AlertLimiterOptions } from './alert-limiter'
import {
  type Alert,
  alertFromVerdict,
  operatorDocument,
  renderAlert,
  tenantDocument,
} from './alert-payload'
import {
  type DeliveryDeps,
  type DeliveryResult,
  deliverWebhook,
  type RetryPolicy,
} from './webhook-delivery'

/** The line logged for a delivery that failed for good. */
export interface AlertFailure {
  event: 'ai_guard_alert_failed'
  /** `operator` or `tenant`. */
  destination: 'operator' | 'tenant'
  /** For a tenant webhook: the source tenant it belongs to. */
  tenant?: string
  /** The webhook's host (never its path: a Slack URL's path is its secret). */
  host: string
  incidentId: string
  attempts: number
  status?: number
  error: string
}

/** What an alerter uses of its host; tests inject them. */
export interface AlerterDeps extends DeliveryDeps {
  /** Where failures go. @default console.error of the JSON line */
  onFailure?: (failure: AlertFailure) => void
  /** Delivery ids (sent as `x-guard-delivery`, the same on every retry). @default crypto.randomUUID */
  deliveryId?: () => string
  limiter?: AlertLimiterOptions
  retry?: Partial<RetryPolicy>
}

/** One delivery an alert made. */
export interface AlertDelivery {
  destination: string
  incidentId: string
  result: DeliveryResult
}

/**
 * Alerts on the quarantines its configuration names.
 *
 * @example
 * const alerter = new Alerter(parseAlertConfig(settings).config)
 * const work = alerter.onVerdict(event)
 * if (work) ctx.waitUntil(work)
 */
export class Alerter {
  readonly #config: AlertConfig
  readonly #deps: AlerterDeps
  readonly #limiter: AlertLimiter
  readonly #keys = new Map<string, Promise<CryptoKey>>()

  constructor(config: AlertConfig, deps: AlerterDeps = {}) {
    this.#config = config
    this.#deps = deps
    this.#limiter = new AlertLimiter({ ...(deps.now ? { now: deps.now } : {}), ...deps.limiter })
  }

  /** Whether any destination is configured. */
  get enabled(): boolean {
    return this.#config.operator !== undefined || this.#config.tenants.size > 0
  }

  /**
   * The deliveries a verdict calls for, already started; undefined when it calls for none. The
   * promise never rejects; failures are reported to `onFailure` as well.
   */
  onVerdict(event: VerdictLog): Promise<AlertDelivery[]> | undefined {
    const alert = alertFromVerdict(event, (this.#deps.now ?? Date.now)())
    if (!alert || !this.#matches(alert)) return undefined
    const sends: Promise<AlertDelivery>[] = []
    const { operator, tenants, consoleBase } = this.#config
    if (operator) {
      const admission = this.#limiter.admit(operator.key, alert.incidentId)
      if (admission.send) {
        const suppressed = admission.suppressed
        const doc = operatorDocument(alert, { suppressed, ...(consoleBase ? { consoleBase } : {}) })
        sends.push(this.#send(operator, alert, renderAlert(doc, operator.format)))
      }
    }
    for (const source of alert.sourceTenants) {
      const destination = tenants.get(source)
      if (!destination) continue
      const admission = this.#limiter.admit(destination.key, alert.incidentId)
      if (!admission.send) continue
      const doc = tenantDocument(alert, source, { suppressed: admission.suppressed })
      sends.push(this.#send(destination, alert, renderAlert(doc, destination.format)))
    }
    return sends.length > 0 ? Promise.all(sends) : undefined
  }

  #matches(alert: Alert): boolean {
    const { reasons } = this.#config
    return reasons === 'all' || alert.reasons.some((r) => reasons.has(r))
  }

  async #send(destination: AlertDestination, alert: Alert, body: string): Promise<AlertDelivery> {
    const incidentId = alert.incidentId
    let result: DeliveryResult
    try {
      const headers = {
        'x-guard-delivery': (this.#deps.deliveryId ?? (() => crypto.randomUUID()))(),
        'x-guard-incident-id': incidentId,
      }
      const secret = await this.#key(destination)
      result = await deliverWebhook(
        { url: destination.url, secret, body, headers },
        this.#deps.retry,
        this.#deps,
      )
    } catch (error) {
      // Only a key that could not be derived or imported gets here: delivery itself never throws.
      result = { ok: false, attempts: 0, delays: [], error: errorText(error) }
    }
    if (!result.ok) this.#fail(destination, incidentId, result)
    return { destination: destination.key, incidentId, result }
  }

  #key(destination: AlertDestination): Promise<CryptoKey> {
    let key = this.#keys.get(destination.key)
    if (!key) {
      key = (
        destination.derived && destination.tenant !== undefined
          ? deriveTenantSecret(destination.secret, destination.tenant)
          : Promise.resolve(destination.secret)
      ).then(webhookKey)
      this.#keys.set(destination.key, key)
    }
    return key
  }

  #fail(destination: AlertDestination, incidentId: string, result: DeliveryResult): void {
    const failure: AlertFailure = {
      event: 'ai_guard_alert_failed',
      destination: destination.tenant === undefined ? 'operator' : 'tenant',
      ...(destination.tenant !== undefined ? { tenant: destination.tenant } : {}),
      host: destination.host,
      incidentId,
      attempts: result.attempts,
      ...(result.status !== undefined ? { status: result.status } : {}),
      error: result.error ?? 'failed',
    }
    try {
      if (this.#deps.onFailure) this.#deps.onFailure(failure)
      else console.error(JSON.stringify(failure))
    } catch {
      // A failing logger must not turn a lost alert into a thrown one.
    }
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : 'error'
}
