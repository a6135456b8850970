/**
 * @module Attribution: whose prompt a leaked canary came from, via a shared tag → tenant directory.
 *
 * Why: the tenant tag in a canary is 40 bits of an HMAC, not a name; the guard records each tenant's
 * tag once per isolate in a {@link TenantDirectory} (durable in the Worker) and, when a foreign canary
 * turns up, asks it for every owner of the tag. Attribution is evidence for a reviewer, never a
 * condition of safety: the answer is withheld by the verdict alone, so a failing directory never
 * blocks or fails a request — remembering is best-effort and logged, and a lookup that fails leaves
 * the tag's tenant unknown while the incident is still recorded.
 */
import { type CanaryKey, keyFingerprint, tenantTag } from '../canary/token'
import type { QuarantineRecord } from '../vocabulary/quarantine'
import type { TenantDirectory } from './directory'

/** The canary findings of a quarantine record. */
type CanaryFindings = QuarantineRecord['canaries']

/** Whom a set of leaked tags points at. */
export interface Sources {
  /** Every tenant any tag resolves to, deduplicated, in the order of the tags (owners sorted). */
  tenants: string[]
  /** Tags owned by more than one tenant: all of them are in `tenants`, and any may be the source. */
  ambiguous: string[]
  /** Tags no tenant is known for: never remembered, a v1 tag (24 bits), or the lookup failed. */
  unknown: string[]
  /** The tags whose lookup failed or timed out (also in `unknown`). */
  failed: string[]
  /** Each tag's owners (empty when unknown). */
  owners: Record<string, string[]>
}

/** A directory failure, as logged. */
export interface AttributionFailure {
  event: 'ai_guard_attribution_failed'
  op: 'remember' | 'resolve'
  /** The tenant being remembered, or the tag being resolved. */
  subject: string
  error: string
}

/** Options of {@link TenantAttribution}. */
export interface TenantAttributionOptions {
  /** Tenants whose tag this isolate has recorded, kept to skip rewriting it (LRU). @default 10_000 */
  memo?: number
  /** Longest wait for one lookup, ms; past it the tag's tenant is unknown. @default 2_000 */
  timeoutMs?: number
  /** After a failed write, how long before the same tenant is tried again, ms. @default 60_000 */
  retryMs?: number
  /** Clock, ms. @default Date.now */
  now?: () => number
  /** Where failures go. @default one JSON line on console.error */
  onError?: (failure: AttributionFailure) => void
}

/** A v2 tenant tag: 40 bits in hex. Anything else is never looked up. */
const TAG = /^[0-9a-f]{10}$/

interface Remembered {
  written: Promise<void>
  /** Set when the write failed: the time after which it is tried again. */
  retryAt?: number
}

/**
 * Records tenants' tags in a directory and resolves leaked tags to tenants. One per guard; the
 * memo makes `remember` cost one directory write per tenant per isolate.
 *
 * @example
 * const attribution = new TenantAttribution(() => guard.key(), new D1TenantDirectory(env.QUARANTINE_DB))
 * waitUntil(attribution.remember('acme'))          // before the upstream call, not awaited
 * const { tenants, ambiguous } = await attribution.sources(findings.map((f) => f.tenantTag))
 */
export class TenantAttribution {
  readonly directory: TenantDirectory
  readonly #key: () => Promise<CanaryKey>
  readonly #memo = new Map<string, Remembered>()
  readonly #memoSize: number
  readonly #timeoutMs: number
  readonly #retryMs: number
  readonly #now: () => number
  readonly #onError: (failure: AttributionFailure) => void

  constructor(
    key: Promise<CanaryKey> | (() => Promise<CanaryKey>),
    directory: TenantDirectory,
    options: TenantAttributionOptions = {},
  ) {
    if (typeof key === 'function') this.#key = key
    else {
      key.catch(() => {}) // surfaced where it is used, not as an unhandled rejection
      this.#key = () => key
    }
    this.directory = directory
    this.#memoSize = positive(options.memo ?? 10_000, 'memo')
    this.#timeoutMs = positive(options.timeoutMs ?? 2_000, 'timeoutMs')
    this.#retryMs = positive(options.retryMs ?? 60_000, 'retryMs')
    this.#now = options.now ?? (() => Date.now())
    this.#onError = options.onError ?? logFailure
  }

  /** The directory key of a tag: namespaced by the key's fingerprint. */
  async #name(tag: string): Promise<string> {
    return `${await keyFingerprint(await this.#key())}:${tag}`
  }

  /**
   * Records that `tenant` owns its tag. Memoised per isolate (concurrent calls share one write); never
   * rejects: a failure is logged and retried after `retryMs`. Call it before the upstream call and
   * without awaiting it (hand it to `waitUntil`): a prompt can only leak after it was sent, by which
   * time the write has long landed.
   */
  remember(tenant: string): Promise<void> {
    const known = this.#memo.get(tenant)
    if (known && (known.retryAt === undefined || this.#now() < known.retryAt)) {
      this.#memo.delete(tenant) // re-inserted: most recently used
      this.#memo.set(tenant, known)
      return known.written
    }
    const entry: Remembered = { written: Promise.resolve() }
    entry.written = this.#write(tenant).catch((error: unknown) => {
      entry.retryAt = this.#now() + this.#retryMs
      this.#fail('remember', tenant, error)
    })
    this.#memo.delete(tenant)
    this.#memo.set(tenant, entry)
    if (this.#memo.size > this.#memoSize) {
      const oldest = this.#memo.keys().next()
      if (!oldest.done) this.#memo.delete(oldest.value)
    }
    return entry.written
  }

  async #write(tenant: string): Promise<void> {
    const key = await this.#key()
    await this.directory.remember(await this.#name(await tenantTag(key, tenant)), tenant)
  }

  /**
   * Every owner of each leaked tag (undefined entries — findings without a tag — are skipped). A tag
   * with several owners is reported as ambiguous with all of them; a failing or slow directory leaves
   * its tags unknown. Never rejects.
   */
  async sources(tags: readonly (string | undefined)[]): Promise<Sources> {
    const distinct = [...new Set(tags.filter((t): t is string => typeof t === 'string'))]
    const result: Sources = { tenants: [], ambiguous: [], unknown: [], failed: [], owners: {} }
    const found = await Promise.all(distinct.map((tag) => this.#resolve(tag)))
    distinct.forEach((tag, i) => {
      const owners = found[i] ?? 'failed'
      if (owners === 'failed') result.failed.push(tag)
      const list = owners === 'failed' ? [] : owners
      result.owners[tag] = list
      if (list.length === 0) result.unknown.push(tag)
      if (list.length > 1) result.ambiguous.push(tag)
      for (const tenant of list) if (!result.tenants.includes(tenant)) result.tenants.push(tenant)
    })
    return result
  }

  /**
   * A quarantine record's attribution: each foreign finding gets `tenants` (every owner of its tag;
   * empty when unknown) and `sourceTenants` lists them all. Never rejects.
   *
   * @example
   * const { canaries, sourceTenants } = await attribution.attribute(outcome.canaries)
   */
  async attribute(
    canaries: CanaryFindings,
  ): Promise<{ canaries: CanaryFindings; sourceTenants: string[]; sources: Sources }> {
    const foreign = canaries.filter((c) => c.kind === 'foreign').map((c) => c.tenantTag)
    const sources = await this.sources(foreign)
    return {
      canaries: canaries.map((c) =>
        c.kind === 'foreign' && c.tenantTag !== undefined
          ? { ...c, tenants: sources.owners[c.tenantTag] ?? [] }
          : c,
      ),
      sourceTenants: sources.tenants,
      sources,
    }
  }

  async #resolve(tag: string): Promise<string[] | 'failed'> {
    if (!TAG.test(tag)) return []
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      const lookup = this.#name(tag).then((name) => this.directory.resolve(name))
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${this.#timeoutMs} ms`)),
          this.#timeoutMs,
        )
      })
      const owners = await Promise.race([lookup, timeout])
      return [...new Set(owners.filter((o) => typeof o === 'string'))].sort()
    } catch (error) {
      this.#fail('resolve', tag, error)
      return 'failed'
    } finally {
      if (timer !== undefined) clearTimeout(timer)
    }
  }

  #fail(op: AttributionFailure['op'], subject: string, error: unknown): void {
    try {
      this.#onError({
        event: 'ai_guard_attribution_failed',
        op,
        subject,
        error: error instanceof Error ? error.message : String(error),
      })
    } catch {
      // A failing log hook must not turn a best-effort write into a failed request.
    }
  }
}

function logFailure(failure: AttributionFailure): void {
  console.error(JSON.stringify(failure))
}

function positive(value: number, name: string): number {
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new Error(`option "${name}" must be a positive number`)
  }
  return value
}
