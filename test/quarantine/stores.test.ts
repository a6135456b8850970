import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import { MemoryQuarantineStore } from '../../src/core/quarantine/memory'
import type { QuarantineRecord, QuarantineStore } from '../../src/core/vocabulary/quarantine'

const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB
const KEY = 'quarantine-key-0123456789abcdef-0123456789'
const DAY = 86_400_000

function record(
  id: string,
  tenant: string,
  at: number,
  reasons = ['echo_missing'],
): QuarantineRecord {
  return {
    id,
    at,
    tenant,
    model: '@cf/zai-org/glm-5.3',
    requestId: `req-${id}`,
    reasons,
    figures: { attempts: 1 },
    canaries: [
      { kind: 'foreign', tenantTag: '0a1b2c3d4e', channel: 'content', tenants: ['a', 'z'] },
    ],
    sourceTenants: ['a', 'z'],
    withheld: { content: `text of ${id}` },
  }
}

/** A record as a store gives it back: D1 names the key its text is sealed under. */
function sealed(store: string, r: QuarantineRecord): QuarantineRecord {
  return store === 'D1' ? { ...r, keyId: expect.stringMatching(/^[0-9a-f]{16}$/) } : r
}

const stores: [
  string,
  (now: () => number) => QuarantineStore & Required<Pick<QuarantineStore, 'increment'>>,
][] = [
  ['memory', () => new MemoryQuarantineStore()],
  ['D1', (now) => new D1QuarantineStore(db, { key: KEY, now, retentionDays: 30 })],
]

for (const [name, make] of stores) {
  describe(`${name} quarantine store: counts`, () => {
    it('should read a record that was never folded exactly as it was put (no count, no lastAt)', async () => {
      const t0 = Date.now()
      const store = make(() => t0)
      const r = record(`${name}-plain`, `${name}-plain`, t0)
      await store.put(r)
      expect(await store.get(r.id)).toEqual(sealed(name, r))
      const [summary] = await store.list({ tenant: r.tenant })
      expect(summary).not.toHaveProperty('count')
      expect(summary).not.toHaveProperty('lastAt')
      // Per-tag owners ride along in the canaries (a collision names both).
      expect(summary?.canaries[0]?.tenants).toEqual(['a', 'z'])
    })

    it('should keep an observed record marked, and filter the list on it', async () => {
      const t0 = Date.now()
      const store = make(() => t0)
      const tenant = `${name}-observe`
      const observed = { ...record(`${name}-obs`, tenant, t0), observed: true as const }
      const withheld = record(`${name}-wh`, tenant, t0 + 1)
      await store.put(observed)
      await store.put(withheld)
      expect(await store.get(observed.id)).toEqual(sealed(name, observed))
      expect(await store.get(withheld.id)).toEqual(sealed(name, withheld))
      const ids = async (query: { observed?: boolean }) =>
        (await store.list({ tenant, ...query })).map((r) => r.id)
      expect(await ids({ observed: true })).toEqual([observed.id])
      expect(await ids({ observed: false })).toEqual([withheld.id])
      expect((await ids({})).sort()).toEqual([observed.id, withheld.id].sort())
      expect((await store.list({ tenant, observed: true }))[0]?.observed).toBe(true)
    })

    it('should fold incidents in with increment, and report them in get, list and counts', async () => {
      const t0 = Date.now()
      const store = make(() => t0)
      const tenant = `${name}-folded`
      await store.put(record(`${name}-f1`, tenant, t0, ['echo_missing', 'ttft_impossible']))
      await store.put(record(`${name}-f2`, tenant, t0 + 1, ['echo_missing']))
      expect(await store.increment(`${name}-f1`, t0 + 5_000)).toBe(true)
      expect(await store.increment(`${name}-f1`, t0 + 3_000)).toBe(true) // out of order: lastAt stays
      expect(await store.get(`${name}-f1`)).toMatchObject({
        count: 3,
        lastAt: t0 + 5_000,
        withheld: { content: `text of ${name}-f1` },
      })
      const listed = await store.list({ tenant })
      expect(listed.map((r) => [r.id, r.count, r.lastAt])).toEqual([
        [`${name}-f2`, undefined, undefined],
        [`${name}-f1`, 3, t0 + 5_000],
      ])
      // Incidents, not records.
      expect(await store.counts({ tenant })).toEqual({ echo_missing: 4, ttft_impossible: 3 })
    })

    it('should answer false for a record that is gone', async () => {
      const store = make(() => Date.now())
      expect(await store.increment(`${name}-missing`, Date.now())).toBe(false)
    })

    it('should keep a count given at put', async () => {
      const t0 = Date.now()
      const store = make(() => t0)
      const r = { ...record(`${name}-given`, `${name}-given`, t0), count: 7, lastAt: t0 + 9 }
      await store.put(r)
      expect(await store.get(r.id)).toEqual(sealed(name, r))
    })
  })
}

describe('D1 quarantine store: retention and folding', () => {
  it('should not fold into a record past retention, even before it is deleted', async () => {
    let now = Date.now()
    const store = new D1QuarantineStore(db, { key: KEY, now: () => now, retentionDays: 1 })
    await store.put(record('d1-old', 'd1-retention', now))
    now += DAY + 1
    expect(await store.increment('d1-old', now)).toBe(false)
    const row = await db
      .prepare('SELECT count, last_at FROM incidents WHERE id = ?')
      .bind('d1-old')
      .first<{ count: number; last_at: number | null }>()
    expect(row).toEqual({ count: 1, last_at: null })
  })

  it('should store count and last_at as columns (migration 0002)', async () => {
    const store = new D1QuarantineStore(db, { key: KEY })
    const t0 = Date.now()
    await store.put(record('d1-cols', 'd1-cols', t0))
    await store.increment('d1-cols', t0 + 42)
    const row = await db
      .prepare('SELECT count, last_at FROM incidents WHERE id = ?')
      .bind('d1-cols')
      .first<{ count: number; last_at: number | null }>()
    expect(row).toEqual({ count: 2, last_at: t0 + 42 })
  })
})
