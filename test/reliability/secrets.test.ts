import { createExecutionContext, env, SELF, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { importCanaryKey } from '../../src/core/canary'
import type { QuarantineRecord, QuarantineSummary } from '../../src/core/vocabulary/quarantine'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { timingSafeEqual } from '../../src/worker/tenants'
import { chat, document } from '../support/prompts'
import { ADMIN, KEY_A, KEY_B, sim } from '../support/worker'
import { MODEL } from './properties'
import { captureConsole, liveCanaries, openAiError, secretsIn } from './support'

/**
 * The canary secret, the admin secret, the quarantine key and the tenants' API keys must never reach a
 * response (body or header), an error, a log line or an incident record — and no canary of ours may
 * either: a canary in a log or record could be replayed to forge the evidence the guard relies on.
 */
const base = env as unknown as Env & { QUARANTINE_KEY: string; ADMIN_SECRET: string }
const SECRETS = {
  GUARD_SECRET: base.GUARD_SECRET,
  ADMIN_SECRET: base.ADMIN_SECRET,
  QUARANTINE_KEY: base.QUARANTINE_KEY,
  'tenant key A': KEY_A,
  'tenant key B': KEY_B,
}
const db = base.QUARANTINE_DB as D1Database

interface Seen {
  what: string
  text: string
}

async function seen(what: string, res: Response): Promise<Seen> {
  const headers = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')
  return { what, text: `${res.status}\n${headers}\n${await res.text()}` }
}

function post(path: string, body: unknown, key?: string, headers: Record<string, string> = {}) {
  return SELF.fetch(`http://guard.test${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

const admin = (path: string, secret = ADMIN) =>
  SELF.fetch(`http://guard.test/admin${path}`, { headers: { authorization: `Bearer ${secret}` } })

describe('secrets and canaries never leave the guard', { timeout: 30_000 }, () => {
  it('should keep every secret and canary out of responses, logs and incident records', async () => {
    const key = await importCanaryKey(base.GUARD_SECRET)
    const outputs: Seen[] = []
    const logs = captureConsole()
    const incidents: string[] = []
    try {
      await sim.reset({
        mode: 'fixed',
        prefillTokensPerSecond: 500_000,
        decodeTokensPerSecond: Number.POSITIVE_INFINITY,
      })
      for (const stream of [false, true]) {
        for (const [k, tenant] of [
          [KEY_A, 'TENANT-A'],
          [KEY_B, 'TENANT-B'],
        ] as const) {
          const body = { model: MODEL, ...chat(document(tenant, 400), { stream }) }
          outputs.push(
            await seen(`answer ${tenant} ${stream}`, await post('/v1/chat/completions', body, k)),
          )
          outputs.push(
            await seen(
              `native ${tenant} ${stream}`,
              await post(`/ai/run/${MODEL}`, chat('hi', { stream }), k),
            ),
          )
        }
      }
      // Refusals of every kind.
      outputs.push(
        await seen('no key', await post('/v1/chat/completions', { model: MODEL, ...chat('hi') })),
      )
      outputs.push(await seen('wrong key', await post('/v1/chat/completions', {}, `${KEY_A}x`)))
      outputs.push(await seen('bad json', await post('/v1/chat/completions', '{"model":', KEY_A)))
      outputs.push(
        await seen(
          'ceiling',
          await post(
            '/v1/chat/completions',
            { model: MODEL, ...chat('hi'), max_tokens: 2 ** 24 },
            KEY_A,
          ),
        ),
      )
      outputs.push(
        await seen(
          'upstream 5006',
          await post(
            '/v1/chat/completions',
            { model: MODEL, messages: [{ role: '', content: 'x' }] },
            KEY_A,
          ),
        ),
      )
      outputs.push(await seen('admin wrong', await admin('/incidents', `${ADMIN}x`)))
      outputs.push(await seen('admin with a tenant key', await admin('/incidents', KEY_A)))
      // Withheld answers: a missing echo, then the incident's leak (A's pages read by B's request).
      await sim.configure({ echoIgnoreRate: 1 })
      const missing = await post(
        '/v1/chat/completions',
        { model: MODEL, ...chat('TENANT-A hi') },
        KEY_A,
      )
      const missingSeen = await seen('echo missing', missing)
      outputs.push(missingSeen)
      await sim.reset({
        mode: 'pd-abort-leak',
        poolTokens: 8_192,
        contextWindow: 16_384,
        prefillTokensPerSecond: 500_000,
        decodeTokensPerSecond: Number.POSITIVE_INFINITY,
      })
      await (
        await post(
          '/v1/chat/completions',
          { model: MODEL, ...chat(document('TENANT-A', 6_000)) },
          KEY_A,
        )
      ).text()
      for (const stream of [false, true]) {
        const leak = await post(
          '/v1/chat/completions',
          { model: MODEL, ...chat(document('TENANT-B', 12_000), { stream }) },
          KEY_B,
        )
        const leakSeen = await seen(`leak ${stream}`, leak)
        outputs.push(leakSeen)
        expect(leakSeen.text).not.toContain('TENANT-A')
        incidents.push(
          openAiError(leakSeen.text.slice(leakSeen.text.indexOf('{'))).error.incident_id!,
        )
      }
      incidents.push(
        openAiError(missingSeen.text.slice(missingSeen.text.indexOf('{'))).error.incident_id!,
      )
    } finally {
      logs.restore()
    }

    // The capture works: the Worker's verdict lines were seen.
    expect(logs.text()).toContain('ai_guard_verdict')
    expect(logs.text()).toContain('"action":"quarantine"')
    for (const { what, text } of [...outputs, { what: 'console', text: logs.text() }]) {
      expect([what, secretsIn(text, SECRETS)]).toEqual([what, []])
      expect([what, await liveCanaries(key, text)]).toEqual([what, []])
    }

    // Incident records, as the admin reads them (withheld text decrypted) and as D1 stores them.
    const listed = (await (await admin('/incidents?limit=100')).json()) as {
      data: QuarantineSummary[]
    }
    expect(listed.data.map((r) => r.id)).toEqual(expect.arrayContaining(incidents))
    const records: string[] = [JSON.stringify(listed)]
    for (const id of incidents) {
      const record = (await (await admin(`/incidents/${id}`)).json()) as QuarantineRecord
      expect(record.id).toBe(id)
      records.push(JSON.stringify(record))
    }
    const rows = await db.prepare('SELECT * FROM incidents').all()
    records.push(JSON.stringify(rows.results))
    records.push(JSON.stringify(await (await admin('/stats')).json()))
    for (const text of records) {
      expect(secretsIn(text, SECRETS)).toEqual([])
      expect(await liveCanaries(key, text)).toEqual([])
    }
    // The leak really is in the store (the admin may read it), just not its canaries.
    expect(records.join('\n')).toContain('TENANT-A')
  }, 30_000)

  it('should name a bad option, never its value, when the guard is misconfigured', async () => {
    const short = 'short-guard-secret'
    const shortQuarantine = 'short-quarantine-key'
    await sim.reset({
      mode: 'fixed',
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
      echoIgnoreRate: 1, // every answer is withheld, so the quarantine key is needed
    })
    // A short canary secret or quarantine key stops the guard at start-up (503, naming the option),
    // before a record could be lost.
    for (const [name, patch, value, status, logged] of [
      ['GUARD_SECRET', { GUARD_SECRET: short }, short, 503, 'ai_guard_error'],
      [
        'QUARANTINE_KEY',
        { QUARANTINE_KEY: shortQuarantine },
        shortQuarantine,
        503,
        'ai_guard_error',
      ],
    ] as const) {
      const ctx = createExecutionContext()
      const logs = captureConsole()
      let res: Response
      try {
        res = await worker.fetch(
          new Request('http://guard.test/v1/chat/completions', {
            method: 'POST',
            headers: { authorization: `Bearer ${KEY_A}` },
            body: JSON.stringify({ model: MODEL, ...chat('hi') }),
          }),
          { ...base, ...patch },
          ctx,
        )
        await waitOnExecutionContext(ctx)
      } finally {
        logs.restore()
      }
      const text = await res.text()
      const { error } = openAiError(text)
      expect([name, res.status]).toEqual([name, status])
      if (name === 'GUARD_SECRET') expect(error.message).toContain('secret')
      if (name === 'QUARANTINE_KEY') expect(logs.text()).toContain(logged)
      expect(text).not.toContain(value)
      expect(logs.text()).not.toContain(value)
    }
  })
})

describe('constant-time key comparison', () => {
  it('should be true only for equal strings', () => {
    expect(timingSafeEqual('dev-key-tenant-a', 'dev-key-tenant-a')).toBe(true)
    expect(timingSafeEqual('', '')).toBe(true)
    expect(timingSafeEqual('clé-😀', 'clé-😀')).toBe(true)
    expect(timingSafeEqual('dev-key-tenant-a', 'dev-key-tenant-b')).toBe(false)
    expect(timingSafeEqual('Dev-key-tenant-a', 'dev-key-tenant-a')).toBe(false)
  })

  it('should be false for different lengths, prefixes included, in both orders', () => {
    expect(timingSafeEqual('dev-key', 'dev-key-tenant-a')).toBe(false)
    expect(timingSafeEqual('dev-key-tenant-a', 'dev-key')).toBe(false)
    expect(timingSafeEqual('', 'x')).toBe(false)
    expect(timingSafeEqual('a\u0000', 'a')).toBe(false)
    // Same characters, different bytes: é precomposed vs e + combining accent.
    expect(timingSafeEqual('\u00e9', 'e\u0301')).toBe(false)
    // Two different lone surrogates: as UTF-8 both become U+FFFD, as code units they differ.
    expect(timingSafeEqual('key-\ud800', 'key-\udc00')).toBe(false)
    expect(timingSafeEqual('key-\ud800', 'key-\ufffd')).toBe(false)
  })
})

describe('admin routes', { timeout: 30_000 }, () => {
  it('should refuse without the admin secret with 401, and serve it with 200', async () => {
    const refused: [string, Record<string, string>][] = [
      ['no header', {}],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['wrong secret', { authorization: 'Bearer not-the-admin-secret' }],
      ['secret with a suffix', { authorization: `Bearer ${ADMIN}x` }],
      ['secret without its last char', { authorization: `Bearer ${ADMIN.slice(0, -1)}` }],
      ['a tenant key', { authorization: `Bearer ${KEY_A}` }],
      ['basic auth', { authorization: `Basic ${btoa(`admin:${ADMIN}`)}` }],
      ['secret in another header', { 'x-admin-secret': ADMIN }],
    ]
    for (const path of ['/admin/incidents', '/admin/incidents/inc_x', '/admin/stats']) {
      for (const [label, headers] of refused) {
        const res = await SELF.fetch(`http://guard.test${path}`, { headers })
        const { error } = openAiError(await res.text())
        expect([path, label, res.status, error.code]).toEqual([path, label, 401, 'unauthorized'])
      }
      const ok = await SELF.fetch(`http://guard.test${path}`, {
        headers: { authorization: `bearer ${ADMIN}` },
      })
      expect([path, ok.status]).toEqual([path, path.endsWith('inc_x') ? 404 : 200])
    }
  })

  it('should switch admin routes off (403) when ADMIN_SECRET is unset or too short', async () => {
    const { ADMIN_SECRET: _unset, ...noAdmin } = base
    for (const workerEnv of [noAdmin as Env, { ...base, ADMIN_SECRET: 'short' }]) {
      const ctx = createExecutionContext()
      const res = await worker.fetch(
        new Request('http://guard.test/admin/incidents', {
          headers: { authorization: 'Bearer short' },
        }),
        workerEnv,
        ctx,
      )
      await waitOnExecutionContext(ctx)
      const { error } = openAiError(await res.text())
      expect([res.status, error.code]).toEqual([403, 'unauthorized'])
    }
  })
})
