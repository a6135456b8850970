import { env, SELF } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import { CANARY_PATTERN } from '../../src'
import type { QuarantineRecord, QuarantineSummary } from '../../src/core/vocabulary/quarantine'
import { chat, document } from '../support/prompts'
import { captureWorkerVerdicts } from '../support/verdicts'
import { ADMIN, get, KEY_A, KEY_B, POOL_BELOW_PROFILE, post, sim } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'
const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB

beforeEach(async () => {
  await sim.reset(POOL_BELOW_PROFILE)
})

async function leak(
  stream: boolean,
  mode: 'pd-abort-leak' | 'truncate' | 'stale-pages' = 'pd-abort-leak',
): Promise<{ res: Response; body: string }> {
  const a = await post(
    '/v1/chat/completions',
    { model: MODEL, ...chat(document('TENANT-A', 6_000)) },
    KEY_A,
  )
  expect(a.status).toBe(200)
  await sim.configure({ mode })
  // Over the real pool for the first two modes; inside it for stale pages (its tail is never written).
  const tokens = mode === 'stale-pages' ? 5_000 : 12_000
  const res = await post(
    '/v1/chat/completions',
    { model: MODEL, stream, ...chat(document('TENANT-B', tokens)) },
    KEY_B,
  )
  return { res, body: await res.text() }
}

describe('quarantine through the Worker', () => {
  const logged = captureWorkerVerdicts()

  for (const mode of ['pd-abort-leak', 'truncate', 'stale-pages'] as const)
    for (const stream of [false, true]) {
      it(`should withhold the answer and tell the client only the incident id (${mode}, ${stream ? 'stream' : 'whole'})`, async () => {
        const { res, body } = await leak(stream, mode)
        expect(res.status).toBe(422)
        const parsed = JSON.parse(body) as { error: Record<string, unknown> }
        expect(Object.keys(parsed.error).sort()).toEqual([
          'code',
          'incident_id',
          'message',
          'param',
          'type',
        ])
        expect(parsed.error.code).toBe('response_quarantined')
        expect(res.headers.get('x-guard-incident-id')).toBe(parsed.error.incident_id)
        expect(body).not.toContain('TENANT-A')
        expect(body).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))
        // The operator's log: A's answer released, B's withheld under the incident the client got.
        const quarantined = logged.events.filter((v) => v.action === 'quarantine')
        expect(quarantined.map((v) => [v.tenant, v.incidentId])).toEqual([
          ['tenant-b', parsed.error.incident_id],
        ])
        expect(logged.events.filter((v) => v.tenant === 'tenant-a').map((v) => v.action)).toEqual([
          'release',
        ])
      })
    }

  it('should store the incident in D1 with the withheld text encrypted', async () => {
    const { body } = await leak(false)
    const id = (JSON.parse(body) as { error: { incident_id: string } }).error.incident_id
    const row = await db
      .prepare('SELECT tenant, reasons, source_tenants, withheld FROM incidents WHERE id = ?')
      .bind(id)
      .first<{ tenant: string; reasons: string; source_tenants: string; withheld: number[] }>()
    expect(row?.tenant).toBe('tenant-b')
    // Evidence of A's data: A's canary when the stale pages hold it whole, else A's text itself (here
    // the pages cut A's canary short, and its text gives it away).
    const reasons = JSON.parse(row!.reasons) as string[]
    expect(reasons.filter((r) => r.startsWith('foreign_'))).not.toEqual([])
    expect(JSON.parse(row!.source_tenants)).toEqual(['tenant-a'])
    // D1 returns BLOBs as arrays of bytes.
    const stored = new TextDecoder().decode(new Uint8Array(row!.withheld))
    expect(stored).not.toContain('TENANT-A')
    expect(stored).not.toContain('ledger')
  })

  // A prompt far under the ceiling is admitted on its byte bound (about 4× its tokens) and never
  // counted; its incident page compared that bound with the pool. The record counts it instead.
  it('should record an uncounted prompt counted, shown beside the profile pool on its page', async () => {
    const { body } = await leak(false)
    const id = (JSON.parse(body) as { error: { incident_id: string } }).error.incident_id
    const record = (await (await get(`/admin/incidents/${id}`, ADMIN)).json()) as QuarantineRecord
    expect(record.figures.tokenBound).toBeUndefined()
    // The guard's upper estimate, within a fifth of the engine's own count (the byte bound: ~4×).
    const reported = record.figures.promptTokensReported!
    expect(record.figures.estimatedTokens).toBeGreaterThanOrEqual(reported)
    expect(record.figures.estimatedTokens).toBeLessThan(reported * 1.2)
    // Must not fire: a released answer is not counted for its figures (its line keeps the bound).
    const released = logged.events.find((v) => v.action === 'release')!
    expect(released.estimatedTokens).toBeUndefined()
    expect(released.tokenBound).toBeGreaterThan(20_000)
    const page = await (
      await SELF.fetch(`http://guard.test/admin/incidents/${id}`, {
        headers: { accept: 'text/html', authorization: `Bearer ${ADMIN}` },
      })
    ).text()
    const shown = (figure: string) =>
      new RegExp(`data-figure="${figure}">([\\d,]+)<`).exec(page)?.[1]?.replaceAll(',', '')
    expect(Number(shown('estimatedTokens'))).toBe(record.figures.estimatedTokens)
    expect(shown('kvPoolTokens')).toBe('681280')
    expect(page).toContain('the prompt size below against the profile’s kvPoolTokens')
  })

  it('should list and decrypt incidents for the admin only', async () => {
    const { body } = await leak(true)
    const id = (JSON.parse(body) as { error: { incident_id: string } }).error.incident_id

    expect((await get('/admin/incidents')).status).toBe(401)
    expect((await get('/admin/incidents', 'wrong-admin-secret')).status).toBe(401)
    expect((await get(`/admin/incidents/${id}`, KEY_B)).status).toBe(401)

    const listed = (await (
      await get('/admin/incidents?tenant=tenant-b&reason=foreign_canary', ADMIN)
    ).json()) as {
      data: QuarantineSummary[]
    }
    expect(listed.data.map((r) => r.id)).toContain(id)
    expect(JSON.stringify(listed)).not.toContain('TENANT-A') // summaries carry no withheld text
    const none = (await (await get('/admin/incidents?tenant=tenant-a', ADMIN)).json()) as {
      data: unknown[]
    }
    expect(none.data).toEqual([])

    const record = (await (await get(`/admin/incidents/${id}`, ADMIN)).json()) as QuarantineRecord
    expect(record.reasons).toContain('foreign_canary')
    expect(record.sourceTenants).toEqual(['tenant-a'])
    const withheld = Object.values(record.withheld).join('\n')
    expect(withheld).toContain('TENANT-A')
    expect(withheld).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))

    const stats = (await (await get('/admin/stats', ADMIN)).json()) as {
      incidents: Record<string, number>
      calibration: Record<string, unknown>
    }
    expect(stats.incidents.foreign_canary).toBeGreaterThanOrEqual(1)
    expect(stats.calibration).toBeTypeOf('object')
  })

  it('should release an honest in-limit answer untouched by quarantine', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: MODEL, ...chat(document('TENANT-B', 3_000)) },
      KEY_B,
    )
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).toContain('TENANT-B')
    expect(text).not.toContain('TENANT-A')
  })
})

describe('the incidents API filters', () => {
  it('should refuse a filter it cannot read with a 400 naming it, never ignore it', async () => {
    for (const [query, param] of [
      ['limit=abc', 'limit'],
      ['limit=0', 'limit'],
      ['limit=2.5', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=', 'limit'],
      ['since=yesterday', 'since'],
      ['until=1e999', 'until'],
    ] as const) {
      const res = await get(`/admin/incidents?${query}`, ADMIN)
      expect(res.status, query).toBe(400)
      const { error } = (await res.json()) as {
        error: { code: string; param: string; message: string }
      }
      expect([error.code, error.param], query).toEqual(['invalid_request', param])
      expect(error.message).toContain(param)
    }
  })

  // Must not fire: good values are applied.
  it('should apply readable filters', async () => {
    await leak(false)
    await leak(false)
    const one = await get('/admin/incidents?limit=1&tenant=tenant-b', ADMIN)
    expect(one.status).toBe(200)
    expect(((await one.json()) as { data: unknown[] }).data).toHaveLength(1)
    const none = await get(`/admin/incidents?since=${Date.now() + 60_000}`, ADMIN)
    expect(((await none.json()) as { data: unknown[] }).data).toEqual([])
  }, 60_000)
})
