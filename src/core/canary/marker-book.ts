/**
 * @module The prefix markers this isolate has minted, per key, indexed so that a piece of another
 * tenant's marker in an answer is found without the `cnry_` in front of it — a stale page quoted from
 * inside a marker is a leak of that tenant's prompt start, evidence like a foreign canary.
 *
 * Why only minted ones: a piece cannot be verified (the MAC covers the whole token), so the only
 * sound evidence is a piece of a marker the guard can name — one it recomputed, `prefixMarker(key,
 * tenant)`, for a tenant it served. A piece of another request's canary, or of a marker minted in
 * another isolate, matches nothing here and is treated as nothing.
 *
 * Why {@link FOREIGN_ANCHOR} body characters: a marker's body is 24 characters of an HMAC (5 bits each),
 * independent of every text a model writes, so a given 12-character run of an answer equals a given
 * anchor with probability 32^-12 (8.7e-19). Four anchors a marker, 10^4 markers (the book's bound), and
 * an answer of 4·10^6 characters (a 1M-token answer) give 4 · 10^4 · 4·10^6 · 8.7e-19 = 1.4e-7 false
 * findings per answer, at the extreme; a 4k-character answer 1.4e-10. The `cnry_` prefix is not counted:
 * every marker shares it. Anchors start every {@link ANCHOR_STRIDE} characters of the body (0, 4, 8, 12),
 * so every piece of 15 body characters or more holds one whole; a piece of 12 to 14 is found when it
 * happens to. Memory: four entries a tenant, about 250 bytes, 2.5 MB at the bound.
 */

/** Body characters of another tenant's marker that make a piece evidence. */
export const FOREIGN_ANCHOR = 12

/** Anchors start every this many body characters: pieces of 12 + 4 − 1 = 15 always hold one. */
const ANCHOR_STRIDE = 4

/** Where a marker's body starts (after `cnry_`). */
const BODY_AT = 5

/** A marker in the book: whose it is, and the tag its findings carry. */
export interface BookEntry {
  tenant: string
  /** The marker's tenant tag (hex), as a foreign canary's finding carries it. */
  tenantTag: string
  marker: string
}

/** The markers of one key, bounded (least recently minted out first). */
export class MarkerBook {
  readonly #anchors = new Map<string, BookEntry>()
  readonly #tenants = new Map<string, BookEntry>()
  readonly #capacity: number

  constructor(capacity: number) {
    this.#capacity = capacity
  }

  /**
   * Records a tenant's marker (lowercase) and tag.
   *
   * @example
   * book.add('acme', marker, await tenantTag(key, 'acme'))
   */
  add(tenant: string, marker: string, tenantTag: string): void {
    this.remove(tenant)
    const entry: BookEntry = { tenant, tenantTag, marker: marker.toLowerCase() }
    this.#tenants.set(tenant, entry)
    for (const anchor of anchorsOf(entry.marker)) this.#anchors.set(anchor, entry)
    if (this.#tenants.size > this.#capacity) {
      const oldest = this.#tenants.keys().next().value
      if (oldest !== undefined) this.remove(oldest)
    }
  }

  /**
   * Marks a tenant's marker as recently used; false when the book does not hold it.
   *
   * @example
   * if (!book.touch('acme')) book.add('acme', marker, tag)
   */
  touch(tenant: string): boolean {
    const entry = this.#tenants.get(tenant)
    if (!entry) return false
    this.#tenants.delete(tenant)
    this.#tenants.set(tenant, entry)
    return true
  }

  /**
   * Forgets a tenant's marker.
   *
   * @example
   * book.remove('acme')
   */
  remove(tenant: string): void {
    const entry = this.#tenants.get(tenant)
    if (!entry) return
    this.#tenants.delete(tenant)
    for (const anchor of anchorsOf(entry.marker)) {
      if (this.#anchors.get(anchor) === entry) this.#anchors.delete(anchor)
    }
  }

  /**
   * The marker one of whose anchors `gram` (12 lowercase body characters) is, if any.
   *
   * @example
   * const entry = book.find(run.slice(-FOREIGN_ANCHOR))
   */
  find(gram: string): BookEntry | undefined {
    return this.#anchors.get(gram)
  }

  /** Markers held. */
  get size(): number {
    return this.#tenants.size
  }
}

function anchorsOf(marker: string): string[] {
  const out: string[] = []
  for (let at = BODY_AT; at + FOREIGN_ANCHOR <= marker.length; at += ANCHOR_STRIDE) {
    out.push(marker.slice(at, at + FOREIGN_ANCHOR))
  }
  return out
}
