/**
 * @module The Worker's fingerprint store: a model's log spread over FingerprintLog Durable Objects in a
 * grid of `shards` columns (by tenant) and `replicas` rows. A publish goes to its tenant's column, to
 * every row of it; a read asks every column of one row (the isolate's, fixed by its cursor) at once,
 * each read bounded in time, because a leak can come from any tenant. Every publish meets every read
 * at one object, and an object sees 1/shards of the publishes and 1/replicas of the reads
 * (docs/fingerprints.md, "Sharing across isolates").
 */
import type { FingerprintBatch, FingerprintStore } from '../plugins/foreign-content'
import { BACKFILL_HASHES, joinChunks, PAGE_HASHES, type RawBatch } from './fingerprint-chunks'
import type { FingerprintLog } from './fingerprint-log'

/** Options of {@link DurableFingerprints}. */
interface DurableFingerprintsOptions {
  /**
   * Objects per model. Any value reads every batch ever published (a read asks all of them, and shard
   * 0 is the object of the unsharded log), so it can be raised or lowered at any time. @default 1
   */
  shards?: number
  /**
   * Copies of each column: a publish writes to each, a read asks one (each object then serves
   * 1/replicas of the reads). Changing it starts the isolates on a row again (a backfill). @default 1
   */
  replicas?: number
  /** How long one object's read may take before this read goes on without it, ms. @default 2000 */
  readTimeoutMs?: number
}

/** A read that left out objects that failed or were too slow: which, so a caller can say so. */
interface ShardedRead {
  batches: FingerprintBatch[]
  cursor: string
  /** Shards not read this time (their cursors stay: the next read catches up). Absent when none. */
  unavailable?: number[]
}

/** Most columns per model: a read asks each of them. */
const MAX_SHARDS = 256
/** Most objects per model (columns × rows). */
const MAX_OBJECTS = 4096

/**
 * Publishes to and reads from a model's FingerprintLog objects; a cursor is their sequence numbers,
 * comma-separated, shard 0 first (one number: the cursor of the unsharded log, still valid).
 *
 * @example
 * createGuard({ secret, content: { store: new DurableFingerprints(env.FINGERPRINTS, { shards: 8 }) } })
 */
export class DurableFingerprints implements FingerprintStore {
  readonly #namespace: DurableObjectNamespace<FingerprintLog>
  readonly #shards: number
  readonly #replicas: number
  readonly #timeoutMs: number
  #warnedAt = Number.NEGATIVE_INFINITY

  constructor(
    namespace: DurableObjectNamespace<FingerprintLog>,
    options: DurableFingerprintsOptions = {},
  ) {
    const shards = options.shards ?? 1
    if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
      throw new Error(`option "shards" must be an integer from 1 to ${MAX_SHARDS}`)
    }
    const replicas = options.replicas ?? 1
    if (!Number.isInteger(replicas) || replicas < 1 || replicas * shards > MAX_OBJECTS) {
      throw new Error(
        `option "replicas" must be an integer from 1, with shards × replicas ≤ ${MAX_OBJECTS}`,
      )
    }
    const timeout = options.readTimeoutMs ?? 2_000
    if (!(timeout > 0)) throw new Error('option "readTimeoutMs" must be a positive number')
    this.#namespace = namespace
    this.#shards = shards
    this.#replicas = replicas
    this.#timeoutMs = timeout
  }

  /** Objects per model. */
  get shards(): number {
    return this.#shards
  }

  /** The object of `tenant`'s batches of `model`. */
  shardOf(tenant: string): number {
    return this.#shards === 1 ? 0 : fnv1a(tenant) % this.#shards
  }

  /** Copies of each column. */
  get replicas(): number {
    return this.#replicas
  }

  #stub(model: string, shard: number, replica: number) {
    return this.#namespace.get(this.#namespace.idFromName(objectName(model, shard, replica)))
  }

  async publish(batch: FingerprintBatch): Promise<void> {
    // Encoded here, not in the object: the object is what every isolate waits on.
    const raw: RawBatch = {
      tenant: batch.tenant,
      at: batch.at,
      hashes: Float64Array.from(batch.hashes).buffer,
    }
    const shard = this.shardOf(batch.tenant)
    const rows = Array.from({ length: this.#replicas }, (_, replica) => replica)
    // Every row gets it (a failed row is reported: its readers miss this batch, the others do not).
    const written = await Promise.allSettled(
      rows.map((replica) => this.#stub(batch.model, shard, replica).append([raw])),
    )
    const failed = written.find((w) => w.status === 'rejected')
    if (failed) throw failed.reason
  }

  async since(model: string, cursor: string | undefined): Promise<ShardedRead> {
    const { replica, seqs: cursors } = parseCursor(cursor, this.#shards, this.#replicas)
    // Each object returns its share of what one read may bring into the isolate's memory.
    const limits = {
      page: Math.ceil(PAGE_HASHES / this.#shards),
      backfill: Math.ceil(BACKFILL_HASHES / this.#shards),
    }
    const reads = await Promise.allSettled(
      cursors.map((after, shard) =>
        withTimeout(this.#stub(model, shard, replica).read(after ?? null, limits), this.#timeoutMs),
      ),
    )
    const batches: FingerprintBatch[] = []
    const unavailable: number[] = []
    let firstError: unknown
    const next = reads.map((read, shard) => {
      if (read.status === 'rejected') {
        unavailable.push(shard)
        firstError ??= read.reason
        return cursors[shard]
      }
      batches.push(...joinChunks(model, read.value.batches))
      return read.value.cursor
    })
    // None read: the store is down, and the caller handles that as before (its own table, logged).
    if (unavailable.length === this.#shards) throw firstError
    if (unavailable.length > 0) this.#warn(model, unavailable, firstError)
    return {
      batches,
      cursor: formatCursor(replica, next, this.#replicas),
      ...(unavailable.length > 0 ? { unavailable } : {}),
    }
  }

  /** Logs shards left out of a read, at most once a minute (a down object fails every read). */
  #warn(model: string, shards: number[], error: unknown): void {
    const now = Date.now()
    if (now - this.#warnedAt < 60_000) return
    this.#warnedAt = now
    console.error(
      JSON.stringify({
        event: 'ai_guard_fingerprint_shards_unavailable',
        model,
        shards,
        of: this.#shards,
        error: error instanceof Error ? error.message : String(error),
      }),
    )
  }
}

/**
 * The name of one object: column 0 of row 0 is the unsharded log's, and row 0 keeps the names of the
 * log sharded without replicas, so stored batches stay read when either is added.
 */
function objectName(model: string, shard: number, replica: number): string {
  if (replica > 0) return `model:${model}#${shard}.${replica}`
  return shard === 0 ? `model:${model}` : `model:${model}#${shard}`
}

/**
 * A cursor's row and per-column sequence numbers (`undefined` where there is none: a backfill). The
 * cursor is `row:seq,seq,…` with replicas, `seq,seq,…` without (one number: the unsharded log's). A
 * reader with no cursor, or one of a row that no longer exists, starts on a row drawn at random: the
 * isolates spread over the rows.
 */
function parseCursor(
  cursor: string | undefined,
  shards: number,
  replicas = 1,
): { replica: number; seqs: (number | undefined)[] } {
  let text = cursor ?? ''
  let replica = 0
  const colon = text.indexOf(':')
  if (colon >= 0) {
    replica = Number(text.slice(0, colon))
    text = text.slice(colon + 1)
  }
  if (cursor === undefined || !Number.isInteger(replica) || replica < 0 || replica >= replicas) {
    return {
      replica: Math.floor(Math.random() * replicas),
      seqs: new Array<undefined>(shards).fill(undefined),
    }
  }
  const parts = text.split(',')
  const seqs = Array.from({ length: shards }, (_, shard) => {
    const part = parts[shard]
    if (part === undefined || part === '') return undefined
    const value = Number(part)
    return Number.isInteger(value) && value >= 0 ? value : undefined
  })
  return { replica, seqs }
}

function formatCursor(replica: number, seqs: (number | undefined)[], replicas: number): string {
  const list = seqs.map((c) => (c === undefined ? '' : String(c))).join(',')
  return replicas === 1 ? list : `${replica}:${list}`
}

/** Rejects when `promise` takes longer than `ms`: a slow object must not hold every answer. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`fingerprint log read took over ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** FNV-1a of a string's UTF-16 units: a stable spread of tenants over shards (not a secret). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}
