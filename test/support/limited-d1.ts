/**
 * @module A D1 binding that refuses what production D1 refuses, for tests: local D1 accepts rows of
 * 8 MB where production stops at 2,000,000 bytes. Test code, so it lives here: no Worker code wraps
 * its D1 binding. The statement, value and row limits are the Durable Objects' SQLite limits too, and
 * are checked by `limitedSql` (src/worker/platform-limits.ts, where the figures are stated), the
 * wrapper the FingerprintLog runs over in production; only the per-invocation query count is D1's own.
 */
import { limitedSql } from '../../src/worker/platform-limits'

/** D1 queries per Worker invocation (paid plan; a batch counts each of its statements). */
const MAX_D1_QUERIES_PER_INVOCATION = 1_000

/** What production raises over a limit, with D1's `D1_ERROR:` prefix. */
class PlatformLimitError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PlatformLimitError'
  }
}

/**
 * A `storage.sql` that runs nothing, behind `limitedSql`: its `exec` throws exactly when a statement
 * with these bindings is over a limit.
 */
const statementLimits = limitedSql({ exec: () => undefined } as unknown as SqlStorage)

/** Throws, as production D1 does, when a statement with these bindings is over a limit. */
function checkStatement(query: string, bindings: readonly unknown[]): void {
  try {
    statementLimits.exec(query, ...bindings)
  } catch (error) {
    throw new PlatformLimitError(`D1_ERROR: ${error instanceof Error ? error.message : error}`)
  }
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
            checkStatement(query, values)
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
          checkStatement(query, [])
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
