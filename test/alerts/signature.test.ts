import { describe, expect, it } from 'vitest'
import {
  deriveTenantSecret,
  SIGNATURE_HEADER,
  signWebhook,
  verifySignature,
} from '../../src/worker/alerts'

const SECRET = 'test-alert-secret-0123456789-abcdefghij'
const BODY = '{"version":1,"type":"ai_guard.incident","incidentId":"inc_1"}'
const T = 1_800_000_000

describe('webhook signatures', () => {
  it('should sign as t=<unix>,v1=<hex> and verify the round trip', async () => {
    const header = await signWebhook(SECRET, BODY, T)
    expect(SIGNATURE_HEADER).toBe('x-guard-signature')
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/)
    expect(await verifySignature(SECRET, header, BODY, { nowSeconds: T + 10 })).toEqual({
      valid: true,
      timestamp: T,
    })
  })

  it('should match an independent HMAC-SHA-256 of "<t>.<body>"', async () => {
    const key = await crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(SECRET),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    )
    const mac = new Uint8Array(
      await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${T}.${BODY}`)),
    )
    const hex = [...mac].map((b) => b.toString(16).padStart(2, '0')).join('')
    expect(await signWebhook(SECRET, BODY, T)).toBe(`t=${T},v1=${hex}`)
  })

  it('should reject a tampered body, a moved timestamp, another secret and a stale delivery', async () => {
    const header = await signWebhook(SECRET, BODY, T)
    const at = { nowSeconds: T }
    expect(await verifySignature(SECRET, header, BODY.replace('inc_1', 'inc_2'), at)).toEqual({
      valid: false,
      reason: 'mismatch',
    })
    const moved = header.replace(`t=${T}`, `t=${T + 1}`)
    expect((await verifySignature(SECRET, moved, BODY, at)).valid).toBe(false)
    expect((await verifySignature(`${SECRET}x`, header, BODY, at)).valid).toBe(false)
    // A replay outside the window, either way (a receiver's clock may be behind).
    expect(await verifySignature(SECRET, header, BODY, { nowSeconds: T + 301 })).toEqual({
      valid: false,
      reason: 'stale',
    })
    expect((await verifySignature(SECRET, header, BODY, { nowSeconds: T - 301 })).valid).toBe(false)
    expect((await verifySignature(SECRET, header, BODY, { nowSeconds: T + 300 })).valid).toBe(true)
    expect(
      (
        await verifySignature(SECRET, header, BODY, {
          nowSeconds: T + 3600,
          toleranceSeconds: 3600,
        })
      ).valid,
    ).toBe(true)
  })

  it('should call malformed headers malformed, never valid', async () => {
    const mac = 'a'.repeat(64)
    for (const header of [
      null,
      undefined,
      '',
      `v1=${mac}`,
      `t=${T}`,
      `t=${T},v1=xyz`,
      `t=${T},t=${T},v1=${mac}`,
      `t=-1,v1=${mac}`,
      `t=1e9,v1=${mac}`,
      `t=${T},v1=${mac}${',x=y'.repeat(400)}`,
    ]) {
      expect(
        await verifySignature(SECRET, header, BODY, { nowSeconds: T }),
        String(header),
      ).toEqual({ valid: false, reason: 'malformed' })
    }
  })

  it('should accept any one matching v1 entry (a scheme or key rotation sends several)', async () => {
    const header = await signWebhook(SECRET, BODY, T)
    const both = `t=${T},v1=${'0'.repeat(64)},${header.split(',')[1]}`
    expect((await verifySignature(SECRET, both, BODY, { nowSeconds: T })).valid).toBe(true)
  })

  it('should derive a distinct tenant secret that verifies only that tenant', async () => {
    const a = await deriveTenantSecret(SECRET, 'tenant-a')
    const b = await deriveTenantSecret(SECRET, 'tenant-b')
    expect(a).toMatch(/^[0-9a-f]{64}$/)
    expect(a).not.toBe(b)
    expect(a).toBe(await deriveTenantSecret(SECRET, 'tenant-a'))
    const header = await signWebhook(a, BODY, T)
    expect((await verifySignature(a, header, BODY, { nowSeconds: T })).valid).toBe(true)
    expect((await verifySignature(b, header, BODY, { nowSeconds: T })).valid).toBe(false)
    expect((await verifySignature(SECRET, header, BODY, { nowSeconds: T })).valid).toBe(false)
  })
})
