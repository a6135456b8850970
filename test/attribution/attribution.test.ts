import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import {
  type AttributionFailure,
  D1TenantDirectory,
  MemoryTenantDirectory,
  TenantAttribution,
  type TenantDirectory,
} from '../../src/core/attribution'
import { importCanaryKey, mintCanary, scanText, tenantTag } from '../../src/core/canary'
import { keyFingerprint } from '../../src/core/canary/token'

const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB
const SECRET = 'attribution-secret-0123456789abcdef-0123'
const OTHER_SECRET = 'another-attribution-secret-0123456789abc'

/** A directory that counts its calls and can be switched to failing or hanging. */
class FlakyDirectory implements TenantDirectory {
  inner = new MemoryTenantDirectory()
  writes = 0
  reads = 0
  mode: 'up' | 'down' | 'hang' = 'up'

  async remember(tag: string, tenant: string): Promise<void> {
    this.writes++
    await this.#gate()
    await this.inner.remember(tag, tenant)
  }

  async resolve(tag: string): Promise<string[]> {
    this.reads++
    await this.#gate()
    return this.inner.resolve(tag)
  }

  async #gate(): Promise<void> {
    if (this.mode === 'down') throw new Error('D1_ERROR: network connection lost')
    if (this.mode === 'hang') await new Promise(() => {})
  }
}

/** One guard in one isolate: its own key handle, its own memo, a directory on the shared D1. */
async function isolate(secret = SECRET, directory: TenantDirectory = new D1TenantDirectory(db)) {
  const key = await importCanaryKey(secret)
  return { key, attribution: new TenantAttribution(Promise.resolve(key), directory) }
}

/** What a guard finds in an answer carrying `tenant`'s canary: the foreign tags. */
async function leakedTags(
  key: Awaited<ReturnType<typeof importCanaryKey>>,
  canary: string,
): Promise<(string | undefined)[]> {
  const own = await mintCanary(key, { requestId: 'victim-request', tenant: 'tenant-b' })
  const { findings } = await scanText({ key, own }, 'content', `${own}\npayroll rows… ${canary}`)
  expect(findings.map((f) => f.kind)).toEqual(['foreign'])
  return findings.map((f) => f.tenantTag)
}

describe('TenantAttribution across isolates', () => {
  it('should attribute a leak caught in one isolate to a tenant minted in another (shared D1)', async () => {
    const minting = await isolate()
    const catching = await isolate()
    await minting.attribution.remember('tenant-a-x1')
    const canary = await mintCanary(minting.key, { requestId: 'r-1', tenant: 'tenant-a-x1' })

    const sources = await catching.attribution.sources(await leakedTags(catching.key, canary))
    expect(sources.tenants).toEqual(['tenant-a-x1'])
    expect(sources.ambiguous).toEqual([])
    expect(sources.unknown).toEqual([])
  })

  it('should not attribute it when each isolate keeps its own memory (why the directory is durable)', async () => {
    const minting = await isolate(SECRET, new MemoryTenantDirectory())
    const catching = await isolate(SECRET, new MemoryTenantDirectory())
    await minting.attribution.remember('tenant-a-x2')
    const canary = await mintCanary(minting.key, { requestId: 'r-1', tenant: 'tenant-a-x2' })
    const sources = await catching.attribution.sources(await leakedTags(catching.key, canary))
    expect(sources.tenants).toEqual([])
    expect(sources.unknown).toHaveLength(1)
  })

  it('should store the tag under the key fingerprint, so another secret never reads it', async () => {
    const a = await isolate()
    const stranger = await isolate(OTHER_SECRET)
    await a.attribution.remember('tenant-a-x3')
    const tag = await tenantTag(a.key, 'tenant-a-x3')
    const row = await db
      .prepare('SELECT tag FROM tenant_tags WHERE tenant = ?')
      .bind('tenant-a-x3')
      .first<{ tag: string }>()
    expect(row?.tag).toBe(`${await keyFingerprint(a.key)}:${tag}`)
    // The same 10 hex chars under another secret: nobody.
    expect((await stranger.attribution.sources([tag])).tenants).toEqual([])
  })
})

describe('TenantAttribution with a tag collision', () => {
  it('should report a tag shared by two tenants as ambiguous with both, never one', async () => {
    const guard = await isolate()
    await guard.attribution.remember('tenant-a-c1')
    const canary = await mintCanary(guard.key, { requestId: 'r-1', tenant: 'tenant-a-c1' })
    const [tag] = await leakedTags(guard.key, canary)
    // A second tenant whose tag is the same 40 bits (1 in 2^40 per pair; written directly here, as
    // another isolate would have written it for that tenant).
    const collider = new D1TenantDirectory(db)
    await collider.remember(`${await keyFingerprint(guard.key)}:${tag}`, 'tenant-z-c1')

    const sources = await guard.attribution.sources([tag, tag])
    expect(sources.tenants).toEqual(['tenant-a-c1', 'tenant-z-c1'])
    expect(sources.ambiguous).toEqual([tag])
    expect(sources.owners).toEqual({ [tag!]: ['tenant-a-c1', 'tenant-z-c1'] })
  })

  it('should keep unambiguous and ambiguous tags apart in one answer', async () => {
    const directory = new MemoryTenantDirectory()
    const guard = await isolate(SECRET, directory)
    const fp = await keyFingerprint(guard.key)
    await directory.remember(`${fp}:aaaaaaaaaa`, 'one')
    await directory.remember(`${fp}:bbbbbbbbbb`, 'two')
    await directory.remember(`${fp}:bbbbbbbbbb`, 'three')
    const sources = await guard.attribution.sources([
      'aaaaaaaaaa',
      undefined,
      'bbbbbbbbbb',
      'cccccccccc',
      'abcdef', // a v1 (24-bit) tag: never looked up, never attributed
    ])
    expect(sources).toEqual({
      tenants: ['one', 'three', 'two'],
      ambiguous: ['bbbbbbbbbb'],
      unknown: ['cccccccccc', 'abcdef'],
      failed: [],
      owners: {
        aaaaaaaaaa: ['one'],
        bbbbbbbbbb: ['three', 'two'],
        cccccccccc: [],
        abcdef: [],
      },
    })
  })
})

describe('TenantAttribution when the directory fails', () => {
  it('should write once per tenant per isolate, concurrent calls included', async () => {
    const directory = new FlakyDirectory()
    const { attribution } = await isolate(SECRET, directory)
    await Promise.all(Array.from({ length: 50 }, () => attribution.remember('busy')))
    for (let i = 0; i < 50; i++) await attribution.remember('busy')
    await attribution.remember('other')
    expect(directory.writes).toBe(2)
  })

  it('should never reject remember, log the failure, and retry only after retryMs', async () => {
    const directory = new FlakyDirectory()
    directory.mode = 'down'
    const failures: AttributionFailure[] = []
    let now = 1_000
    const key = await importCanaryKey(SECRET)
    const attribution = new TenantAttribution(Promise.resolve(key), directory, {
      now: () => now,
      retryMs: 60_000,
      onError: (f) => failures.push(f),
    })
    await expect(attribution.remember('acme')).resolves.toBeUndefined()
    await attribution.remember('acme')
    expect(directory.writes).toBe(1) // not hammered while down
    expect(failures).toEqual([
      {
        event: 'ai_guard_attribution_failed',
        op: 'remember',
        subject: 'acme',
        error: 'D1_ERROR: network connection lost',
      },
    ])
    directory.mode = 'up'
    now += 60_000
    await attribution.remember('acme')
    expect(directory.writes).toBe(2)
    const tag = await tenantTag(key, 'acme')
    expect((await attribution.sources([tag])).tenants).toEqual(['acme'])
  })

  it('should leave the tenant unknown, never reject, when the lookup fails or hangs', async () => {
    const directory = new FlakyDirectory()
    const failures: AttributionFailure[] = []
    const key = await importCanaryKey(SECRET)
    const attribution = new TenantAttribution(Promise.resolve(key), directory, {
      timeoutMs: 50,
      onError: (f) => failures.push(f),
    })
    await attribution.remember('acme')
    const tag = await tenantTag(key, 'acme')
    for (const mode of ['down', 'hang'] as const) {
      directory.mode = mode
      const sources = await attribution.sources([tag])
      expect(sources).toMatchObject({ tenants: [], unknown: [tag], failed: [tag] })
    }
    expect(failures.map((f) => [f.op, f.error])).toEqual([
      ['resolve', 'D1_ERROR: network connection lost'],
      ['resolve', 'no answer within 50 ms'],
    ])
  })

  it('should survive a throwing log hook and an unusable key', async () => {
    const directory = new FlakyDirectory()
    directory.mode = 'down'
    const throwingLog = new TenantAttribution(importCanaryKey(SECRET), directory, {
      onError: () => {
        throw new Error('log sink down')
      },
    })
    await expect(throwingLog.remember('acme')).resolves.toBeUndefined()
    await expect(throwingLog.sources(['0123456789'])).resolves.toMatchObject({
      failed: ['0123456789'],
    })

    const noKey = new TenantAttribution(importCanaryKey('short'), new FlakyDirectory(), {
      onError: () => {},
    })
    await expect(noKey.remember('acme')).resolves.toBeUndefined()
    await expect(noKey.sources(['0123456789'])).resolves.toMatchObject({ unknown: ['0123456789'] })
  })

  it('should refuse bad options at construction', async () => {
    const key = importCanaryKey(SECRET)
    const directory = new MemoryTenantDirectory()
    expect(() => new TenantAttribution(key, directory, { timeoutMs: 0 })).toThrow(/timeoutMs/)
    expect(() => new TenantAttribution(key, directory, { memo: -1 })).toThrow(/memo/)
  })
})
