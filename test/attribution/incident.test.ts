import { env } from 'cloudflare:test'
import { describe, expect, it, vi } from 'vitest'
import {
  D1TenantDirectory,
  TenantAttribution,
  type TenantDirectory,
} from '../../src/core/attribution'
import { type CanaryKey, importCanaryKey, mintCanary, scanText } from '../../src/core/canary'
import { keyFingerprint } from '../../src/core/canary/token'
import { IncidentRecorder } from '../../src/core/quarantine/aggregate'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import type { QuarantineRecord } from '../../src/core/vocabulary/quarantine'

/**
 * Attribution and aggregation composed as the guard composes them when it quarantines: scan → attribute
 * the foreign findings → record. Two "guards" stand for two isolates: their own key handles, memos and
 * recorders, one D1 between them.
 */
const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB
const SECRET = 'incident-attribution-secret-0123456789ab'
const QUARANTINE_KEY = 'quarantine-key-0123456789abcdef-0123456789'

interface TestGuard {
  key: CanaryKey
  attribution: TenantAttribution
  incidents: IncidentRecorder
  store: D1QuarantineStore
}

async function guard(directory: TenantDirectory = new D1TenantDirectory(db)): Promise<TestGuard> {
  const key = await importCanaryKey(SECRET)
  const store = new D1QuarantineStore(db, { key: QUARANTINE_KEY })
  return {
    key,
    attribution: new TenantAttribution(Promise.resolve(key), directory, { timeoutMs: 100 }),
    incidents: new IncidentRecorder(store),
    store,
  }
}

/** What `guard` does with `tenant`'s answer `text`: scan, attribute, record. */
async function quarantine(g: TestGuard, tenant: string, text: string) {
  const own = await mintCanary(g.key, { requestId: `own-${tenant}`, tenant })
  const { findings } = await scanText({ key: g.key, own }, 'content', `${own}\n${text}`)
  const { canaries, sourceTenants } = await g.attribution.attribute(
    // As the guard records them: only another request's canary (look-alikes prove nothing).
    findings.flatMap((f) =>
      f.kind === 'foreign' ? [{ kind: f.kind, channel: f.channel, tenantTag: f.tenantTag }] : [],
    ),
  )
  const record: QuarantineRecord = {
    id: `inc_${crypto.randomUUID()}`,
    at: Date.now(),
    tenant,
    model: '@cf/zai-org/glm-5.3',
    requestId: `req-${tenant}`,
    reasons: ['foreign_canary'],
    figures: {},
    canaries,
    sourceTenants,
    withheld: { content: text },
  }
  const { id } = await g.incidents.record(record)
  return g.store.get(id)
}

/** A D1 binding whose every call fails, as D1 does when it is unreachable. */
const unreachable = {
  prepare: () => {
    throw new Error('D1_ERROR: network connection lost')
  },
} as unknown as D1Database

describe('attribution in a quarantine record', () => {
  it('should name the tenant minted in another isolate', async () => {
    const minting = await guard()
    const catching = await guard()
    await minting.attribution.remember('payroll-co')
    const leaked = await mintCanary(minting.key, { requestId: 'r-1', tenant: 'payroll-co' })

    const record = await quarantine(catching, 'intruder', `rows of payroll-co ${leaked}`)
    expect(record?.reasons).toEqual(['foreign_canary'])
    expect(record?.sourceTenants).toEqual(['payroll-co'])
    expect(record?.canaries).toEqual([
      {
        kind: 'foreign',
        channel: 'content',
        tenantTag: expect.any(String),
        tenants: ['payroll-co'],
      },
    ])
    expect(record?.withheld.content).toContain('rows of payroll-co')
  })

  it('should name both tenants of a collided tag in the record', async () => {
    const g = await guard()
    await g.attribution.remember('owner-one')
    const leaked = await mintCanary(g.key, { requestId: 'r-1', tenant: 'owner-one' })
    const { findings } = await scanText({ key: g.key, own: undefined }, 'content', leaked)
    const tag = findings[0]?.tenantTag
    await new D1TenantDirectory(db).remember(`${await keyFingerprint(g.key)}:${tag}`, 'owner-two')

    const record = await quarantine(g, 'intruder-2', `leak ${leaked}`)
    expect(record?.sourceTenants).toEqual(['owner-one', 'owner-two'])
    expect(record?.canaries[0]?.tenants).toEqual(['owner-one', 'owner-two'])
  })

  it('should still record the incident, attribution unknown, when the directory is down', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const minting = await guard(new D1TenantDirectory(unreachable))
      await expect(minting.attribution.remember('payroll-co-2')).resolves.toBeUndefined()
      const leaked = await mintCanary(minting.key, { requestId: 'r-1', tenant: 'payroll-co-2' })

      const catching = await guard(new D1TenantDirectory(unreachable))
      const record = await quarantine(catching, 'intruder-3', `rows ${leaked}`)
      expect(record?.reasons).toEqual(['foreign_canary'])
      expect(record?.sourceTenants).toEqual([])
      expect(record?.canaries[0]).toMatchObject({ kind: 'foreign', tenants: [] })
      expect(record?.withheld.content).toContain('rows')
      const logged = errors.mock.calls.map((c) => JSON.parse(String(c[0])) as { op: string })
      expect(logged.map((e) => e.op)).toEqual(['remember', 'resolve'])
    } finally {
      errors.mockRestore()
    }
  })
})
