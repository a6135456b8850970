/**
 * @module FingerprintLog: a Durable Object through which the Worker's isolates share their prompts'
 * fingerprints. One model's log is spread over one or more of them, by tenant (see
 * `DurableFingerprints` in durable-fingerprints.ts and docs/fingerprints.md, "Sharing across isolates"); each object
 * is the log of the tenants that hash to it.
 *
 * Batches are appended to the object's SQLite storage with a sequence number; isolates read what is
 * newer than their cursor before judging an answer. Kept for the fingerprints' ttl and within a row
 * budget, oldest dropped first; a reader with no cursor (a new isolate) gets the newest batches only,
 * up to {@link BACKFILL_HASHES}, because stale pages most likely hold the most recent prompts.
 *
 * A batch is stored as rows of at most {@link CHUNK_HASHES} fingerprints (1 MiB), whatever the prompt:
 * production refuses values over 2 MB, and the densest admitted prompt has 2.1 MB of fingerprints.
 * Storage goes through {@link limitedSql}, so local runs refuse what production refuses.
 *
 * Every request publishes here, so a publish must not read the whole log: the ttl delete goes through
 * an index on `at` and the budget check reads a running total (summed once per instance), so its cost
 * stays flat as the log fills (figures in docs/fingerprints.md). The object stores and returns raw
 * BLOBs ({@link append}, {@link read}); turning them into numbers is the caller's work, because the
 * object is the one place every isolate waits on.
 */
import { DurableObject } from 'cloudflare:workers'
import type { FingerprintBatch } from '../plugins/foreign-content'
import {
  BACKFILL_HASHES,
  type CHUNK_HASHES,
  chunkBatch,
  INSERT,
  joinChunks,
  PAGE_HASHES,
  type RawBatch,
} from './fingerprint-chunks'
import { limitedSql } from './platform-limits'

/** Fingerprints kept per object, at most (8 bytes each: 32 MiB of storage). */
const MAX_HASHES = 4_000_000
/** How long batches are kept, ms (the isolates' table ttl). */
const TTL_MS = 3_600_000

/** What a reader asks of one object: how much at most (a sharded reader asks each for its share). */
interface ReadLimits {
  /** Fingerprints returned at most. @default PAGE_HASHES */
  page?: number
  /** Fingerprints a reader with no cursor gets, the newest. @default BACKFILL_HASHES */
  backfill?: number
}

interface Row extends Record<string, SqlStorageValue> {
  seq: number
  tenant: string
  at: number
  count: number
  hashes: ArrayBuffer
  last: number
}

/** One object's share of a model's log of prompt fingerprints. */
export class FingerprintLog extends DurableObject {
  #sqlStorage: SqlStorage | undefined
  /** Fingerprints stored, once summed (this instance's writes keep it current). */
  #total: number | undefined

  #schema(): SqlStorage {
    if (this.#sqlStorage) return this.#sqlStorage
    const sql = limitedSql(this.ctx.storage.sql)
    sql.exec(`CREATE TABLE IF NOT EXISTS batches (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, at INTEGER NOT NULL,
      count INTEGER NOT NULL, hashes BLOB NOT NULL, last INTEGER NOT NULL DEFAULT 1)`)
    sql.exec('CREATE INDEX IF NOT EXISTS batches_at ON batches (at)')
    // Objects created before batches were chunked have no `last`: each of their rows is a whole batch.
    const columns = sql.exec<{ name: string }>('PRAGMA table_info(batches)').toArray()
    if (!columns.some((c) => c.name === 'last')) {
      sql.exec('ALTER TABLE batches ADD COLUMN last INTEGER NOT NULL DEFAULT 1')
    }
    this.#sqlStorage = sql
    return sql
  }

  /** Appends one prompt's fingerprints (the API before {@link append}; kept for callers of it). */
  async publish(batch: FingerprintBatch): Promise<void> {
    this.#append([
      { tenant: batch.tenant, at: batch.at, hashes: Float64Array.from(batch.hashes).buffer },
    ])
  }

  /**
   * Appends batches in one call, each in rows of at most {@link CHUNK_HASHES}, then drops what is past
   * the ttl or over the budget. Synchronous inside: a Durable Object commits the writes of one event
   * together, so a reader never sees half a batch.
   */
  async append(batches: RawBatch[]): Promise<void> {
    this.#append(batches)
  }

  #append(batches: readonly RawBatch[]): void {
    const sql = this.#schema()
    let total = this.#storedHashes(sql)
    for (const batch of batches) {
      for (const chunk of chunkBatch(batch.hashes)) {
        sql.exec(INSERT, batch.tenant, batch.at, chunk.count, chunk.hashes, chunk.last ? 1 : 0)
        total += chunk.count
      }
    }
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

  /**
   * Rows after `cursor` (a sequence number), oldest first, with the cursor to pass next: the BLOBs as
   * stored, one per chunk (a batch may come in several rows, and over two reads).
   */
  async read(
    cursor: number | null | undefined,
    limits: ReadLimits = {},
  ): Promise<{ batches: RawBatch[]; cursor: number }> {
    const sql = this.#schema()
    const page = Math.min(PAGE_HASHES, Math.max(1, limits.page ?? PAGE_HASHES))
    const backfill = Math.min(BACKFILL_HASHES, Math.max(0, limits.backfill ?? BACKFILL_HASHES))
    const after = cursor ?? this.#backfillStart(sql, backfill)
    const batches: RawBatch[] = []
    let last = after
    let taken = 0
    for (const row of sql.exec<Row>(
      'SELECT seq, tenant, at, count, hashes, last FROM batches WHERE seq > ? AND +at >= ? ORDER BY seq',
      after,
      Date.now() - TTL_MS,
    )) {
      if (taken > 0 && taken + row.count > page) break
      batches.push({
        tenant: row.tenant,
        at: row.at,
        hashes: row.hashes,
        ...(row.last === 0 ? { more: true as const } : {}),
      })
      taken += row.count
      last = row.seq
    }
    return { batches, cursor: last }
  }

  /** {@link read} as whole numbers: the API before it, kept for callers of it. */
  async since(
    model: string,
    cursor: number | undefined,
  ): Promise<{ batches: FingerprintBatch[]; cursor: number }> {
    const read = await this.read(cursor)
    return { batches: joinChunks(model, read.batches), cursor: read.cursor }
  }

  /** The sequence number before the newest `backfill` fingerprints. */
  #backfillStart(sql: SqlStorage, backfill: number): number {
    let sum = 0
    for (const row of sql.exec<{ seq: number; count: number }>(
      'SELECT seq, count FROM batches ORDER BY seq DESC',
    )) {
      sum += row.count
      if (sum > backfill) return row.seq
    }
    return 0
  }

  /** Drops the oldest whole batches until `excess` fingerprints are gone; how many went. */
  #trim(sql: SqlStorage, excess: number): number {
    let dropped = 0
    let upTo = 0
    for (const row of sql.exec<{ seq: number; count: number; last: number }>(
      'SELECT seq, count, last FROM batches ORDER BY seq',
    )) {
      dropped += row.count
      upTo = row.seq
      if (dropped >= excess && row.last === 1) break
    }
    sql.exec('DELETE FROM batches WHERE seq <= ?', upTo)
    return dropped
  }
}
