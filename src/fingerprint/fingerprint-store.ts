/**
 * @module The shape of a fingerprint store shared across isolates (the Worker's is a Durable Object):
 * isolates publish the fingerprints of the prompts they guard and pull what others published since
 * their last cursor into their own {@link FingerprintTable}. Types only.
 */

/** The fingerprints of one prompt (or several of one tenant and model), as published. */
export interface FingerprintBatch {
  model: string
  tenant: string
  /** When the prompt was sent (ms since the epoch): the table's ttl counts from it. */
  at: number
  /** `PromptPrint.selected`: keyed PRF outputs, never text. */
  hashes: number[]
}

/**
 * A shared log of batches, per model: a leak stays within one model's engine pool, so an isolate
 * answering for a model reads only that model's log (the Worker shards its Durable Object the same
 * way). `since(model, undefined)` returns the newest batches the store still holds (bounded); an
 * isolate then passes the returned cursor to get only what is newer. Batches an isolate published
 * itself may come back: adding a batch twice to a table changes nothing.
 *
 * @example
 * await store.publish({ model, tenant, at: Date.now(), hashes: print.selected })
 * const { batches, cursor: next } = await store.since(model, cursor)
 * for (const b of batches) table.add(b.model, b.tenant, b.hashes, b.at)
 */
export interface FingerprintStore {
  publish(batch: FingerprintBatch): Promise<void>
  since(model: string, cursor: string | undefined): Promise<StoreRead>
}

/** One read of a {@link FingerprintStore}. */
export interface StoreRead {
  batches: FingerprintBatch[]
  cursor: string
  /**
   * Parts of the store this read could not reach (a sharded store's shard numbers): their batches
   * were not read, so an answer judged now cannot see them. Absent when everything was read.
   */
  unavailable?: number[]
}

/**
 * What one request's read of the shared store missed: `down` (it failed: only this isolate's own
 * table was used), the shards it left out, or nothing (`undefined`: all read, or no store).
 */
export type StoreGap = { down: true } | { shards: number[] } | undefined
