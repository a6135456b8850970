/**
 * @module The fingerprint-log bench's Worker: the real `FingerprintLog` and, beside it, `ScanningLog`,
 * the same object publishing the way it did before (a ttl delete and a sum over the whole log on every
 * publish), so both are timed side by side in one run. `POST /fill?log=&batches=` appends batches of
 * 200 fingerprints without timing; `POST /publish?log=&n=` publishes `n` more, the way a request does.
 */
import { FingerprintLog } from '../../src/worker/fingerprint-log'

export { FingerprintLog }

/** How long the log keeps a batch, ms: the hour src/worker/fingerprint-log.ts keeps it. */
const TTL_MS = 3_600_000

/** The publish of the previous version: two scans of the whole log each time. */
export class ScanningLog extends FingerprintLog {
  override async publish(batch: {
    model: string
    tenant: string
    at: number
    hashes: number[]
  }): Promise<void> {
    const sql = this.ctx.storage.sql
    sql.exec(`CREATE TABLE IF NOT EXISTS batches (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, at INTEGER NOT NULL,
      count INTEGER NOT NULL, hashes BLOB NOT NULL)`)
    sql.exec(
      'INSERT INTO batches (tenant, at, count, hashes) VALUES (?, ?, ?, ?)',
      batch.tenant,
      batch.at,
      batch.hashes.length,
      Float64Array.from(batch.hashes).buffer,
    )
    sql.exec('DELETE FROM batches WHERE at < ?', Date.now() - TTL_MS)
    sql.exec('SELECT COALESCE(SUM(count), 0) AS total FROM batches').one()
  }
}

interface Env {
  CURRENT: DurableObjectNamespace<FingerprintLog>
  SCANNING: DurableObjectNamespace<ScanningLog>
}

const HASHES = Array.from({ length: 200 }, (_, i) => i * 7_919 + 1)

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const namespace = url.searchParams.get('log') === 'scanning' ? env.SCANNING : env.CURRENT
    const stub = namespace.get(namespace.idFromName('model:bench'))
    const n = Number(url.searchParams.get(url.pathname === '/fill' ? 'batches' : 'n') ?? '1')
    for (let i = 0; i < n; i++) {
      await stub.publish({ model: 'bench', tenant: `t${i % 7}`, at: Date.now(), hashes: HASHES })
    }
    return new Response('ok')
  },
} satisfies ExportedHandler<Env>
