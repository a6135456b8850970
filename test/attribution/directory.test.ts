import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import {
  D1TenantDirectory,
  isolateTenantDirectory,
  MemoryTenantDirectory,
} from '../../src/core/attribution'

const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB

describe('MemoryTenantDirectory', () => {
  it('should remember idempotently and resolve every owner of a tag, sorted', async () => {
    const directory = new MemoryTenantDirectory()
    await directory.remember('ns:0a1b2c3d4e', 'zeta')
    await directory.remember('ns:0a1b2c3d4e', 'zeta')
    await directory.remember('ns:0a1b2c3d4e', 'alpha')
    expect(await directory.resolve('ns:0a1b2c3d4e')).toEqual(['alpha', 'zeta'])
    expect(await directory.resolve('ns:ffffffffff')).toEqual([])
    expect(directory.size).toBe(2)
  })

  it('should evict the least recently used tag past its capacity, never everything at once', async () => {
    const directory = new MemoryTenantDirectory({ capacity: 3 })
    await directory.remember('t1', 'a')
    await directory.remember('t2', 'b')
    await directory.remember('t3', 'c')
    await directory.resolve('t1') // t1 used: t2 is now the oldest
    await directory.remember('t4', 'd')
    expect(await directory.resolve('t2')).toEqual([])
    for (const [tag, tenant] of [
      ['t1', 'a'],
      ['t3', 'c'],
      ['t4', 'd'],
    ] as const) {
      expect(await directory.resolve(tag)).toEqual([tenant])
    }
    expect(directory.size).toBe(3)
  })

  it('should stay bounded under 20,000 tenants', async () => {
    const directory = new MemoryTenantDirectory({ capacity: 1_000 })
    for (let i = 0; i < 20_000; i++) await directory.remember(`ns:${i}`, `tenant-${i}`)
    expect(directory.size).toBe(1_000)
    expect(await directory.resolve('ns:19999')).toEqual(['tenant-19999'])
    expect(await directory.resolve('ns:18999')).toEqual([])
  })

  it('should share one directory per isolate and refuse a bad capacity', () => {
    expect(isolateTenantDirectory()).toBe(isolateTenantDirectory())
    expect(() => new MemoryTenantDirectory({ capacity: 0 })).toThrow(/capacity/)
  })
})

describe('D1TenantDirectory', () => {
  it('should store one row per (tag, tenant), whatever the number of isolates remembering it', async () => {
    const isolates = [new D1TenantDirectory(db), new D1TenantDirectory(db)]
    for (const directory of isolates) {
      await directory.remember('fp:1111111111', 'acme')
      await directory.remember('fp:1111111111', 'acme')
    }
    const { results } = await db
      .prepare('SELECT tag, tenant, at FROM tenant_tags WHERE tag = ?')
      .bind('fp:1111111111')
      .all<{ tag: string; tenant: string; at: number }>()
    expect(results).toEqual([{ tag: 'fp:1111111111', tenant: 'acme', at: expect.any(Number) }])
  })

  it('should resolve every owner of a collided tag, and nothing for another namespace', async () => {
    const directory = new D1TenantDirectory(db, { now: () => 1 })
    await directory.remember('fp:2222222222', 'zeta')
    await directory.remember('fp:2222222222', 'alpha')
    await directory.remember('other:2222222222', 'stranger')
    const reader = new D1TenantDirectory(db)
    expect(await reader.resolve('fp:2222222222')).toEqual(['alpha', 'zeta'])
    expect(await reader.resolve('other:2222222222')).toEqual(['stranger'])
    expect(await reader.resolve('fp:3333333333')).toEqual([])
  })

  it('should refuse something that is not a D1 database', () => {
    expect(() => new D1TenantDirectory(undefined as unknown as D1Database)).toThrow(/db/)
  })
})
