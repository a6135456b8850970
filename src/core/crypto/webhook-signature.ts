/**
 * @module Webhook signatures: HMAC-SHA-256 over `<unix seconds>.<body>`, sent as
 * `x-guard-signature: t=<unix seconds>,v1=<hex>`, and the check a receiver runs (docs/alerts.md).
 *
 * Why the timestamp is inside the MAC: a captured delivery replayed later carries its old `t`, and a
 * receiver that rejects a `t` outside its window (5 minutes by default) rejects the replay; changing
 * `t` breaks the MAC. Why `v1=`: a later scheme can be sent beside it while receivers migrate.
 */
import { toHex } from './bytes'

/** The request header carrying the signature. */
export const SIGNATURE_HEADER = 'x-guard-signature'

/** How far a signature's timestamp may be from the receiver's clock, seconds. */
export const DEFAULT_TOLERANCE_SECONDS = 300

const utf8 = new TextEncoder()

/**
 * The HMAC-SHA-256 key of a webhook secret (the secret's UTF-8 bytes), for signing and verifying.
 *
 * @example
 * const key = await webhookKey(env.ALERT_WEBHOOK_SECRET)
 */
export function webhookKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    'raw',
    utf8.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  )
}

/**
 * The `x-guard-signature` value of `body` sent at `timestamp` (unix seconds).
 *
 * @example
 * headers.set(SIGNATURE_HEADER, await signWebhook(key, body, Math.floor(Date.now() / 1000)))
 */
export async function signWebhook(
  secret: string | CryptoKey,
  body: string,
  timestamp: number,
): Promise<string> {
  const key = typeof secret === 'string' ? await webhookKey(secret) : secret
  const mac = await crypto.subtle.sign('HMAC', key, utf8.encode(`${timestamp}.${body}`))
  return `t=${timestamp},v1=${toHex(new Uint8Array(mac))}`
}

/** Options of {@link verifySignature}. */
export interface VerifySignatureOptions {
  /** The receiver's clock, unix seconds. @default Math.floor(Date.now() / 1000) */
  nowSeconds?: number
  /** Largest accepted distance between `t` and the clock, seconds. @default 300 */
  toleranceSeconds?: number
}

/** What {@link verifySignature} found. */
export type SignatureCheck =
  | { valid: true; timestamp: number }
  | {
      valid: false
      /** `malformed`: no `t=` or `v1=`; `stale`: `t` outside the window; `mismatch`: wrong MAC. */
      reason: 'malformed' | 'stale' | 'mismatch'
    }

/**
 * Checks a delivery the way a receiver should: on the raw body text as received (before any JSON
 * parsing), with the header's timestamp inside the window, comparing MACs in constant time
 * (`crypto.subtle.verify`). Any one `v1=` entry that matches is enough.
 *
 * @example
 * const check = await verifySignature(secret, req.headers.get('x-guard-signature'), await req.text())
 * if (!check.valid) return new Response('bad signature', { status: 401 })
 */
export async function verifySignature(
  secret: string | CryptoKey,
  header: string | null | undefined,
  body: string,
  options: VerifySignatureOptions = {},
): Promise<SignatureCheck> {
  const parsed = parseSignature(header)
  if (!parsed) return { valid: false, reason: 'malformed' }
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000)
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (Math.abs(now - parsed.timestamp) > tolerance) return { valid: false, reason: 'stale' }
  const key = typeof secret === 'string' ? await webhookKey(secret) : secret
  const data = utf8.encode(`${parsed.timestamp}.${body}`)
  for (const mac of parsed.macs) {
    if (await crypto.subtle.verify('HMAC', key, mac, data)) {
      return { valid: true, timestamp: parsed.timestamp }
    }
  }
  return { valid: false, reason: 'mismatch' }
}

/** `t=<digits>` once and at least one `v1=<64 hex>`; anything else is malformed. */
function parseSignature(
  header: string | null | undefined,
): { timestamp: number; macs: Uint8Array[] } | undefined {
  if (!header || header.length > 1024) return undefined
  let timestamp: number | undefined
  const macs: Uint8Array[] = []
  for (const part of header.split(',')) {
    const [name, value = ''] = part.trim().split('=', 2)
    if (name === 't') {
      if (timestamp !== undefined || !/^\d{1,12}$/.test(value)) return undefined
      timestamp = Number(value)
    } else if (name === 'v1' && /^[0-9a-f]{64}$/i.test(value)) {
      macs.push(fromHex(value))
    }
  }
  return timestamp !== undefined && macs.length > 0 ? { timestamp, macs } : undefined
}

function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}

/**
 * The signing secret of a tenant's webhook that has none of its own: HMAC-SHA-256 of the tenant id
 * under the operator's `ALERT_WEBHOOK_SECRET`, as 64 hex characters. The operator hands it to the
 * tenant; it verifies only that tenant's alerts, so no tenant can forge the operator's or another
 * tenant's alerts, and it never reveals the operator's secret.
 *
 * @example
 * const secret = await deriveTenantSecret(env.ALERT_WEBHOOK_SECRET, 'tenant-a')
 */
export async function deriveTenantSecret(operatorSecret: string, tenant: string): Promise<string> {
  const key = await webhookKey(operatorSecret)
  const label = utf8.encode(`workers-ai-guard tenant webhook\u0000${tenant}`)
  return toHex(new Uint8Array(await crypto.subtle.sign('HMAC', key, label)))
}
