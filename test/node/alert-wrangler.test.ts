import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CANARY_PATTERN } from '../../src/index'
import { deriveTenantSecret, type SlackMessage, verifySignature } from '../../src/worker/alerts'
import { type Received, type Receiver, startReceiver } from '../alerts/receiver'
import { type NodeHost, nodeHost } from '../ecosystem/node-host'
import { startWranglerDev, type WranglerDev } from '../ecosystem/wrangler-dev'
import { chat, document } from '../support/prompts'

/**
 * Leak alerts through the real Worker under `wrangler dev` (the simulator leaking in pd-abort-leak
 * mode), delivered to a `node:http` receiver on loopback. The receiver holds the first delivery open
 * until the client has read its whole error response: an alert awaited on the request path could not
 * let that response finish while its only attempt is still open — no timing assertion needed.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'e2e-alert-webhook-secret-0123456789-abcdef'
/** The dev Worker's secrets (wrangler.dev.toml): none may appear in an alert. */
const DEV_SECRETS = ['dev-only-canary-secret', 'dev-only-quarantine-key', 'dev-only-admin-secret']
/** A tenant id built to break out of Slack markup, lines and JSON strings. */
const HOSTILE =
  'evil <!channel> <https://phish.example|click> *bold*\n> fake line"},{"injected":true}\u202e'
const KEYS = {
  'dev-key-tenant-a': 'tenant-a',
  'dev-key-tenant-b': 'tenant-b',
  'dev-key-hostile': HOSTILE,
}

let host: NodeHost
let dev: WranglerDev | undefined
let rx: Receiver
/** The first operator and tenant-a deliveries are held (the proof); everything else gets 200. */
const held = new Set(['/operator', '/tenant-a'])

beforeAll(async () => {
  host = await nodeHost()
  rx = await startReceiver((r, i) => (i === 0 && held.has(r.path) ? 'hold' : 200))
  dev = await startWranglerDev(host, {
    vars: {
      TENANT_KEYS: JSON.stringify(KEYS),
      ALERT_WEBHOOK_URL: `${rx.base}/operator`,
      ALERT_WEBHOOK_SECRET: SECRET,
      ALERT_WEBHOOK_FORMAT: 'json',
      TENANT_WEBHOOKS: JSON.stringify({
        'tenant-a': { url: `${rx.base}/tenant-a` },
        [HOSTILE]: { url: `${rx.base}/hostile`, format: 'slack' },
      }),
      CONSOLE_URL: 'https://guard.example',
    },
  })
}, 90_000)

afterAll(async () => {
  if (dev) {
    await host.stop(dev.child)
    host.remove(dev.dir)
  }
  await rx?.close()
}, 15_000)

async function post(path: string, body: unknown, key?: string): Promise<Response> {
  return fetch(`${dev!.base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify(body),
  })
}

/**
 * The simulator's real pool is 8,192 tokens; the Worker believes 681,280: tenant B's 12,000 tokens
 * are answered from the source's stale pages. Streamed, the source's canary survives whole in them
 * (a foreign-canary incident); whole, it is cut short and the source's text gives it away
 * (foreign content) — the two reasons that alert by default.
 */
async function leakFrom(
  sourceKey: string,
  source: string,
  stream: boolean,
): Promise<{ status: number; body: string }> {
  const reset = await post('/sim/reset', {
    mode: 'pd-abort-leak',
    poolTokens: 8_192,
    contextWindow: 16_384,
    prefillTokensPerSecond: 500_000,
    decodeTokensPerSecond: 'Infinity',
  })
  expect(reset.status).toBe(200)
  const own = await post(
    '/v1/chat/completions',
    { model: MODEL, ...chat(document(source, 6_000)) },
    sourceKey,
  )
  expect(own.status).toBe(200)
  await own.text()
  const res = await post(
    '/v1/chat/completions',
    { model: MODEL, stream, ...chat(document('TENANT-B', 12_000)) },
    'dev-key-tenant-b',
  )
  // The client's whole response, read to its end.
  return { status: res.status, body: await res.text() }
}

function incidentOf(body: string): string {
  const { error } = JSON.parse(body) as { error: { code: string; incident_id: string } }
  expect(error.code).toBe('response_quarantined')
  return error.incident_id
}

async function expectSigned(secret: string, r: Received): Promise<void> {
  expect((await verifySignature(secret, r.headers['x-guard-signature'], r.body)).valid).toBe(true)
}

/** Nothing of the prompts, the withheld answer, a canary or a secret is in an alert. */
function expectNothingSecret(body: string): void {
  for (const text of [
    'TENANT-A',
    'TENANT-B',
    'HOSTILE ledger',
    'ledger entry',
    SECRET,
    ...DEV_SECRETS,
  ]) {
    expect(body).not.toContain(text)
  }
  expect(body).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))
}

describe('leak alerts from wrangler dev', () => {
  it('should alert the operator and the source tenant without delaying the client', async () => {
    const client = await leakFrom('dev-key-tenant-a', 'TENANT-A', true)
    expect(client.status).toBe(422)
    const incidentId = incidentOf(client.body)
    // The client has its whole answer; the alerts' first attempts are still held open by us.
    const ops = await rx.arrival('/operator')
    const tenant = await rx.arrival('/tenant-a')
    expect(ops.open()).toBe(true)
    expect(tenant.open()).toBe(true)
    ops.respond(200)
    tenant.respond(200)

    await expectSigned(SECRET, ops)
    expect(ops.headers['x-guard-attempt']).toBe('1')
    const doc = JSON.parse(ops.body) as Record<string, unknown>
    expect(doc).toMatchObject({
      version: 1,
      type: 'ai_guard.incident',
      incidentId,
      tenant: 'tenant-b',
      sourceTenants: ['tenant-a'],
      model: MODEL,
      consoleUrl: `https://guard.example/admin/incidents/${incidentId}`,
    })
    expect(doc.reasons).toContain('foreign_canary')
    expectNothingSecret(ops.body)

    await expectSigned(await deriveTenantSecret(SECRET, 'tenant-a'), tenant)
    expect(JSON.parse(tenant.body)).toEqual({
      version: 1,
      type: 'ai_guard.tenant_data_withheld',
      incidentId,
      reasons: expect.arrayContaining(['foreign_canary']),
      tenant: 'tenant-a',
      model: MODEL,
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      withheld: true,
      suppressed: 0,
    })
    expect(tenant.body).not.toContain('tenant-b')
    expectNothingSecret(tenant.body)
    // Nothing failed, and the receiving tenant got no tenant alert.
    expect(dev!.log()).not.toContain('ai_guard_alert_failed')
    expect(dev!.log()).not.toContain('alerts: ')
    expect(rx.requests.filter((r) => !['/operator', '/tenant-a'].includes(r.path))).toEqual([])
  }, 60_000)

  it('should keep a hostile tenant name from injecting into the JSON or the Slack alert', async () => {
    const before = rx.requests.filter((r) => r.path === '/operator').length
    const client = await leakFrom('dev-key-hostile', 'HOSTILE', false)
    expect(client.status).toBe(422)
    const incidentId = incidentOf(client.body)
    const ops = await rx.arrival('/operator', before + 1)
    const slack = await rx.arrival('/hostile')
    await expectSigned(SECRET, ops)
    await expectSigned(await deriveTenantSecret(SECRET, HOSTILE), slack)

    // JSON: the name is one string, exactly; no key was added.
    const doc = JSON.parse(ops.body) as Record<string, unknown>
    expect(doc.incidentId).toBe(incidentId)
    expect(doc.sourceTenants).toEqual([HOSTILE])
    expect(Object.keys(doc).sort()).toEqual(
      [
        'at',
        'consoleUrl',
        'figures',
        'incidentId',
        'model',
        'reasons',
        'sourceTenants',
        'suppressed',
        'tenant',
        'type',
        'version',
      ].sort(),
    )

    // Slack: the name is only ever plain text, escaped, on one line; no mention, no link.
    const message = JSON.parse(slack.body) as SlackMessage & Record<string, unknown>
    expect(Object.keys(message).sort()).toEqual(['blocks', 'text', 'unfurl_links', 'unfurl_media'])
    const texts: { type: unknown; text: string }[] = []
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk)
      else if (value && typeof value === 'object') {
        const o = value as Record<string, unknown>
        if (typeof o.text === 'string') texts.push({ type: o.type, text: o.text })
        else Object.values(o).forEach(walk)
      }
    }
    walk(message.blocks)
    expect(texts.length).toBeGreaterThan(2)
    for (const { type, text } of [{ type: 'plain_text', text: message.text }, ...texts]) {
      expect(type).toBe('plain_text')
      expect(text).not.toMatch(/[<>\n\r\u202e]/)
    }
    // The name's quotes stayed inside its string: no `"injected":` key anywhere.
    for (const body of [ops.body, slack.body]) expect(body).not.toContain('"injected":')
    expect(texts.map((t) => t.text).join(' ')).toContain('evil &lt;!channel&gt;')
    expect(slack.body).toContain(incidentId)
    expect(slack.body).not.toContain('tenant-b')
    expectNothingSecret(slack.body)
  }, 60_000)
})
