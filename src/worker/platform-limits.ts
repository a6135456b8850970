/**
 * @module The storage limits of Cloudflare's platform that local workerd does not enforce (it stores
 * 8 MB BLOBs where production refuses 2 MB), in one place, and a wrapper around a Durable Object's
 * `storage.sql` that refuses exactly what production refuses, so that a local test fails where a
 * deployed Worker would. The tests' D1 wrapper (test/support/limited-d1.ts) checks its statements
 * through it: D1 has the same statement, value and row limits.
 *
 * Figures: developers.cloudflare.com/durable-objects/platform/limits (SQLite-backed objects) and
 * developers.cloudflare.com/d1/platform/limits (paid plan).
 */

/**
 * Largest string, BLOB or row, bytes. D1 states 2,000,000 bytes; Durable Objects' SQLite states "2 MB":
 * the smaller reading is taken for both, so nothing accepted here is refused by either.
 */
const MAX_VALUE_BYTES = 2_000_000
/** Largest SQL statement, bytes (D1 and Durable Objects: 100 KB). */
const MAX_STATEMENT_BYTES = 100_000
/** Bound parameters per query (D1 and Durable Objects). */
const MAX_BOUND_PARAMETERS = 100
/**
 * The bound this project keeps every stored value under, by construction (chunked BLOBs): half the
 * limit, so a row's other columns and SQLite's own overhead never bring it near.
 */
export const SAFE_VALUE_BYTES = 1024 * 1024

const encoder = new TextEncoder()

/** Bytes of one bound value as SQLite stores it (strings as UTF-8). */
function valueBytes(value: unknown): number {
  if (typeof value === 'string') return encoder.encode(value).byteLength
  if (value instanceof ArrayBuffer) return value.byteLength
  if (ArrayBuffer.isView(value)) return value.byteLength
  if (Array.isArray(value)) return value.length // D1 takes BLOBs as arrays of bytes too
  return 8
}

/**
 * The error production raises for a value or row over the limit (SQLite's SQLITE_TOOBIG, as D1 and
 * Durable Objects report it), or for a statement or parameter list over its limit.
 */
class PlatformLimitError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PlatformLimitError'
  }
}

/** Throws as production does when one statement with these bindings is over a limit. */
function checkStatement(query: string, bindings: readonly unknown[]): void {
  const length = encoder.encode(query).byteLength
  if (length > MAX_STATEMENT_BYTES) {
    throw new PlatformLimitError(
      `statement too long: ${length} bytes > ${MAX_STATEMENT_BYTES}: SQLITE_TOOBIG`,
    )
  }
  if (bindings.length > MAX_BOUND_PARAMETERS) {
    throw new PlatformLimitError(
      `too many SQL variables: ${bindings.length} > ${MAX_BOUND_PARAMETERS}: SQLITE_RANGE`,
    )
  }
  let row = 0
  for (const value of bindings) {
    const bytes = valueBytes(value)
    row += bytes
    if (bytes > MAX_VALUE_BYTES) {
      throw new PlatformLimitError(
        `string or blob too big: ${bytes} bytes > ${MAX_VALUE_BYTES}: SQLITE_TOOBIG`,
      )
    }
  }
  // The bound values of one statement stand for its row: a row holds at least what was bound to it.
  if (row > MAX_VALUE_BYTES) {
    throw new PlatformLimitError(
      `row too big: ${row} bytes bound > ${MAX_VALUE_BYTES}: SQLITE_TOOBIG`,
    )
  }
}

/**
 * A Durable Object's `storage.sql` that refuses what production refuses: a statement, a value or a row
 * over the limits throws before it reaches SQLite. Used by the `FingerprintLog` itself (in production
 * it only turns SQLite's refusal into a clearer one), so every local test runs under production's rules.
 *
 * @example
 * const sql = limitedSql(this.ctx.storage.sql)
 */
export function limitedSql(sql: SqlStorage): SqlStorage {
  return new Proxy(sql, {
    get(target, property) {
      if (property === 'exec') {
        return <T extends Record<string, SqlStorageValue>>(
          query: string,
          ...bindings: unknown[]
        ) => {
          checkStatement(query, bindings)
          return target.exec<T>(query, ...bindings)
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
