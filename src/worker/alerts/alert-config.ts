/**
 * @module Alert configuration read from strings (the Worker's variables): destinations, formats,
 * secrets, the reasons that alert. Hostile or mistaken values turn off only what they configure, with
 * a message naming the variable (never its value: a Slack webhook URL is itself a secret).
 */
import { MIN_SECRET_BYTES } from '../../core'
import { type AlertFormat, LEAK_REASONS } from './alert-payload'

/** The raw settings, as the Worker's variables hold them. */
export interface AlertSettings {
  /** `ALERT_WEBHOOK_URL` */
  webhookUrl?: string
  /** `ALERT_WEBHOOK_SECRET` */
  webhookSecret?: string
  /** `ALERT_WEBHOOK_FORMAT` */
  webhookFormat?: string
  /** `TENANT_WEBHOOKS` */
  tenantWebhooks?: string
  /** `ALERT_REASONS` */
  reasons?: string
  /** `CONSOLE_URL` */
  consoleUrl?: string
}

/** Where alerts go. */
export interface AlertDestination {
  /** `operator`, or `tenant:<id>`: the rate limiter's key. */
  key: string
  /** The source tenant this destination belongs to; absent for the operator's. */
  tenant?: string
  url: string
  /** The URL's host, the only part of it ever logged. */
  host: string
  format: AlertFormat
  /**
   * The signing secret; for a tenant webhook without its own secret, the operator's, from which the
   * tenant's is derived (`deriveTenantSecret`).
   */
  secret: string
  derived: boolean
}

/** The settings, validated. */
export interface AlertConfig {
  operator?: AlertDestination
  tenants: ReadonlyMap<string, AlertDestination>
  /** The quarantine reasons that alert; `all`: every quarantine. */
  reasons: ReadonlySet<string> | 'all'
  /** The console's base URL, for incident links. */
  consoleBase?: string
}

/** Hosts a webhook may be reached over plain http: this machine, for local development and tests. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * Validates the settings. Never throws: each problem is one message in `errors`, and what it concerns
 * is left out (a bad tenant entry drops that tenant's webhook, a short secret drops the operator's).
 *
 * @example
 * const { config, errors } = parseAlertConfig({ webhookUrl: env.ALERT_WEBHOOK_URL, ... })
 * for (const e of errors) console.error(e)
 */
export function parseAlertConfig(settings: AlertSettings): {
  config: AlertConfig
  errors: string[]
} {
  const errors: string[] = []
  const secret = settings.webhookSecret || undefined
  const secretOk = secret !== undefined && isLongSecret(secret)
  if (secret !== undefined && !secretOk) {
    errors.push(`ALERT_WEBHOOK_SECRET must be at least ${MIN_SECRET_BYTES} bytes`)
  }
  let operator: AlertDestination | undefined
  if (settings.webhookUrl) {
    const url = webhookUrl('ALERT_WEBHOOK_URL', settings.webhookUrl, errors)
    const format = alertFormat('ALERT_WEBHOOK_FORMAT', settings.webhookFormat, errors)
    if (!secretOk) {
      if (secret === undefined) errors.push('ALERT_WEBHOOK_SECRET is not set')
      errors.push('operator alerts are off: they are never sent unsigned')
    } else if (url && format) {
      operator = { key: 'operator', ...url, format, secret, derived: false }
    }
  }
  const tenants = tenantWebhooks(settings.tenantWebhooks, secretOk ? secret : undefined, errors)
  const config: AlertConfig = {
    tenants,
    reasons: alertReasons(settings.reasons, errors),
    ...consoleBase(settings.consoleUrl, errors),
  }
  if (operator) config.operator = operator
  return { config, errors }
}

function isLongSecret(value: string): boolean {
  return new TextEncoder().encode(value).length >= MIN_SECRET_BYTES
}

/**
 * https anywhere, plain http only to loopback; no credentials in the URL (they would be sent and
 * logged by proxies).
 */
function webhookUrl(
  name: string,
  value: unknown,
  errors: string[],
): { url: string; host: string } | undefined {
  let url: URL
  try {
    if (typeof value !== 'string') throw new Error('not a string')
    url = new URL(value)
  } catch {
    errors.push(`${name} is not a URL`)
    return undefined
  }
  const local = url.protocol === 'http:' && LOOPBACK.has(url.hostname)
  if (url.protocol !== 'https:' && !local) {
    errors.push(`${name} must be https:// (plain http only to localhost or 127.0.0.1)`)
    return undefined
  }
  if (url.username || url.password) {
    errors.push(`${name} must not carry credentials`)
    return undefined
  }
  return { url: url.href, host: url.host }
}

function alertFormat(name: string, value: unknown, errors: string[]): AlertFormat | undefined {
  if (value === undefined || value === '') return 'json'
  if (value === 'json' || value === 'slack') return value
  errors.push(`${name} must be "slack" or "json"`)
  return undefined
}

/** `TENANT_WEBHOOKS`: `{ "<tenant>": { "url": "https://…", "secret"?: "…", "format"?: "json" } }`. */
function tenantWebhooks(
  json: string | undefined,
  operatorSecret: string | undefined,
  errors: string[],
): Map<string, AlertDestination> {
  const out = new Map<string, AlertDestination>()
  if (!json) return out
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    errors.push('TENANT_WEBHOOKS is not JSON; tenant webhooks are off')
    return out
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    errors.push('TENANT_WEBHOOKS must be a JSON object of tenant → { url, secret?, format? }')
    return out
  }
  for (const [tenant, entry] of Object.entries(value)) {
    const where = `TENANT_WEBHOOKS[${JSON.stringify(tenant.slice(0, 64))}]`
    const destination = tenantDestination({ where, tenant, entry }, operatorSecret, errors)
    if (destination) out.set(tenant, destination)
  }
  return out
}

/** One tenant's webhook entry (`where` names it in errors), checked; its secret derived if absent. */
function tenantDestination(
  { where, tenant, entry }: { where: string; tenant: string; entry: unknown },
  operatorSecret: string | undefined,
  errors: string[],
): AlertDestination | undefined {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    errors.push(`${where} must be an object { url, secret?, format? }`)
    return undefined
  }
  const { url, secret, format } = entry as Record<string, unknown>
  const target = webhookUrl(`${where}.url`, url, errors)
  const fmt = alertFormat(`${where}.format`, format, errors)
  let signing: { secret: string; derived: boolean } | undefined
  if (secret !== undefined) {
    if (typeof secret === 'string' && isLongSecret(secret)) signing = { secret, derived: false }
    else errors.push(`${where}.secret must be at least ${MIN_SECRET_BYTES} bytes`)
  } else if (operatorSecret) {
    signing = { secret: operatorSecret, derived: true }
  } else {
    errors.push(`${where} has no secret and ALERT_WEBHOOK_SECRET is not usable to derive one`)
  }
  if (!target || !fmt || !signing) return undefined
  return { key: `tenant:${tenant}`, tenant, ...target, format: fmt, ...signing }
}

/** `ALERT_REASONS`: comma-separated reasons, or `all`; default the leak reasons. */
function alertReasons(value: string | undefined, errors: string[]): ReadonlySet<string> | 'all' {
  if (!value) return new Set(LEAK_REASONS)
  const trimmed = value.trim()
  if (trimmed === 'all' || trimmed === '*') return 'all'
  const reasons = trimmed.split(',').map((r) => r.trim())
  if (reasons.some((r) => !/^[a-z][a-z_]{0,63}$/.test(r))) {
    errors.push('ALERT_REASONS must be "all" or reasons like foreign_canary,foreign_content')
    return new Set(LEAK_REASONS)
  }
  return new Set(reasons)
}

function consoleBase(value: string | undefined, errors: string[]): { consoleBase?: string } {
  if (!value) return {}
  try {
    const url = new URL(value)
    if (url.protocol === 'https:' || url.protocol === 'http:') {
      return { consoleBase: `${url.origin}${url.pathname.replace(/\/+$/, '')}` }
    }
  } catch {
    // Reported below.
  }
  errors.push('CONSOLE_URL must be an http(s) URL; alerts carry no console link')
  return {}
}
