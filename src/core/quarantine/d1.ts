/**
 * @module The D1 quarantine store for the Worker: durable, queryable, withheld text encrypted at rest.
 * Every value stays under D1's 2,000,000-byte limit whatever the answer: withheld ciphertext over
 * 1 MiB goes in parts (`migrations/0005_incident_withheld_parts.sql`).
 */
import { assertSecret, MIN_SECRET_BYTES } from '../crypto/secret'
import type {
  QuarantineQuery,
  QuarantineRecord,
  QuarantineStore,
  QuarantineSummary,
} from '../vocabulary/quarantine'
import { type IncidentRow, listedSummary, readSummary, readWithheld } from './d1-row'
import { QUARANTINE_KEY_MESSAGE, type SealingKey, seal, sealingKeyring, unseal } from './seal'
import { isKeyId, UnreadableIncidentError } from './unreadable'

const QUARANTINE_PREVIOUS_MESSAGE = `option "QUARANTINE_KEY_PREVIOUS" must be at least ${MIN_SECRET_BYTES} bytes`

/** Options of {@link D1QuarantineStore}. */
export interface D1QuarantineOptions {
  /** Secret (≥ 32 bytes) the withheld text is encrypted under. */
  key: string
  /**
   * Secrets records were sealed under before a rotation (each ≥ 32 bytes): read, never written with.
   * Records name their key, so each is read under the one that sealed it.
   */
  previousKeys?: readonly string[]
  /** Records older than this are deleted. @default 30 */
  retentionDays?: number
  /** Clock, ms. @default Date.now */
  now?: () => number
}

/**
 * Most bytes of ciphertext in one value: 1 MiB, half D1's 2,000,000-byte row limit
 * (src/worker/platform-limits.ts, `SAFE_VALUE_BYTES`; not imported, the store takes no Worker code).
 */
const WITHHELD_PART_BYTES = 1024 * 1024

/** The `reasons` column where it is a JSON array, else one `incident_unreadable` reason. */
const READABLE_REASONS = `CASE WHEN json_valid(incidents.reasons) AND json_type(incidents.reasons) = 'array'
  THEN incidents.reasons ELSE '["incident_unreadable"]' END`

const SUMMARY_COLUMNS =
  'id, at, tenant, model, request_id, reasons, figures, canaries, source_tenants, count, last_at, key_id, observed'

/**
 * Quarantine records in D1 (schema: `migrations/0001_incidents.sql`, `0002_incident_counts.sql`,
 * `0008_incident_observed.sql`).
 *
 * @example
 * const store = new D1QuarantineStore(env.QUARANTINE_DB, { key: env.QUARANTINE_KEY })
 */
export class D1QuarantineStore implements QuarantineStore {
  readonly #db: D1Database
  /** The current key first, then the previous ones. */
  readonly #ring: Promise<SealingKey[]>
  readonly #retentionMs: number
  readonly #now: () => number

  constructor(db: D1Database, options: D1QuarantineOptions) {
    // Checked here, at start-up: found only at the first quarantine, the record would be lost.
    assertSecret('QUARANTINE_KEY', options.key, QUARANTINE_KEY_MESSAGE)
    for (const previous of options.previousKeys ?? []) {
      assertSecret('QUARANTINE_KEY_PREVIOUS', previous, QUARANTINE_PREVIOUS_MESSAGE)
    }
    const days = options.retentionDays ?? 30
    if (!(days > 0)) throw new Error('option "retentionDays" must be a positive number')
    this.#db = db
    this.#ring = sealingKeyring([options.key, ...(options.previousKeys ?? [])])
    this.#ring.catch(() => {}) // surfaced on first use, not as an unhandled rejection
    this.#retentionMs = days * 86_400_000
    this.#now = options.now ?? (() => Date.now())
  }

  async put(record: QuarantineRecord): Promise<void> {
    const [current] = await this.#ring
    const sealed = await seal(current!.key, JSON.stringify(record.withheld), record.id)
    // Over a part's size the ciphertext goes to incident_withheld and the row keeps an empty BLOB
    // (AES-GCM output is never empty: the tag alone is 16 bytes).
    const parts = sealed.data.byteLength > WITHHELD_PART_BYTES ? split(sealed.data) : []
    const expired = this.#now() - this.#retentionMs
    await this.#db.batch([
      this.#db
        .prepare(
          `INSERT INTO incidents (id, at, tenant, model, request_id, reasons, reason_tags, figures,
             canaries, source_tenants, withheld_iv, withheld, count, last_at, key_id, observed)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .bind(
          record.id,
          record.at,
          record.tenant,
          record.model,
          record.requestId,
          JSON.stringify(record.reasons),
          `,${record.reasons.join(',')},`,
          JSON.stringify(record.figures),
          JSON.stringify(record.canaries),
          JSON.stringify(record.sourceTenants),
          sealed.iv,
          parts.length > 0 ? new Uint8Array(0) : sealed.data,
          record.count ?? 1,
          record.lastAt ?? null,
          current!.id,
          record.observed ? 1 : 0,
        ),
      ...parts.map((data, part) =>
        this.#db
          .prepare('INSERT INTO incident_withheld (id, part, data) VALUES (?, ?, ?)')
          .bind(record.id, part, data),
      ),
      // Retention is enforced on write: expired records go in the same batch, by the `at` index.
      this.#db.prepare('DELETE FROM incidents WHERE at < ?').bind(expired),
    ])
    // Then the parts of records gone, apart: a database not yet migrated to 0005 has no parts table,
    // and that must not cost the ordinary record (which needs none) its place.
    await this.#db
      .prepare('DELETE FROM incident_withheld WHERE id NOT IN (SELECT id FROM incidents)')
      .run()
      .catch((error: unknown) => {
        if (!String(error).includes('no such table')) throw error
      })
  }

  async get(id: string): Promise<QuarantineRecord | undefined> {
    const row = await this.#db
      .prepare(`SELECT ${SUMMARY_COLUMNS}, withheld_iv, withheld FROM incidents WHERE id = ?`)
      .bind(id)
      .first<IncidentRow>()
    if (!row) return undefined
    // Checked before any decryption: a row that cannot be shown is refused by name, whatever its text.
    const summary = readSummary(row)
    if (!row.withheld_iv || !row.withheld) return undefined
    let data = new Uint8Array(row.withheld)
    if (data.byteLength === 0) {
      const { results } = await this.#db
        .prepare('SELECT data FROM incident_withheld WHERE id = ? ORDER BY part')
        .bind(id)
        .all<{ data: number[] | ArrayBuffer }>()
      data = join(results.map((r) => new Uint8Array(r.data)))
    }
    const plain = await this.#open(row, data)
    return { ...summary, withheld: readWithheld(row.id, plain) }
  }

  /**
   * The withheld text of `row`, under the key its id names and no other. A record without an id
   * predates them and is tried under each key. Anything else is refused by name, never guessed at: an
   * id the keyring does not hold, one of a form this store never writes, or text that does not decrypt
   * (each an {@link UnreadableIncidentError}, so a console can tell bad stored data from a failure).
   */
  async #open(row: IncidentRow, data: Uint8Array): Promise<string> {
    const ring = await this.#ring
    const iv = new Uint8Array(row.withheld_iv!)
    if (row.key_id !== null && row.key_id !== undefined) {
      if (!isKeyId(row.key_id)) throw new UnreadableIncidentError(row.id, 'not_authentic')
      const sealer = ring.find((k) => k.id === row.key_id)
      if (!sealer) throw new UnreadableIncidentError(row.id, 'key_not_held', { keyId: row.key_id })
      try {
        return await unseal(sealer.key, iv, data, row.id)
      } catch (error) {
        throw new UnreadableIncidentError(row.id, 'not_authentic', {
          keyId: row.key_id,
          cause: error,
        })
      }
    }
    let failure: unknown
    for (const { key } of ring) {
      try {
        return await unseal(key, iv, data, row.id)
      } catch (error) {
        failure = error
      }
    }
    throw new UnreadableIncidentError(row.id, 'no_key_opens', { cause: failure })
  }

  async list(query: QuarantineQuery = {}): Promise<QuarantineSummary[]> {
    const { where, args } = filters(query)
    const limit = Math.min(Math.max(1, query.limit ?? 100), 1000)
    const sql = `SELECT ${SUMMARY_COLUMNS} FROM incidents ${where} ORDER BY at DESC, id LIMIT ${limit}`
    const { results } = await this.#db
      .prepare(sql)
      .bind(...args)
      .all<IncidentRow>()
    return results.map(listedSummary)
  }

  /**
   * Incidents per reason: an aggregated record counts `count` times. A record whose `reasons` is not a
   * JSON array (an edited row) counts under `incident_unreadable`: one such row must neither fail the
   * query (json_each rejects malformed JSON) nor vanish from the totals.
   */
  async counts(
    query: Pick<QuarantineQuery, 'since' | 'until' | 'tenant'> = {},
  ): Promise<Record<string, number>> {
    const { where, args } = filters(query)
    const { results } = await this.#db
      .prepare(
        `SELECT r.value AS reason, SUM(incidents.count) AS n
         FROM incidents, json_each(${READABLE_REASONS}) AS r ${where} GROUP BY r.value`,
      )
      .bind(...args)
      .all<{ reason: string; n: number }>()
    return Object.fromEntries(results.map((r) => [r.reason, r.n]))
  }

  /**
   * One UPDATE of two integers, so folding an incident in costs no sealing and no text. A record past
   * retention counts as gone even before the next write deletes it, so an old record is never revived.
   */
  async increment(id: string, at: number): Promise<boolean> {
    const result = await this.#db
      .prepare(
        `UPDATE incidents SET count = count + 1, last_at = MAX(COALESCE(last_at, at), ?)
         WHERE id = ? AND at >= ?`,
      )
      .bind(at, id, this.#now() - this.#retentionMs)
      .run()
    return result.meta.changes > 0
  }
}

/** Ciphertext in parts of at most {@link WITHHELD_PART_BYTES}. */
function split(data: Uint8Array): Uint8Array[] {
  const parts: Uint8Array[] = []
  for (let from = 0; from < data.byteLength; from += WITHHELD_PART_BYTES) {
    parts.push(data.slice(from, from + WITHHELD_PART_BYTES))
  }
  return parts
}

function join(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

/** The WHERE clause (or '') and its arguments for a query's filters. */
function filters(query: QuarantineQuery): { where: string; args: (string | number)[] } {
  const where: string[] = []
  const args: (string | number)[] = []
  const filter = (clause: string, value: string | number) => {
    where.push(clause)
    args.push(value)
  }
  if (query.since !== undefined) filter('at >= ?', query.since)
  if (query.until !== undefined) filter('at <= ?', query.until)
  if (query.tenant !== undefined) filter('tenant = ?', query.tenant)
  if (query.reason !== undefined) {
    // Reasons are stored as ',a,b,': an exact tag match, with LIKE's wildcards escaped.
    const escaped = query.reason.replace(/[\\%_]/g, (c) => `\\${c}`)
    filter("reason_tags LIKE ? ESCAPE '\\'", `%,${escaped},%`)
  }
  if (query.observed !== undefined) filter('observed = ?', query.observed ? 1 : 0)
  return { where: where.length ? `WHERE ${where.join(' AND ')}` : '', args }
}
