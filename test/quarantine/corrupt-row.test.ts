/**
 * @module A stored incident row edited into something the D1 store never writes (truncated, not JSON,
 * JSON of another shape): its detail answers 409 `incident_unreadable` naming the row and the column,
 * every list and count still answers with the others, and nothing of the edited bytes is echoed.
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it, vi } from 'vitest'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import type { QuarantineRecord, QuarantineSummary } from '../../src/core/vocabulary/quarantine'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { D1Telemetry } from '../../src/worker/telemetry/d1-telemetry'
import { ADMIN } from '../support/worker'

const workerEnv = env as unknown as Env
const db = workerEnv.QUARANTINE_DB!
const store = () => new D1QuarantineStore(db, { key: workerEnv.QUARANTINE_KEY! })
const INJECTED = '<img src=x onerror=alert(1)>'

function record(id: string, tenant: string, overrides: Partial<QuarantineRecord> = {}) {
  return {
    id,
    at: Date.now(),
    tenant,
    model: '@cf/zai-org/glm-5.3',
    requestId: `req-${id}`,
    reasons: ['echo_missing'],
    figures: { estimatedTokens: 1200, ttftMs: 40 },
    canaries: [],
    sourceTenants: [],
    withheld: { content: `withheld text of ${id}` },
    ...overrides,
  } satisfies QuarantineRecord
}

/** Rewrites one stored column, as anyone with write access to the database could. */
async function edit(id: string, column: string, value: string | number): Promise<void> {
  await db.prepare(`UPDATE incidents SET ${column} = ? WHERE id = ?`).bind(value, id).run()
}

/** The deployed Worker's admin route, as the bearer API or as the console. */
async function admin(path: string, accept = 'application/json'): Promise<Response> {
  const request = new Request(`http://guard.test/admin${path}`, {
    headers: { authorization: `Bearer ${ADMIN}`, accept },
  })
  const ctx = createExecutionContext()
  const res = await worker.fetch(request as Parameters<typeof worker.fetch>[0], workerEnv, ctx)
  await waitOnExecutionContext(ctx)
  return res
}

/** Each way a row is found edited: the column, the value written, the column the error names. */
const EDITS: [string, string | number][] = [
  ['reasons', '["echo_mis'],
  ['figures', 'not json at all'],
  ['figures', JSON.stringify({ ttftMs: INJECTED })],
  ['canaries', JSON.stringify({ kind: 'foreign' })],
  ['source_tenants', '[1, 2]'],
  ['at', 'yesterday'],
]

describe('a corrupt incident row', () => {
  it('should answer 409 naming the incident and the column, on the API and the console, never the bytes', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    for (const [i, [column, value]] of EDITS.entries()) {
      const id = `inc_corrupt_${i}`
      await store().put(record(id, 'tenant-corrupt-detail'))
      await edit(id, column, value)
      await expect(store().get(id)).rejects.toMatchObject({
        name: 'UnreadableIncidentError',
        reason: 'corrupt',
        incidentId: id,
        column,
      })

      const api = await admin(`/incidents/${id}`)
      expect([column, api.status]).toEqual([column, 409])
      const body = (await api.json()) as { error: { code: string; message: string; param: string } }
      expect(body.error.code).toBe('incident_unreadable')
      expect(body.error.param).toBe('id')
      expect(body.error.message).toContain(`incident ${id} has a stored ${column} column`)
      expect(body.error.message).toContain('restore the row from a backup, or delete it')

      const page = await admin(`/incidents/${id}`, 'text/html')
      expect(page.status).toBe(409)
      const html = await page.text()
      expect(html).toContain('<h1>Incident cannot be opened</h1>')
      expect(html).toContain(`<code>${column}</code>`)
      for (const text of [JSON.stringify(body), html]) {
        expect(text).not.toContain('withheld text of')
        expect(text).not.toContain('onerror')
        expect(text).not.toContain('tenant-corrupt-detail')
      }
    }
    // Logged for the operator, by row and column only: never the edited value.
    const lines = logged.mock.calls.map((call) => String(call[0]))
    logged.mockRestore()
    expect(lines).toContain(
      JSON.stringify({
        event: 'ai_guard_incident_unreadable',
        incident: 'inc_corrupt_1',
        reason: 'corrupt',
        column: 'figures',
      }),
    )
    expect(lines.join('\n')).not.toContain('onerror')
  })

  it('should refuse decrypted withheld text of another shape rather than show it half-read', async () => {
    // Authenticated decryption makes this the store's own bytes: only a bug could write them.
    await store().put({
      ...record('inc_corrupt_withheld', 'tenant-corrupt-withheld'),
      withheld: ['a'] as never,
    })
    await expect(store().get('inc_corrupt_withheld')).rejects.toMatchObject({
      reason: 'corrupt',
      column: 'withheld',
    })
  })

  it('should still list, page and count every other record, the corrupt one marked unreadable', async () => {
    const tenant = 'tenant-corrupt-list'
    const at = Date.now()
    await store().put(record('inc_list_good_1', tenant, { at: at - 2 }))
    await store().put(record('inc_list_bad', tenant, { at: at - 1 }))
    await store().put(record('inc_list_good_2', tenant, { at }))
    await edit('inc_list_bad', 'reasons', '{"truncated": ')

    const listed = await store().list({ tenant })
    expect(listed.map((r) => r.id).sort()).toEqual([
      'inc_list_bad',
      'inc_list_good_1',
      'inc_list_good_2',
    ])
    const bad = listed.find((r) => r.id === 'inc_list_bad')!
    expect(bad.unreadable).toContain('incident inc_list_bad has a stored reasons column')
    expect(bad.reasons).toEqual([])
    expect(bad.tenant).toBe(tenant)
    expect(listed.filter((r) => r.unreadable !== undefined)).toHaveLength(1)

    const api = await admin(`/incidents?tenant=${tenant}`)
    expect(api.status).toBe(200)
    const { data } = (await api.json()) as { data: QuarantineSummary[] }
    expect(data).toHaveLength(3)

    const page = await admin(`/incidents?tenant=${tenant}`, 'text/html')
    expect(page.status).toBe(200)
    const html = await page.text()
    for (const id of ['inc_list_good_1', 'inc_list_bad', 'inc_list_good_2']) {
      expect(html).toContain(`data-incident="${id}"`)
    }
    expect(html).toContain('>unreadable</span>')

    // A corrupt `reasons` would fail json_each, and with it the whole count: it counts apart instead.
    const counts = await store().counts({ tenant })
    expect(counts).toEqual({ echo_missing: 2, incident_unreadable: 1 })
    const stats = await admin('/stats')
    expect(stats.status).toBe(200)
    expect(
      ((await stats.json()) as { incidents: Record<string, number> }).incidents.incident_unreadable,
    ).toBeGreaterThanOrEqual(1)

    const overview = await admin('/', 'text/html')
    expect(overview.status).toBe(200)
  })

  it('should keep an edited leak record in view under its source filter, not hide it', async () => {
    // Someone who wants a leak record out of the source tenant's view edits its source column.
    const tenant = 'tenant-corrupt-hide'
    await store().put(
      record('inc_hide_leak', tenant, {
        reasons: ['foreign_canary'],
        canaries: [{ kind: 'foreign', tenantTag: 'abcd', tenants: ['tenant-victim'] }],
        sourceTenants: ['tenant-victim'],
      }),
    )
    await edit('inc_hide_leak', 'source_tenants', '"tenant-other"')
    const page = await admin(`/incidents?tenant=${tenant}&source=tenant-victim`, 'text/html')
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('data-incident="inc_hide_leak"')
    expect(html).toContain('>unreadable</span>')
  })

  it('should open a good row, and one whose figure JSON wrote as null, as before', async () => {
    await store().put(record('inc_good_row', 'tenant-corrupt-good'))
    const res = await admin('/incidents/inc_good_row')
    expect(res.status).toBe(200)
    const read = (await res.json()) as QuarantineRecord & QuarantineSummary
    expect(read.withheld.content).toBe('withheld text of inc_good_row')
    expect(read.figures).toEqual({ estimatedTokens: 1200, ttftMs: 40 })
    expect(read).not.toHaveProperty('unreadable')

    // JSON.stringify writes a NaN figure as null: that is this store's own output, read as absent.
    await store().put(
      record('inc_nan_figure', 'tenant-corrupt-good', {
        figures: { score: Number.NaN, ttftMs: 5 },
      }),
    )
    const nan = await store().get('inc_nan_figure')
    expect(nan?.figures).toEqual({ ttftMs: 5 })
    const page = await admin('/incidents/inc_nan_figure', 'text/html')
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('withheld text of inc_nan_figure')
    expect(
      (await store().list({ tenant: 'tenant-corrupt-good' })).every((r) => !r.unreadable),
    ).toBe(true)
  })
})

describe('a corrupt verdict sample row', () => {
  it('should be left out of samples and refusals while every other sample still reads', async () => {
    const telemetry = new D1Telemetry(db, { sampleRate: 1 })
    const log = (requestId: string) => ({
      requestId,
      tenant: 'tenant-corrupt-sample',
      model: '@cf/zai-org/glm-5.3',
      action: 'reject' as const,
      reasons: ['over_pool'],
      ttftMs: 10,
    })
    await telemetry.record(log('req-sample-good'))
    await telemetry.record(log('req-sample-bad'))
    const before = await telemetry.samples({ model: '@cf/zai-org/glm-5.3' })
    await db
      .prepare(
        'UPDATE verdict_samples SET reasons = ?, scripts = ? WHERE rowid = (SELECT MAX(rowid) FROM verdict_samples)',
      )
      .bind('["over_po', '{')
      .run()
    const after = await telemetry.samples({ model: '@cf/zai-org/glm-5.3' })
    expect(after).toHaveLength(before.length - 1)
    const refusals = await telemetry.refusals({})
    expect(refusals.find((r) => r.reason === 'over_pool')?.count).toBe(
      before.filter((s) => s.reasons.includes('over_pool')).length - 1,
    )
  })
})
