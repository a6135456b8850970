/**
 * @module FingerprintLog: the Durable Object through which every isolate of the Worker shares its
 * prompts' fingerprints, one instance per model (a leak stays within one model's engine pool).
 *
 * Batches are appended to the object's SQLite storage with a sequence number; isolates read what is
 * newer than their cursor before judging an answer. Kept for the fingerprints' ttl and within a row
 * budget, oldest dropped first; a reader with no cursor (a new isolate) gets the newest batches only,
 * up to {@link BACKFILL_HASHES}, because stale pages most likely hold the most recent prompts.
 *
 * Every request publishes here, so a publish must not read the whole log: the ttl delete goes through
 * an index on `at` and the budget check reads a running total (summed once per instance), so its cost
 * stays flat as the log fills (figures in docs/fingerprints.md).
 */
import { DurableObject } from 'cloudflare:workers'
import type { FingerprintBatch } from '../fingerprint'

/** Fingerprints kept per model, at most (8 bytes each: 32 MiB of storage). */
export const MAX_HASHES = 4_000_000
/** Fingerprints a reader with no cursor gets: the newest, about 2 MiB. */
export const BACKFILL_HASHES = 250_000
/** Fingerprints returned per read at most; a reader that is further behind catches up next time. */
const PAGE_HASHES = 500_000
/** How long batches are kept, ms (the isolates' table ttl). */
export const TTL_MS = 3_600_000

interface Row extends Record<string, SqlStorageValue> {
  seq: number
  tenant: string
  at: number
  count: number
  hashes: ArrayBuffer
}

/** One model's shared log of prompt fingerprints. */
export class FingerprintLog extends DurableObject {
  #ready = false
  /** Fingerprints stored, once summed (this instance's writes keep it current). */
  #total: number | undefined

  #schema(): SqlStorage {
    const sql = this.ctx.storage.sql
    if (!this.#ready) {
      sql.exec(`CREATE TABLE IF NOT EXISTS batches (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, at INTEGER NOT NULL,
        count INTEGER NOT NULL, hashes BLOB NOT NULL)`)
      sql.exec('CREATE INDEX IF NOT EXISTS batches_at ON batches (at)')
      this.#ready = true
    }
    return sql
  }

  /** Appends one prompt's fingerprints, then drops what is past the ttl or over the budget. */
  async publish(batch: FingerprintBatch): Promise<void> {
    const sql = this.#schema()
    const hashes = Float64Array.from(batch.hashes).buffer
    const stored = this.#storedHashes(sql)
    sql.exec(
      'INSERT INTO batches (tenant, at, count, hashes) VALUES (?, ?, ?, ?)',
      batch.tenant,
      batch.at,
      batch.hashes.length,
      hashes,
    )
    let total = stored + batch.hashes.length
    for (const row of sql.exec<{ count: number }>(
      'DELETE FROM batches WHERE at < ? RETURNING count',
      Date.now() - TTL_MS,
    )) {
      total -= row.count
    }
    if (total > MAX_HASHES) total -= this.#trim(sql, total - MAX_HASHES)
    this.#total = total
  }

  /** Fingerprints stored (summed on this instance's first publish, then kept by its writes). */
  #storedHashes(sql: SqlStorage): number {
    this.#total ??= sql
      .exec<{ total: number }>('SELECT COALESCE(SUM(count), 0) AS total FROM batches')
      .one().total
    return this.#total
  }

  /** Batches after `cursor` (a sequence number), oldest first, with the cursor to pass next. */
  async since(
    model: string,
    cursor: number | undefined,
  ): Promise<{ batches: FingerprintBatch[]; cursor: number }> {
    const sql = this.#schema()
    const after = cursor ?? this.#backfillStart(sql)
    const batches: FingerprintBatch[] = []
    let last = after
    let taken = 0
    for (const row of sql.exec<Row>(
      'SELECT seq, tenant, at, count, hashes FROM batches WHERE seq > ? AND at >= ? ORDER BY seq',
      after,
      Date.now() - TTL_MS,
    )) {
      if (taken > 0 && taken + row.count > PAGE_HASHES) break
      batches.push({
        model,
        tenant: row.tenant,
        at: row.at,
        hashes: [...new Float64Array(row.hashes)],
      })
      taken += row.count
      last = row.seq
    }
    return { batches, cursor: last }
  }

  /** The sequence number before the newest {@link BACKFILL_HASHES} fingerprints. */
  #backfillStart(sql: SqlStorage): number {
    let sum = 0
    for (const row of sql.exec<{ seq: number; count: number }>(
      'SELECT seq, count FROM batches ORDER BY seq DESC',
    )) {
      sum += row.count
      if (sum > BACKFILL_HASHES) return row.seq
    }
    return 0
  }

  /** Drops the oldest batches until `excess` fingerprints are gone; how many went. */
  #trim(sql: SqlStorage, excess: number): number {
    let dropped = 0
    let upTo = 0
    for (const row of sql.exec<{ seq: number; count: number }>(
      'SELECT seq, count FROM batches ORDER BY seq',
    )) {
      if (dropped >= excess) break
      dropped += row.count
      upTo = row.seq
    }
    sql.exec('DELETE FROM batches WHERE seq <= ?', upTo)
    return dropped
  }
}
