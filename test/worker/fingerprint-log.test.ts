/**
 * The FingerprintLog Durable Object (real, from miniflare) keeps what it promises as it fills: batches
 * past the ttl are gone, the oldest go first once the budget is exceeded, and the running total that
 * replaced a scan per publish agrees with what is stored.
 */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import type { FingerprintBatch } from '../../src/fingerprint'
import { type FingerprintLog, MAX_HASHES, TTL_MS } from '../../src/worker/fingerprint-log'

const namespace = (env as unknown as { FINGERPRINTS: DurableObjectNamespace<FingerprintLog> })
  .FINGERPRINTS

/** A log of its own per test: the name is unique. */
function log(name: string) {
  return namespace.get(namespace.idFromName(`test:${name}`))
}

/** Every batch stored, oldest first (read page by page from the start). */
async function everything(
  stub: ReturnType<typeof log>,
  model: string,
): Promise<FingerprintBatch[]> {
  const all: FingerprintBatch[] = []
  let cursor = 0
  for (;;) {
    const page = await stub.since(model, cursor)
    if (page.batches.length === 0) return all
    all.push(...page.batches)
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
