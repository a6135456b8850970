/**
 * @module The storage limits of Cloudflare's platform that local workerd does not enforce (it stores
 * 8 MB BLOBs where production refuses 2 MB), in one place, and wrappers around a Durable Object's
 * `storage.sql` and a D1 binding that refuse exactly what production refuses, so that a local test
 * fails where a deployed Worker would.
 *
 * Figures: developers.cloudflare.com/durable-objects/platform/limits (SQLite-backed objects) and
 * developers.cloudflare.com/d1/platform/limits (paid plan).
 */

/**
 * Largest string, BLOB or row, bytes. D1 states 2,000,000 bytes; Durable Objects' SQLite states "2 MB":
 * the smaller reading is taken for both, so nothing accepted here is refused by either.
 */
export const MAX_VALUE_BYTES = 2_000_000
/** Largest SQL statement, bytes (D1 and Durable Objects: 100 KB). */
const MAX_STATEMENT_BYTES = 100_000
/** Bound parameters per query (D1 and Durable Objects). */
const MAX_BOUND_PARAMETERS = 100
/** D1 queries per Worker invocation (paid plan; a batch counts each of its statements). */
const MAX_D1_QUERIES_PER_INVOCATION = 1_000
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
export function checkStatement(query: string, bindings: readonly unknown[], prefix = ''): void {
  const length = encoder.encode(query).byteLength
  if (length > MAX_STATEMENT_BYTES) {
    throw new PlatformLimitError(
      `${prefix}statement too long: ${length} bytes > ${MAX_STATEMENT_BYTES}: SQLITE_TOOBIG`,
    )
  }
  if (bindings.length > MAX_BOUND_PARAMETERS) {
    throw new PlatformLimitError(
      `${prefix}too many SQL variables: ${bindings.length} > ${MAX_BOUND_PARAMETERS}: SQLITE_RANGE`,
    )
  }
  let row = 0
  for (const value of bindings) {
    const bytes = valueBytes(value)
    row += bytes
    if (bytes > MAX_VALUE_BYTES) {
      throw new PlatformLimitError(
        `${prefix}string or blob too big: ${bytes} bytes > ${MAX_VALUE_BYTES}: SQLITE_TOOBIG`,
      )
    }
  }
  // The bound values of one statement stand for its row: a row holds at least what was bound to it.
  if (row > MAX_VALUE_BYTES) {
    throw new PlatformLimitError(
      `${prefix}row too big: ${row} bytes bound > ${MAX_VALUE_BYTES}: SQLITE_TOOBIG`,
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

/**
 * A D1 binding that refuses what production D1 refuses: statements, values and rows over the limits,
 * and more than {@link MAX_D1_QUERIES_PER_INVOCATION} queries over its life (make one per invocation,
 * as a test of one request would). Errors carry D1's `D1_ERROR:` prefix.
 *
 * @example
 * const store = new D1QuarantineStore(limitedD1(env.QUARANTINE_DB), { key })
 */
export function limitedD1(db: D1Database): D1Database & { queries(): number } {
  let queries = 0
  const count = (n: number) => {
    queries += n
    if (queries > MAX_D1_QUERIES_PER_INVOCATION) {
      throw new PlatformLimitError(
        `D1_ERROR: too many queries in one invocation: ${queries} > ${MAX_D1_QUERIES_PER_INVOCATION}`,
      )
    }
  }
  // The binding's batch() takes its own statements, not proxies: each proxy maps to its original.
  const originals = new WeakMap<D1PreparedStatement, D1PreparedStatement>()
  const wrap = (statement: D1PreparedStatement, query: string): D1PreparedStatement => {
    const wrapped = new Proxy(statement, {
      get(target, property) {
        if (property === 'bind') {
          return (...values: unknown[]) => {
            checkStatement(query, values, 'D1_ERROR: ')
            return wrap(target.bind(...values), query)
          }
        }
        const value: unknown = Reflect.get(target, property, target)
        if (typeof value !== 'function') return value
        const run = ['first', 'run', 'all', 'raw'].includes(String(property))
        return (...args: unknown[]) => {
          if (run) count(1)
          return (value as (...a: unknown[]) => unknown).apply(target, args)
        }
      },
    })
    originals.set(wrapped, statement)
    return wrapped
  }
  const limited = new Proxy(db, {
    get(target, property) {
      if (property === 'queries') return () => queries
      if (property === 'prepare') {
        return (query: string) => {
          checkStatement(query, [], 'D1_ERROR: ')
          return wrap(target.prepare(query), query)
        }
      }
      if (property === 'batch') {
        return (statements: D1PreparedStatement[]) => {
          count(statements.length)
          return target.batch(statements.map((s) => originals.get(s) ?? s))
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return limited as D1Database & { queries(): number }
}
