/**
 * @module The FingerprintLog's stored form, apart from the Durable Object class (which needs
 * `cloudflare:workers`), so that the store's callers load in Node too: batches as float64 BLOBs in
 * chunks of at most 1 MiB, and how they are joined again.
 */
import type { FingerprintBatch } from '../plugins/foreign-content'
import { SAFE_VALUE_BYTES } from './platform-limits'

/** Fingerprints a reader with no cursor gets: the newest, about 2 MiB. */
export const BACKFILL_HASHES = 250_000
/** Fingerprints returned per read at most; a reader that is further behind catches up next time. */
export const PAGE_HASHES = 500_000
/** Fingerprints per stored row at most: 1 MiB of float64, half the platform's value limit. */
export const CHUNK_HASHES = SAFE_VALUE_BYTES / 8

/** The statement that stores one chunk (tenant, at, count, hashes, last). */
export const INSERT = 'INSERT INTO batches (tenant, at, count, hashes, last) VALUES (?, ?, ?, ?, ?)'

/** One prompt's fingerprints as the object stores them: float64s in an ArrayBuffer. */
export interface RawBatch {
  tenant: string
  at: number
  /** `Float64Array` bytes of the fingerprints (any length: stored in chunks). */
  hashes: ArrayBuffer
  /** In a read: more rows of this batch follow (it was stored in chunks). */
  more?: true
}

/**
 * Raw rows as batches of numbers, the chunks of one batch joined again (a batch cut by a page comes
 * whole up to the cut, the rest with the next read).
 *
 * @example
 * const batches = joinChunks(model, (await stub.read(cursor)).batches)
 */
export function joinChunks(model: string, rows: readonly RawBatch[]): FingerprintBatch[] {
  const batches: FingerprintBatch[] = []
  let open: FingerprintBatch | undefined
  for (const row of rows) {
    const hashes = new Float64Array(row.hashes)
    if (!open) {
      open = { model, tenant: row.tenant, at: row.at, hashes: [] }
      batches.push(open)
    }
    // Pushed one by one: a spread of a 131,072-element chunk overflows the call stack.
    for (let i = 0; i < hashes.length; i++) open.hashes.push(hashes[i]!)
    if (!row.more) open = undefined
  }
  return batches
}

/** One stored row of a batch: at most {@link CHUNK_HASHES} fingerprints. */
interface StoredChunk {
  count: number
  hashes: ArrayBuffer
  /** Whether it is its batch's last row (trimming drops whole batches). */
  last: boolean
}

/**
 * A batch's fingerprints as the rows the log stores: at most {@link CHUNK_HASHES} each, so no value is
 * over 1 MiB whatever the prompt (production refuses 2 MB).
 *
 * @example
 * for (const chunk of chunkBatch(Float64Array.from(print.selected).buffer)) insert(chunk)
 */
export function chunkBatch(hashes: ArrayBuffer): StoredChunk[] {
  const count = Math.floor(hashes.byteLength / 8)
  const chunks: StoredChunk[] = []
  for (let from = 0; from < count; from += CHUNK_HASHES) {
    const to = Math.min(count, from + CHUNK_HASHES)
    chunks.push({ count: to - from, hashes: hashes.slice(from * 8, to * 8), last: to === count })
  }
  return chunks
}
