import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { IncidentRecorder } from '../../src/core/quarantine/aggregate'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import { MemoryQuarantineStore } from '../../src/core/quarantine/memory'
import type { QuarantineRecord, QuarantineStore } from '../../src/core/vocabulary/quarantine'

const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB
const KEY = 'quarantine-key-0123456789abcdef-0123456789'
const MODEL = '@cf/zai-org/glm-5.3'
const MINUTE = 60_000

let serial = 0

/** An incident as the guard builds it; `echo_missing` from the tenant's own failing request. */
function incident(
  tenant: string,
  at: number,
  overrides: Partial<QuarantineRecord> = {},
): QuarantineRecord {
  serial++
  return {
    id: `inc_${tenant}_${serial}`,
    at,
    tenant,
    model: MODEL,
    requestId: `req_${serial}`,
    reasons: ['echo_missing'],
    figures: { attempts: 3 },
    canaries: [],
    sourceTenants: [],
    withheld: { content: `withheld text #${serial} of ${tenant}` },
    ...overrides,
  }
}

/** A leak: another tenant's canary in this tenant's answer. */
function foreign(tenant: string, at: number, source: string): QuarantineRecord {
  return incident(tenant, at, {
    reasons: ['foreign_canary'],
    canaries: [{ kind: 'foreign', tenantTag: '0a1b2c3d4e', channel: 'content', tenants: [source] }],
    sourceTenants: [source],
    withheld: { content: `payroll of ${source}, leaked into ${tenant} (#${serial + 1})` },
  })
}

/** Every stored row of a tenant, oldest first. */
async function rows(tenant: string) {
  const { results } = await db
    .prepare(
      'SELECT id, at, reasons, count, last_at FROM incidents WHERE tenant = ? ORDER BY at, id',
    )
    .bind(tenant)
    .all<{ id: string; at: number; reasons: string; count: number; last_at: number | null }>()
  return results
}

/** A recorder on the real local D1 with a hand-driven clock. */
function recorder(start = Date.now(), options: { windowMs?: number; maxKeys?: number } = {}) {
  const clock = { now: start }
  const store = new D1QuarantineStore(db, { key: KEY, now: () => clock.now })
  return {
    clock,
    store,
    incidents: new IncidentRecorder(store, { now: () => clock.now, ...options }),
  }
}

describe('IncidentRecorder: flooding', () => {
  it('should turn 1,000 echo-missing incidents of one tenant into a handful of records with the right count', async () => {
    const { clock, store, incidents } = recorder()
    const ids = new Set<string>()
    let aggregated = 0
    // One incident a second for 1,000 s (16.7 minutes): two 10-minute windows.
    for (let i = 0; i < 1000; i++) {
      const result = await incidents.record(incident('flooder-1', clock.now))
      ids.add(result.id)
      if (result.aggregated) aggregated++
      clock.now += 1000
    }
    const stored = await rows('flooder-1')
    expect(stored.length).toBeLessThanOrEqual(2)
    expect(stored.reduce((n, r) => n + r.count, 0)).toBe(1000)
    expect([...ids].sort()).toEqual(stored.map((r) => r.id).sort())
    expect(aggregated).toBe(1000 - stored.length)
    expect(stored[0]).toMatchObject({ count: 600, last_at: stored[0]!.at + 599_000 })
    // The first record of each window keeps its own text; the folded ones added none.
    const first = await store.get(stored[0]!.id)
    expect(first?.withheld.content).toMatch(/^withheld text #\d+ of flooder-1$/)
    expect(first).toMatchObject({ count: 600, lastAt: stored[0]!.at + 599_000 })
    expect((await store.counts({ tenant: 'flooder-1' })).echo_missing).toBe(1000)
  })

  it('should fold 1,000 concurrent incidents into one record', async () => {
    const { clock, incidents } = recorder()
    const results = await Promise.all(
      Array.from({ length: 1000 }, () => incidents.record(incident('flooder-2', clock.now))),
    )
    const stored = await rows('flooder-2')
    expect(stored).toHaveLength(1)
    expect(stored[0]!.count).toBe(1000)
    expect(new Set(results.map((r) => r.id))).toEqual(new Set([stored[0]!.id]))
  })

  it('should use a fixed window, so a steady flood cannot keep one record open for ever', async () => {
    const { clock, incidents } = recorder()
    for (let minute = 0; minute < 60; minute++) {
      await incidents.record(incident('flooder-3', clock.now))
      clock.now += MINUTE
    }
    const stored = await rows('flooder-3')
    expect(stored.map((r) => r.count)).toEqual([10, 10, 10, 10, 10, 10])
  })

  it('should keep separate records per model and per set of reasons, in any order', async () => {
    const { clock, incidents } = recorder()
    const at = clock.now
    await incidents.record(incident('mixed', at, { reasons: ['echo_missing', 'ttft_impossible'] }))
    await incidents.record(incident('mixed', at, { reasons: ['ttft_impossible', 'echo_missing'] }))
    await incidents.record(incident('mixed', at, { reasons: ['echo_missing'] }))
    await incidents.record(incident('mixed', at, { model: '@cf/other/model' }))
    await incidents.record(incident('mixed-other-tenant', at))
    const stored = await rows('mixed')
    expect(stored.map((r) => [JSON.parse(r.reasons), r.count])).toEqual(
      expect.arrayContaining([
        [['echo_missing', 'ttft_impossible'], 2],
        [['echo_missing'], 1],
        [['echo_missing'], 1],
      ]),
    )
    expect(stored).toHaveLength(3)
    expect(await rows('mixed-other-tenant')).toHaveLength(1)
  })

  it('should never fold an observed incident into a withheld one, nor the reverse', async () => {
    const { clock, incidents } = recorder()
    const at = clock.now
    await incidents.record(incident('observe-fold', at))
    await incidents.record(incident('observe-fold', at, { observed: true }))
    await incidents.record(incident('observe-fold', at, { observed: true }))
    await incidents.record(incident('observe-fold', at))
    const stored = await db
      .prepare('SELECT count, observed FROM incidents WHERE tenant = ? ORDER BY observed')
      .bind('observe-fold')
      .all<{ count: number; observed: number }>()
    expect(stored.results).toEqual([
      { count: 2, observed: 0 },
      { count: 2, observed: 1 },
    ])
  })

  it('should hold at most one record per isolate per window per key', async () => {
    const start = Date.now()
    const isolates = [recorder(start), recorder(start)]
    for (let i = 0; i < 200; i++) {
      const { clock, incidents } = isolates[i % 2]!
      await incidents.record(incident('flooder-4', clock.now))
    }
    const stored = await rows('flooder-4')
    expect(stored.map((r) => r.count)).toEqual([100, 100])
  })
})

describe('IncidentRecorder: evidence of another tenant', () => {
  it('should never fold a foreign_canary incident: each is stored in full', async () => {
    const { clock, store, incidents } = recorder()
    const leaks: string[] = []
    for (let i = 0; i < 50; i++) {
      await incidents.record(incident('victim-1', clock.now))
      const leak = foreign('victim-1', clock.now, 'tenant-a')
      const result = await incidents.record(leak)
      expect(result).toEqual({ id: leak.id, aggregated: false })
      leaks.push(leak.id)
      clock.now += 1000
    }
    const stored = await rows('victim-1')
    const full = stored.filter((r) => JSON.parse(r.reasons).includes('foreign_canary'))
    expect(full.map((r) => r.id).sort()).toEqual([...leaks].sort())
    expect(full.every((r) => r.count === 1)).toBe(true)
    for (const id of leaks) {
      const record = await store.get(id)
      expect(record?.withheld.content).toContain('payroll of tenant-a')
      expect(record?.sourceTenants).toEqual(['tenant-a'])
    }
    // The echo-missing noise beside them: one record.
    expect(stored.filter((r) => r.count === 50)).toHaveLength(1)
  })

  it('should not fold a record naming another tenant even without the foreign_canary reason', async () => {
    const { clock, incidents } = recorder()
    const withFinding = incident('victim-2', clock.now, {
      canaries: [{ kind: 'foreign', tenantTag: '0a1b2c3d4e' }],
    })
    const withSource = incident('victim-2', clock.now, { sourceTenants: ['tenant-a'] })
    const custom = new IncidentRecorder(new MemoryQuarantineStore(), {
      neverAggregate: ['foreign_canary', 'prompt_in_answer'],
    })
    for (const record of [withFinding, withSource, incident('victim-2', clock.now)]) {
      await incidents.record(record)
      await incidents.record({ ...record, id: `${record.id}-again` })
    }
    expect((await rows('victim-2')).map((r) => r.count).sort()).toEqual([1, 1, 1, 1, 2])
    const twice = [1, 2].map(() => incident('victim-3', 0, { reasons: ['prompt_in_answer'] }))
    for (const record of twice) expect((await custom.record(record)).aggregated).toBe(false)
  })
})

describe('IncidentRecorder: stores and failures', () => {
  it('should store a new record when the open one is gone (deleted by retention)', async () => {
    const { clock, incidents } = recorder()
    const first = await incidents.record(incident('retained', clock.now))
    await db.prepare('DELETE FROM incidents WHERE id = ?').bind(first.id).run()
    const second = await incidents.record(incident('retained', clock.now))
    expect(second.aggregated).toBe(false)
    expect(second.id).not.toBe(first.id)
    const third = await incidents.record(incident('retained', clock.now))
    expect(third).toEqual({ id: second.id, aggregated: true })
    expect((await rows('retained')).map((r) => r.count)).toEqual([2])
  })

  it('should store every incident in a store without increment', async () => {
    const memory = new MemoryQuarantineStore()
    const plain: QuarantineStore = {
      put: (r) => memory.put(r),
      get: (id) => memory.get(id),
      list: (q) => memory.list(q),
      counts: (q) => memory.counts(q),
    }
    const incidents = new IncidentRecorder(plain)
    for (let i = 0; i < 5; i++) {
      expect((await incidents.record(incident('plain', 0))).aggregated).toBe(false)
    }
    expect(await memory.list({ tenant: 'plain' })).toHaveLength(5)
  })

  it('should fold in memory too, and count incidents rather than records', async () => {
    const store = new MemoryQuarantineStore()
    let now = 0
    const incidents = new IncidentRecorder(store, { now: () => now })
    for (let i = 0; i < 30; i++) {
      await incidents.record(incident('memory', now))
      now += 30_000 // 15 minutes in all: two windows
    }
    const listed = await store.list({ tenant: 'memory' })
    expect(listed.map((r) => r.count ?? 1)).toEqual([10, 20])
    expect(listed[1]).toMatchObject({ count: 20, lastAt: 19 * 30_000 })
    expect(await store.counts({ tenant: 'memory' })).toEqual({ echo_missing: 30 })
  })

  it('should bound its memory to maxKeys windows (an evicted key only opens a new record)', async () => {
    const { clock, incidents } = recorder(Date.now(), { maxKeys: 10 })
    for (let round = 0; round < 2; round++) {
      for (let t = 0; t < 20; t++) await incidents.record(incident(`many-${t}`, clock.now))
    }
    expect(incidents.openWindows).toBe(10)
    // Round two found every window evicted (20 keys through 10 slots, in order): 2 records each.
    expect((await rows('many-0')).map((r) => r.count)).toEqual([1, 1])
    // The 10 most recent keys are still open: their next incident folds.
    expect((await incidents.record(incident('many-19', clock.now))).aggregated).toBe(true)
    expect((await rows('many-19')).map((r) => r.count)).toEqual([1, 2])
  })

  it('should throw when the store cannot take the record, and let waiting incidents store their own', async () => {
    const memory = new MemoryQuarantineStore()
    let failPuts = 1
    const flaky: QuarantineStore = {
      put: async (r) => {
        if (failPuts-- > 0) throw new Error('D1_ERROR: network connection lost')
        await memory.put(r)
      },
      get: (id) => memory.get(id),
      list: (q) => memory.list(q),
      counts: (q) => memory.counts(q),
      increment: (id, at) => memory.increment(id, at),
    }
    const incidents = new IncidentRecorder(flaky)
    const [first, second, third] = await Promise.allSettled([
      incidents.record(incident('flaky', 0)),
      incidents.record(incident('flaky', 0)),
      incidents.record(incident('flaky', 0)),
    ])
    expect(first.status).toBe('rejected')
    expect(second.status === 'fulfilled' && second.value.aggregated).toBe(false)
    expect(third.status).toBe('fulfilled')
    const listed = await memory.list({ tenant: 'flaky' })
    expect(listed.reduce((n, r) => n + (r.count ?? 1), 0)).toBe(2)
  })

  it('should store the incident in full when folding fails', async () => {
    const memory = new MemoryQuarantineStore()
    const failing: QuarantineStore = {
      put: (r) => memory.put(r),
      get: (id) => memory.get(id),
      list: (q) => memory.list(q),
      counts: (q) => memory.counts(q),
      increment: async () => {
        throw new Error('D1_ERROR: database is locked')
      },
    }
    const failures: unknown[] = []
    const incidents = new IncidentRecorder(failing, { onError: (f) => failures.push(f) })
    const first = await incidents.record(incident('fold-fails', 0))
    const again = await incidents.record(incident('fold-fails', 0))
    expect(again.aggregated).toBe(false)
    expect(await memory.list({ tenant: 'fold-fails' })).toHaveLength(2)
    expect(failures).toEqual([
      {
        event: 'ai_guard_aggregate_failed',
        incidentId: first.id,
        error: 'D1_ERROR: database is locked',
      },
    ])
  })

  it('should refuse bad options at construction', () => {
    const store = new MemoryQuarantineStore()
    expect(() => new IncidentRecorder(store, { windowMs: -1 })).toThrow(/windowMs/)
    expect(() => new IncidentRecorder(store, { maxKeys: 0 })).toThrow(/maxKeys/)
  })
})
