/**
 * @module Where console sessions live between requests: a record per session that the console checks
 * on every request and logout deletes, so an ended session is ended in every isolate. In D1 when the
 * Worker has one (`QUARANTINE_DB`), else in the isolate's memory (then a logout reaches only the
 * isolate it was made in, as a single-isolate deployment without D1 is).
 */
import type { Env } from '../env'

/** The session records: `id` is a session's digest (src/worker/admin/auth.ts), never its cookie. */
interface SessionStore {
  add(id: string, expires: number, now: number): Promise<void>
  /** Whether session `id` is recorded and not expired at `now`. */
  live(id: string, now: number): Promise<boolean>
  revoke(id: string): Promise<void>
}

/** Sessions in D1 (schema: migrations/0006_admin_sessions.sql), shared by every isolate. */
class D1SessionStore implements SessionStore {
  readonly #db: D1Database

  constructor(db: D1Database) {
    this.#db = db
  }

  async add(id: string, expires: number, now: number): Promise<void> {
    await this.#db.batch([
      this.#db.prepare('DELETE FROM admin_sessions WHERE expires <= ?').bind(now),
      this.#db.prepare('INSERT INTO admin_sessions (id, expires) VALUES (?, ?)').bind(id, expires),
    ])
  }

  async live(id: string, now: number): Promise<boolean> {
    const row = await this.#db
      .prepare('SELECT 1 AS live FROM admin_sessions WHERE id = ? AND expires > ?')
      .bind(id, now)
      .first<{ live: number }>()
    return row !== null
  }

  async revoke(id: string): Promise<void> {
    await this.#db.prepare('DELETE FROM admin_sessions WHERE id = ?').bind(id).run()
  }
}

/** Most sessions one isolate keeps without D1; the oldest login goes first. */
const MEMORY_SESSIONS = 1000

/** Sessions in this isolate's memory. */
class MemorySessionStore implements SessionStore {
  readonly #expires = new Map<string, number>()

  async add(id: string, expires: number): Promise<void> {
    this.#expires.set(id, expires)
    if (this.#expires.size > MEMORY_SESSIONS) {
      const oldest = this.#expires.keys().next().value
      if (oldest !== undefined) this.#expires.delete(oldest)
    }
  }

  async live(id: string, now: number): Promise<boolean> {
    return (this.#expires.get(id) ?? 0) > now
  }

  async revoke(id: string): Promise<void> {
    this.#expires.delete(id)
  }
}

const stores = new WeakMap<Env, SessionStore>()

/**
 * The session store of these bindings: D1 when bound, else this isolate's memory.
 *
 * @example
 * if (!(await sessionStore(c.env).live(session.id, now))) return unauthorized()
 */
export function sessionStore(env: Env): SessionStore {
  let store = stores.get(env)
  if (!store) {
    store = env.QUARANTINE_DB ? new D1SessionStore(env.QUARANTINE_DB) : new MemorySessionStore()
    stores.set(env, store)
  }
  return store
}
