import { afterEach, describe, expect, it } from 'vitest'
import {
  Alerter,
  deliverWebhook,
  deriveTenantSecret,
  parseAlertConfig,
  verifySignature,
} from '../../src/worker/alerts'
import { type Receiver, startReceiver } from '../alerts/receiver'

/**
 * The delivery code against a real receiver over a socket, with Node's own global fetch: what the
 * receiver sees on each attempt, and that it verifies. Short backoffs keep it quick; nothing here
 * asserts on wall time.
 */
const SECRET = 'node-alert-secret-0123456789-abcdefghijkl'
const BODY = JSON.stringify({ version: 1, type: 'ai_guard.incident', incidentId: 'inc_node' })
const FAST = { baseDelayMs: 20, maxDelayMs: 100 }

let rx: Receiver | undefined
afterEach(async () => {
  await rx?.close()
  rx = undefined
})

async function verifies(secret: string, headers: Record<string, string>, body: string) {
  return (await verifySignature(secret, headers['x-guard-signature'], body)).valid
}

describe('webhook delivery to a local receiver', () => {
  it('should retry two 500s and succeed on the third attempt, each attempt signed', async () => {
    rx = await startReceiver((_, i) => (i < 2 ? 500 : 200))
    const result = await deliverWebhook(
      { url: `${rx.base}/hook`, secret: SECRET, body: BODY, headers: { 'x-guard-delivery': 'd1' } },
      FAST,
    )
    expect(result).toMatchObject({ ok: true, attempts: 3, status: 200 })
    expect(rx.requests).toHaveLength(3)
    for (const [i, r] of rx.requests.entries()) {
      expect(r.body).toBe(BODY)
      expect(await verifies(SECRET, r.headers, r.body)).toBe(true)
      expect(r.headers['x-guard-attempt']).toBe(String(i + 1))
      // One delivery id across retries: the receiver can drop a retry of what it already handled.
      expect(r.headers['x-guard-delivery']).toBe('d1')
      expect(r.headers['content-type']).toBe('application/json')
    }
  })

  it('should not retry a 4xx', async () => {
    rx = await startReceiver(() => 400)
    const result = await deliverWebhook(
      { url: `${rx.base}/hook`, secret: SECRET, body: BODY },
      FAST,
    )
    expect(result).toMatchObject({ ok: false, attempts: 1, status: 400, error: 'HTTP 400' })
    expect(rx.requests).toHaveLength(1)
  })

  it('should honour Retry-After on a 429', async () => {
    rx = await startReceiver((r, i) => {
      if (i === 0) r.respond(429, { 'retry-after': '1' })
      return i === 0 ? 'hold' : 200
    })
    const result = await deliverWebhook(
      { url: `${rx.base}/hook`, secret: SECRET, body: BODY },
      FAST,
    )
    expect(result).toMatchObject({ ok: true, attempts: 2 })
    expect(result.delays).toEqual([1000])
  })

  it('should abort an attempt the receiver holds past the timeout, and retry', async () => {
    rx = await startReceiver((_, i) => (i === 0 ? 'hold' : 200))
    const result = await deliverWebhook(
      { url: `${rx.base}/hook`, secret: SECRET, body: BODY },
      { ...FAST, attemptTimeoutMs: 200 },
    )
    expect(result).toMatchObject({ ok: true, attempts: 2 })
    // The first attempt's connection was closed by the sender, not answered.
    expect(rx.requests[0]!.open()).toBe(false)
  })

  it('should alert the operator and the source tenant through the Alerter, over real fetch', async () => {
    rx = await startReceiver()
    const { config, errors } = parseAlertConfig({
      webhookUrl: `${rx.base}/operator`,
      webhookSecret: SECRET,
      webhookFormat: 'slack',
      tenantWebhooks: JSON.stringify({ 'tenant-a': { url: `${rx.base}/tenant-a` } }),
    })
    expect(errors).toEqual([])
    const results = await new Alerter(config).onVerdict({
      requestId: 'r',
      tenant: 'tenant-b',
      model: '@cf/zai-org/glm-5.3',
      action: 'quarantine',
      reasons: ['foreign_canary'],
      incidentId: 'inc_node',
      sourceTenants: ['tenant-a'],
    })
    expect(results?.map((r) => r.result.ok)).toEqual([true, true])
    const ops = await rx.arrival('/operator')
    const tenant = await rx.arrival('/tenant-a')
    expect(await verifies(SECRET, ops.headers, ops.body)).toBe(true)
    expect(JSON.parse(ops.body).text).toContain('inc_node')
    const derived = await deriveTenantSecret(SECRET, 'tenant-a')
    expect(await verifies(derived, tenant.headers, tenant.body)).toBe(true)
    expect(JSON.parse(tenant.body)).toMatchObject({ tenant: 'tenant-a', incidentId: 'inc_node' })
  })
})
