import { describe, expect, it } from 'vitest'
import { signWebhook } from '../../src/worker/alerts'

// The receiver's side as docs/alerts.md shows it: WebCrypto only, so it runs in a Worker, Deno, Bun
// or Node 20+ without this package.
// #region verify-receiver
/**
 * The alert's body if its `x-guard-signature` verifies under `secret` within the replay window,
 * else null. Verify the raw body before parsing it.
 */
async function verifyAlert(request: Request, secret: string, toleranceSeconds = 300) {
  const body = await request.text()
  const header = request.headers.get('x-guard-signature') ?? ''
  const fields = header.split(',').map((part) => part.trim().split('=', 2))
  const t = Number(fields.find(([k]) => k === 't')?.[1])
  const macs = fields.filter(([k, v]) => k === 'v1' && /^[0-9a-f]{64}$/.test(v ?? ''))
  if (!Number.isInteger(t) || macs.length === 0) return null
  // A replayed delivery carries its old t; changing t breaks the MAC.
  if (Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return null
  const utf8 = new TextEncoder()
  const hmac = { name: 'HMAC', hash: 'SHA-256' }
  const key = await crypto.subtle.importKey('raw', utf8.encode(secret), hmac, false, ['verify'])
  for (const [, hex] of macs) {
    const mac = Uint8Array.from(hex!.match(/../g)!, (byte) => Number.parseInt(byte, 16))
    // crypto.subtle.verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', key, mac, utf8.encode(`${t}.${body}`))) return body
  }
  return null
}
// #endregion

const SECRET = 'recipe-alert-secret-0123456789-abcdefghij'
const BODY = '{"version":1,"type":"ai_guard.incident","incidentId":"inc_r"}'

function delivery(header: string, body = BODY): Request {
  return new Request('https://receiver.example/alerts', {
    method: 'POST',
    headers: { 'x-guard-signature': header },
    body,
  })
}

describe('the receiver recipe of docs/alerts.md', () => {
  it('should accept what the guard signs, now', async () => {
    const header = await signWebhook(SECRET, BODY, Math.floor(Date.now() / 1000))
    expect(await verifyAlert(delivery(header), SECRET)).toBe(BODY)
  })

  it('should refuse a tampered body, a moved or old timestamp and a wrong secret', async () => {
    const now = Math.floor(Date.now() / 1000)
    const header = await signWebhook(SECRET, BODY, now)
    expect(await verifyAlert(delivery(header, BODY.replace('inc_r', 'inc_x')), SECRET)).toBeNull()
    expect(
      await verifyAlert(delivery(header.replace(`t=${now}`, `t=${now - 1}`)), SECRET),
    ).toBeNull()
    const old = await signWebhook(SECRET, BODY, now - 600)
    expect(await verifyAlert(delivery(old), SECRET)).toBeNull()
    expect(await verifyAlert(delivery(header), `${SECRET}!`)).toBeNull()
    expect(await verifyAlert(delivery(''), SECRET)).toBeNull()
  })
})
