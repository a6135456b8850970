/**
 * @module The fingerprint-shards bench's Worker: many isolates' traffic against a model's log spread
 * over a grid of `shards` × `replicas` FingerprintLog objects, as DurableFingerprints spreads it.
 * `POST /load?run=&shards=&replicas=&isolates=&requests=&concurrency=&only=` plays `requests` guarded
 * requests, each a publish of a 200-fingerprint prompt from one of 100 tenants (to every row of its
 * tenant's column) and a read by one of `isolates` simulated isolates (of every column of the
 * isolate's row, from its cursors). With `only=O` just the calls that reach object O (column
 * O mod shards, row ⌊O / shards⌋) are made: that object's share of the same traffic, timed alone, as
 * it would run on its own thread in production. The BLOBs are not decoded here: that is the
 * isolates' work, not the objects'.
 */
import { DurableObject } from 'cloudflare:workers'
import { DurableFingerprints } from '../../src/worker/durable-fingerprints'
import { BACKFILL_HASHES, PAGE_HASHES, type RawBatch } from '../../src/worker/fingerprint-chunks'
import { FingerprintLog } from '../../src/worker/fingerprint-log'

export { FingerprintLog }

/** What a reader asks of one object, as `FingerprintLog#read` takes it. */
type ReadLimits = Parameters<FingerprintLog['read']>[1]

/**
 * The bench's own name for object `o` of run `run`: the objects are called here directly, never read
 * through a store, so any name distinct per run and object will do.
 */
function objectName(run: string, o: number): string {
  return `bench:${run}#${o}`
}

/**
 * An object with FingerprintLog's methods that store nothing and return nothing: played with
 * `noop=1`, it measures what the calls alone cost here (both ends of each RPC run on workerd's one
 * thread locally; in production the caller's end runs in the caller's isolate).
 */
export class NoopLog extends DurableObject {
  async append(_batches: RawBatch[]): Promise<void> {}
  async read(
    cursor: number | null,
    _limits?: ReadLimits,
  ): Promise<{ batches: RawBatch[]; cursor: number }> {
    return { batches: [], cursor: cursor ?? 0 }
  }
}

interface Env {
  LOG: DurableObjectNamespace<FingerprintLog>
  NOOP: DurableObjectNamespace<NoopLog>
}

const TENANTS = Array.from({ length: 100 }, (_, i) => `tenant-${i}`)

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const get = (name: string, fallback: number) => Number(url.searchParams.get(name) ?? fallback)
    const run = url.searchParams.get('run') ?? 'bench'
    const shards = get('shards', 1)
    const replicas = get('replicas', 1)
    const isolates = get('isolates', 50)
    const requests = get('requests', 1000)
    const concurrency = get('concurrency', 16)
    const onlyParam = url.searchParams.get('only')
    const only = onlyParam === null ? undefined : Number(onlyParam)
    const store = new DurableFingerprints(env.LOG, { shards, replicas })
    const namespace: DurableObjectNamespace<FingerprintLog | NoopLog> =
      url.searchParams.get('noop') === '1' ? env.NOOP : env.LOG
    const stubs = Array.from({ length: shards * replicas }, (_, o) =>
      namespace.get(namespace.idFromName(objectName(run, o))),
    )
    const rows = Array.from({ length: replicas }, (_, r) => r)
    const columns = Array.from({ length: shards }, (_, w) => w)
    const limits = {
      page: Math.ceil(PAGE_HASHES / shards),
      backfill: Math.ceil(BACKFILL_HASHES / shards),
    }
    // Every isolate has read the (empty) log once: it has a cursor of 0 at every object.
    const cursors = Array.from({ length: isolates }, () => new Array<number>(shards).fill(0))
    let next = 0
    let published = 0
    let read = 0
    const worker = async () => {
      for (let j = next++; j < requests; j = next++) {
        const tenant = TENANTS[j % TENANTS.length]!
        const shard = store.shardOf(tenant)
        const hashes = Float64Array.from({ length: 200 }, (_, i) => j * 1_000 + i).buffer
        const batch: RawBatch = { tenant, at: Date.now(), hashes }
        await Promise.all(
          rows.map(async (r) => {
            const o = shard + shards * r
            if (only !== undefined && only !== o) return
            await stubs[o]!.append([batch])
            published++
          }),
        )
        const isolate = cursors[j % isolates]!
        const row = (j % isolates) % replicas
        await Promise.all(
          columns.map(async (w) => {
            const o = w + shards * row
            if (only !== undefined && only !== o) return
            const page = await stubs[o]!.read(isolate[w]!, limits)
            isolate[w] = page.cursor
            for (const b of page.batches) read += b.hashes.byteLength / 8
          }),
        )
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    return Response.json({ published, read })
  },
} satisfies ExportedHandler<Env>
