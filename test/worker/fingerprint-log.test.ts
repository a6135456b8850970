/**
 * The FingerprintLog Durable Object (real, from miniflare) keeps what it promises as it fills: batches
 * past the ttl are gone, the oldest go first once the budget is exceeded, and the running total that
 * replaced a scan per publish agrees with what is stored. Sharded by tenant (DurableFingerprints), a
 * read sees every tenant's batches, reads the unsharded log's, and goes on without a shard that is down.
 */
import { env } from 'cloudflare:test'
import { describe, expect, it, vi } from 'vitest'
import type { FingerprintBatch } from '../../src/plugins/foreign-content'
import { DurableFingerprints } from '../../src/worker/durable-fingerprints'
import type { RawBatch } from '../../src/worker/fingerprint-chunks'
import type { FingerprintLog } from '../../src/worker/fingerprint-log'

/** How long the log keeps a batch: an hour, the isolates' table ttl (src/worker/fingerprint-log.ts). */
const TTL_MS = 3_600_000
/** Fingerprints one object keeps at most, 32 MiB of them (src/worker/fingerprint-log.ts). */
const MAX_HASHES = 4_000_000

/**
 * The name of a model's object in column `shard` of row `replica`, as DurableFingerprints names it
 * (src/worker/durable-fingerprints.ts): the names are fixed, since stored batches are found by them —
 * column 0 of row 0 is the unsharded log's, row 0 keeps the names of the log sharded without replicas.
 * A test that breaks an object by this name fails if the store names it otherwise.
 */
function objectName(model: string, shard: number, replica: number): string {
  if (replica > 0) return `model:${model}#${shard}.${replica}`
  return shard === 0 ? `model:${model}` : `model:${model}#${shard}`
}

const namespace = (env as unknown as { FINGERPRINTS: DurableObjectNamespace<FingerprintLog> })
  .FINGERPRINTS

/** A log of its own per test: the name is unique. */
function log(name: string) {
  return namespace.get(namespace.idFromName(`test:${name}`))
}

/**
 * Every batch stored, oldest first (read page by page from the start). A batch larger than a page
 * comes over several reads: its parts (same tenant and time, one after the other) are joined again.
 */
async function everything(
  stub: ReturnType<typeof log>,
  model: string,
): Promise<FingerprintBatch[]> {
  const all: FingerprintBatch[] = []
  let cursor = 0
  for (;;) {
    const page = await stub.since(model, cursor)
    if (page.batches.length === 0) return all
    for (const batch of page.batches) {
      const last = all.at(-1)
      if (last && last.tenant === batch.tenant && last.at === batch.at) {
        for (const hash of batch.hashes) last.hashes.push(hash)
      } else all.push(batch)
    }
    cursor = page.cursor
  }
}

function batch(tenant: string, count: number, at = Date.now(), first = 1): FingerprintBatch {
  return { model: 'm', tenant, at, hashes: Array.from({ length: count }, (_, i) => first + i) }
}

describe('FingerprintLog', () => {
  it('drops batches past the ttl at the next publish, and keeps the fresh ones', async () => {
    const stub = log('ttl')
    await stub.publish(batch('fresh-1', 3))
    await stub.publish(batch('stale', 5, Date.now() - TTL_MS - 1_000))
    await stub.publish(batch('fresh-2', 4))
    const stored = await everything(stub, 'm')
    expect(stored.map((b) => b.tenant)).toEqual(['fresh-1', 'fresh-2'])
    expect(stored[1]!.hashes).toEqual([1, 2, 3, 4])
  })

  it('takes what the ttl dropped off the total: no fresh batch is trimmed for a stale one', async () => {
    // Reads never return a stale batch, so only the budget shows whether it was deleted and counted
    // off: three fresh batches fit, and a fourth of the same size arriving stale must not push out
    // the oldest fresh one.
    const stub = log('ttl-total')
    const size = Math.ceil(MAX_HASHES / 4) + 1
    for (const tenant of ['a', 'b', 'c']) await stub.publish(batch(tenant, size))
    await stub.publish(batch('stale', size, Date.now() - TTL_MS - 1_000))
    expect((await everything(stub, 'm')).map((b) => b.tenant)).toEqual(['a', 'b', 'c'])
  })

  it('over the budget drops the oldest first, and keeps counting right after a trim', async () => {
    const stub = log('budget')
    const size = Math.ceil(MAX_HASHES / 4) + 1 // four of them are just over the budget
    for (const tenant of ['a', 'b', 'c']) await stub.publish(batch(tenant, size))
    expect((await everything(stub, 'm')).map((b) => b.tenant)).toEqual(['a', 'b', 'c'])
    await stub.publish(batch('d', size))
    // a + b + c + d is over the budget by 4: the oldest batch goes, and only it.
    expect((await everything(stub, 'm')).map((b) => b.tenant)).toEqual(['b', 'c', 'd'])
    // Were the total not reduced by the trim, this small batch would trim again.
    await stub.publish(batch('e', 10))
    expect((await everything(stub, 'm')).map((b) => b.tenant)).toEqual(['b', 'c', 'd', 'e'])
    await stub.publish(batch('f', size))
    expect((await everything(stub, 'm')).map((b) => b.tenant)).toEqual(['c', 'd', 'e', 'f'])
  })
})

/** A namespace whose objects named in `broken` fail (or hang) on read: an object down or slow. */
function failing(broken: Map<string, 'throw' | 'hang'>): DurableObjectNamespace<FingerprintLog> {
  return new Proxy(namespace, {
    get(target, property) {
      if (property === 'idFromName') {
        return (name: string) => ({ name, id: target.idFromName(name) })
      }
      if (property === 'get') {
        return (handle: { name: string; id: DurableObjectId }) => {
          const stub = target.get(handle.id)
          const mode = broken.get(handle.name)
          if (!mode) return stub
          return {
            append: (rows: RawBatch[]) => stub.append(rows),
            read: () =>
              mode === 'throw' ? Promise.reject(new Error('object down')) : new Promise(() => {}),
          }
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as unknown as DurableObjectNamespace<FingerprintLog>
}

describe('DurableFingerprints, sharded by tenant', () => {
  const tenants = Array.from({ length: 24 }, (_, i) => `tenant-${i}`)

  it('should spread tenants over the shards, and a read should see every one of them', async () => {
    const store = new DurableFingerprints(namespace, { shards: 4 })
    expect(new Set(tenants.map((t) => store.shardOf(t))).size).toBe(4)
    const model = 'test:spread'
    for (const [i, tenant] of tenants.entries()) {
      await store.publish({ ...batch(tenant, 3, Date.now(), i * 10), model })
    }
    const first = await store.since(model, undefined)
    expect(new Set(first.batches.map((b) => b.tenant))).toEqual(new Set(tenants))
    // The cursor holds every shard's place: nothing again, then only what is new.
    expect((await store.since(model, first.cursor)).batches).toEqual([])
    await store.publish({ ...batch('late', 2), model })
    const next = await store.since(model, first.cursor)
    expect(next.batches.map((b) => b.tenant)).toEqual(['late'])
  })

  it('should read what the unsharded log stored, and its cursor', async () => {
    const model = 'test:upgrade'
    const before = new DurableFingerprints(namespace)
    await before.publish({ ...batch('old', 3), model })
    const { cursor } = await before.since(model, undefined)
    await before.publish({ ...batch('old-2', 2), model })
    const after = new DurableFingerprints(namespace, { shards: 8 })
    // An isolate that read the old log goes on from its cursor: shard 0 is the old object.
    const read = await after.since(model, cursor)
    expect(read.batches.map((b) => b.tenant)).toEqual(['old-2'])
    const fresh = await after.since(model, undefined)
    expect(fresh.batches.map((b) => b.tenant).sort()).toEqual(['old', 'old-2'])
  })

  it('should go on without a shard that is down or slow, say which, and catch up after', async () => {
    const model = 'test:degraded'
    const healthy = new DurableFingerprints(namespace, { shards: 4 })
    for (const tenant of tenants) await healthy.publish({ ...batch(tenant, 2), model })
    const name = (shard: number) => objectName(model, shard, 0)
    const broken = new Map<string, 'throw' | 'hang'>([
      [name(1), 'throw'],
      [name(2), 'hang'],
    ])
    const store = new DurableFingerprints(failing(broken), { shards: 4, readTimeoutMs: 200 })
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    const read = await store.since(model, undefined)
    const lines = logged.mock.calls.map((call) => JSON.parse(String(call[0])))
    logged.mockRestore()
    expect(read.unavailable).toEqual([1, 2])
    // The operator's line names the shards left out.
    expect(lines).toEqual([
      {
        event: 'ai_guard_fingerprint_shards_unavailable',
        model,
        shards: [1, 2],
        of: 4,
        error: 'object down',
      },
    ])
    const seen = new Set(read.batches.map((b) => b.tenant))
    expect(seen).toEqual(new Set(tenants.filter((t) => ![1, 2].includes(store.shardOf(t)))))
    // The missing shards' places stay empty: once they are back, their batches come.
    broken.clear()
    const later = await store.since(model, read.cursor)
    expect(later.unavailable).toBeUndefined()
    expect(new Set(later.batches.map((b) => b.tenant))).toEqual(
      new Set(tenants.filter((t) => [1, 2].includes(store.shardOf(t)))),
    )
  })

  it('should fail the read when every shard is down (the guard then keeps its own table)', async () => {
    const model = 'test:down'
    const broken = new Map<string, 'throw' | 'hang'>(
      [0, 1].map((s) => [objectName(model, s, 0), 'throw']),
    )
    const store = new DurableFingerprints(failing(broken), { shards: 2 })
    await expect(store.since(model, undefined)).rejects.toThrow('object down')
  })

  it('should give every row of replicas every batch, and keep a reader on its row', async () => {
    const model = 'test:replicas'
    const store = new DurableFingerprints(namespace, { shards: 2, replicas: 3 })
    for (const tenant of tenants) await store.publish({ ...batch(tenant, 2), model })
    const rows = new Set<string>()
    for (let i = 0; i < 12; i++) {
      const read = await store.since(model, undefined)
      expect(new Set(read.batches.map((b) => b.tenant))).toEqual(new Set(tenants))
      rows.add(read.cursor.split(':')[0]!)
      // From its cursor a reader stays on its row: it gets only what is new.
      expect((await store.since(model, read.cursor)).batches).toEqual([])
    }
    expect(rows.size).toBeGreaterThan(1) // readers spread over the rows
    // A row whose object is down fails only its own readers' share.
    const broken = new Map<string, 'throw' | 'hang'>([[objectName(model, 1, 2), 'throw']])
    const degraded = new DurableFingerprints(failing(broken), { shards: 2, replicas: 3 })
    const onRow = (row: number) => degraded.since(model, `${row}:,`)
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    expect((await onRow(2)).unavailable).toEqual([1])
    const warned = logged.mock.calls.length
    logged.mockRestore()
    expect(warned).toBe(1)
    expect((await onRow(0)).unavailable).toBeUndefined()
    expect(new Set((await onRow(1)).batches.map((b) => b.tenant))).toEqual(new Set(tenants))
  })

  it('should refuse a shard count it cannot read', () => {
    expect(() => new DurableFingerprints(namespace, { shards: 0 })).toThrow(/"shards"/)
    expect(() => new DurableFingerprints(namespace, { shards: 1.5 })).toThrow(/"shards"/)
    expect(() => new DurableFingerprints(namespace, { replicas: 0 })).toThrow(/"replicas"/)
  })
})
