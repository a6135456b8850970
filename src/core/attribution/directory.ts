/**
 * @module Tenant directories: which tenants own a canary tag, kept where every isolate can read it.
 *
 * Why: a canary carries a tenant tag, not a tenant name (names do not fit in 29 characters, and a
 * name in the prompt would itself be a leak). A leak is usually caught in another isolate than the
 * one that minted the leaked canary — another request, often another machine — so the tag → tenant
 * map must be shared and durable (D1), or attribution silently fails at exactly the moment it matters.
 * And a tag is a hash: two tenants can share one (see src/core/canary/token.ts for the odds), so a
 * directory answers every owner of a tag and never picks one.
 *
 * Keys are namespaced by the canary key's fingerprint (`<fingerprint>:<tag>`, built by
 * {@link TenantAttribution}): the same tag means different tenants under different secrets.
 */

/**
 * Where tag → tenant ownership is kept. `tag` is the namespaced tag (`<key fingerprint>:<tenant tag>`),
 * as {@link TenantAttribution} builds it.
 *
 * @example
 * const directory: TenantDirectory = new D1TenantDirectory(env.QUARANTINE_DB)
 * await directory.remember('3f9c0a7b12e4d5c6:0a1b2c3d4e', 'acme')
 * await directory.resolve('3f9c0a7b12e4d5c6:0a1b2c3d4e') // ['acme']
 */
export interface TenantDirectory {
  /** Records that `tenant` owns `tag` (idempotent; called once per tenant per isolate, off the hot path). */
  remember(tag: string, tenant: string): Promise<void>
  /** Every tenant known to own `tag` (more than one means a tag collision: report all, never pick one). */
  resolve(tag: string): Promise<string[]>
}

/** Options of {@link MemoryTenantDirectory}. */
export interface MemoryTenantDirectoryOptions {
  /** (tag, tenant) pairs kept; the least recently used tag goes first. @default 50_000 */
  capacity?: number
}

/**
 * An in-memory directory, per isolate: a bounded LRU (about 100 bytes a pair, so 5 MB at the
 * default). It only attributes leaks caught in the isolate that minted the canary; use
 * {@link D1TenantDirectory} where requests spread over isolates (every deployed Worker).
 *
 * @example
 * const directory = new MemoryTenantDirectory({ capacity: 10_000 })
 */
export class MemoryTenantDirectory implements TenantDirectory {
  readonly #owners = new Map<string, string[]>()
  readonly #capacity: number
  #pairs = 0

  constructor(options: MemoryTenantDirectoryOptions = {}) {
    const capacity = options.capacity ?? 50_000
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new Error('option "capacity" must be a positive integer')
    }
    this.#capacity = capacity
  }

  async remember(tag: string, tenant: string): Promise<void> {
    const owners = this.#owners.get(tag) ?? []
    this.#owners.delete(tag) // re-inserted: most recently used
    if (!owners.includes(tenant)) {
      owners.push(tenant)
      this.#pairs++
    }
    this.#owners.set(tag, owners)
    while (this.#pairs > this.#capacity) {
      const oldest = this.#owners.keys().next()
      if (oldest.done) break
      this.#pairs -= this.#owners.get(oldest.value)?.length ?? 0
      this.#owners.delete(oldest.value)
    }
  }

  async resolve(tag: string): Promise<string[]> {
    const owners = this.#owners.get(tag)
    if (!owners) return []
    this.#owners.delete(tag)
    this.#owners.set(tag, owners)
    return [...owners].sort()
  }

  /** (tag, tenant) pairs held now. */
  get size(): number {
    return this.#pairs
  }
}

let isolateDirectory: MemoryTenantDirectory | undefined

/**
 * The isolate's shared in-memory directory: the default of every guard without a durable one, so a
 * leak crosses guards in one isolate as easily as it crosses tenants.
 *
 * @example
 * const directory = options.canary?.tenantDirectory ?? isolateTenantDirectory()
 */
export function isolateTenantDirectory(): MemoryTenantDirectory {
  isolateDirectory ??= new MemoryTenantDirectory()
  return isolateDirectory
}

/** Owners returned for one tag, at most: a real collision has two or three; more is a fault. */
const MAX_OWNERS = 100

/**
 * The directory in D1 (schema: `migrations/0003_tenant_tags.sql`): one row per (tag, tenant), written
 * once per tenant per isolate with `INSERT OR IGNORE`, read only when a foreign canary is found. Rows
 * are a few dozen bytes and one per tenant per key, so they are kept (no retention): a tenant whose
 * prompt sat in the engine's cache for months is still attributable.
 *
 * @example
 * const directory = new D1TenantDirectory(env.QUARANTINE_DB)
 */
export class D1TenantDirectory implements TenantDirectory {
  readonly #db: D1Database
  readonly #now: () => number

  constructor(db: D1Database, options: { now?: () => number } = {}) {
    if (!db || typeof db.prepare !== 'function')
      throw new Error('option "db" must be a D1 database')
    this.#db = db
    this.#now = options.now ?? (() => Date.now())
  }

  async remember(tag: string, tenant: string): Promise<void> {
    await this.#db
      .prepare('INSERT OR IGNORE INTO tenant_tags (tag, tenant, at) VALUES (?, ?, ?)')
      .bind(tag, tenant, this.#now())
      .run()
  }

  async resolve(tag: string): Promise<string[]> {
    const { results } = await this.#db
      .prepare(`SELECT tenant FROM tenant_tags WHERE tag = ? ORDER BY tenant LIMIT ${MAX_OWNERS}`)
      .bind(tag)
      .all<{ tenant: string }>()
    return results.map((row) => row.tenant)
  }
}
