import { describe, expect, it } from 'vitest'
import type { VerdictLog } from '../../src/core/vocabulary/options'
import {
  Alerter,
  type AlertFailure,
  type AlertSettings,
  deriveTenantSecret,
  parseAlertConfig,
  verifySignature,
} from '../../src/worker/alerts'
import { LEAK_VERDICT } from './fixtures'

const SECRET = 'test-alert-secret-0123456789-abcdefghij'
const T = 1_800_000_000_000

const leak: VerdictLog = { ...LEAK_VERDICT, estimatedTokens: 12_000 }

interface Sent {
  url: string
  headers: Headers
  body: string
}

function alerter(settings: AlertSettings, status = 200) {
  const sent: Sent[] = []
  const failures: AlertFailure[] = []
  let t = T
  const { config, errors } = parseAlertConfig(settings)
  expect(errors).toEqual([])
  const a = new Alerter(config, {
    now: () => t,
    sleep: async (ms) => {
      t += ms
    },
    random: () => 0,
    onFailure: (f) => failures.push(f),
    fetch: async (url, init) => {
      sent.push({ url, headers: new Headers(init.headers), body: String(init.body) })
      return new Response('', { status })
    },
  })
  return {
    a,
    sent,
    failures,
    advance: (ms: number) => {
      t += ms
    },
  }
}

const settings: AlertSettings = {
  webhookUrl: 'https://ops.example/hook/secret-path',
  webhookSecret: SECRET,
  tenantWebhooks: JSON.stringify({
    'tenant-a': { url: 'https://a.example/hook' },
    'tenant-b': { url: 'https://b.example/hook' },
  }),
  consoleUrl: 'https://guard.example',
}

describe('Alerter', () => {
  it("should alert the operator and the source tenant's webhook, each signed with its own key", async () => {
    const { a, sent } = alerter(settings)
    const results = await a.onVerdict(leak)
    expect(results?.map((r) => [r.destination, r.result.ok])).toEqual([
      ['operator', true],
      ['tenant:tenant-a', true],
    ])
    const [ops, tenant] = sent
    expect(ops!.url).toBe('https://ops.example/hook/secret-path')
    const check = { nowSeconds: T / 1000 }
    expect(
      (await verifySignature(SECRET, ops!.headers.get('x-guard-signature'), ops!.body, check))
        .valid,
    ).toBe(true)
    const aSecret = await deriveTenantSecret(SECRET, 'tenant-a')
    const tSig = tenant!.headers.get('x-guard-signature')
    expect((await verifySignature(aSecret, tSig, tenant!.body, check)).valid).toBe(true)
    expect((await verifySignature(SECRET, tSig, tenant!.body, check)).valid).toBe(false)
    expect(JSON.parse(ops!.body)).toMatchObject({
      type: 'ai_guard.incident',
      incidentId: 'inc_1',
      tenant: 'tenant-b',
      sourceTenants: ['tenant-a'],
      consoleUrl: 'https://guard.example/admin/incidents/inc_1',
    })
    expect(JSON.parse(tenant!.body)).toMatchObject({
      type: 'ai_guard.tenant_data_withheld',
      tenant: 'tenant-a',
    })
    expect(tenant!.body).not.toContain('tenant-b')
    expect(ops!.headers.get('x-guard-incident-id')).toBe('inc_1')
    // The receiving tenant's own webhook is not told about data it never got.
    expect(sent.map((s) => s.url)).not.toContain('https://b.example/hook')
  })

  it('should alert only quarantines with a configured reason', () => {
    const { a } = alerter(settings)
    expect(a.onVerdict({ ...leak, action: 'release', incidentId: undefined })).toBeUndefined()
    expect(a.onVerdict({ ...leak, action: 'reject', incidentId: undefined })).toBeUndefined()
    expect(
      a.onVerdict({
        ...leak,
        reasons: ['echo_missing'],
        sourceTenants: undefined,
        incidentId: 'inc_2',
      }),
    ).toBeUndefined()
    expect(
      a.onVerdict({ ...leak, reasons: ['foreign_content'], incidentId: 'inc_3' }),
    ).toBeDefined()
    const all = alerter({ ...settings, reasons: 'all' }).a
    expect(all.onVerdict({ ...leak, reasons: ['echo_missing'], incidentId: 'inc_2' })).toBeDefined()
  })

  it('should alert once per incident id and carry what it held back into the next alert', async () => {
    const { a, sent } = alerter({ webhookUrl: settings.webhookUrl, webhookSecret: SECRET })
    await a.onVerdict(leak)
    expect(a.onVerdict(leak)).toBeUndefined()
    expect(a.onVerdict(leak)).toBeUndefined()
    await a.onVerdict({ ...leak, incidentId: 'inc_2' })
    expect(sent.map((s) => JSON.parse(s.body).suppressed)).toEqual([0, 2])
  })

  it('should log one failure line per lost delivery with the host, never the path', async () => {
    const { a, failures } = alerter(settings, 404)
    const results = await a.onVerdict(leak)
    expect(results?.every((r) => !r.result.ok)).toBe(true)
    expect(failures).toEqual([
      {
        event: 'ai_guard_alert_failed',
        destination: 'operator',
        host: 'ops.example',
        incidentId: 'inc_1',
        attempts: 1,
        status: 404,
        error: 'HTTP 404',
      },
      {
        event: 'ai_guard_alert_failed',
        destination: 'tenant',
        tenant: 'tenant-a',
        host: 'a.example',
        incidentId: 'inc_1',
        attempts: 1,
        status: 404,
        error: 'HTTP 404',
      },
    ])
    expect(JSON.stringify(failures)).not.toContain('secret-path')
  })

  it('should never reject, even when its fetch throws synchronously', async () => {
    const { config } = parseAlertConfig({ webhookUrl: settings.webhookUrl, webhookSecret: SECRET })
    const failures: AlertFailure[] = []
    const a = new Alerter(config, {
      sleep: async () => {},
      onFailure: (f) => failures.push(f),
      retry: { maxAttempts: 2 },
      fetch: () => {
        throw new Error('boom')
      },
    })
    const results = await a.onVerdict(leak)
    expect(results?.[0]?.result).toMatchObject({ ok: false, attempts: 2 })
    expect(failures[0]?.error).toContain('network: boom')
  })
})
