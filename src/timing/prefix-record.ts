/**
 * @module The guard's own record of each tenant's recent prompt prefixes, to foresee prefix-cache hits.
 *
 * Prefix caching makes honest answers fast: a repeated long prefix skips prefill. The upstream reports
 * `cached_tokens` only at the end of a stream, but the timing guard judges at the first token, so the
 * guard remembers, per tenant, chained hashes of fixed-size chunks of the prompts it sent. The longest run
 * of leading chunks seen before is what the engine may have cached. Records are keyed by tenant: one
 * tenant's history never relaxes another tenant's checks.
 */

/** Bytes per hashed chunk: coarse enough to be cheap (a 4 MB prompt is 64 digests), fine enough to matter. */
export const CHUNK_CHARS = 64 * 1024
/** Distinct chunk hashes remembered per tenant (least recently used go first): 2 MB at most per tenant. */
export const HASHES_PER_TENANT = 16_384
/** Tenants remembered per isolate. */
export const TENANTS = 1_024

/** How much of a prompt the engine may hold in its prefix cache. */
export interface PrefixEstimate {
  /** Leading characters matched by earlier prompts of the same tenant. */
  matchedChars: number
  totalChars: number
}

/**
 * Per-tenant prefix memory.
 *
 * @example
 * const estimate = await record.lookupAndRemember('acme', promptText)
 * const cachedTokens = Math.floor(tokens * estimate.matchedChars / estimate.totalChars)
 */
export class PrefixRecord {
  readonly #tenants = new Map<string, Set<string>>()

  /** Looks a prompt up, then remembers it; both in one pass over its chunks. */
  async lookupAndRemember(tenant: string, text: string): Promise<PrefixEstimate> {
    let seen = this.#tenants.get(tenant)
    if (seen) {
      this.#tenants.delete(tenant)
    } else {
      seen = new Set()
    }
    this.#tenants.set(tenant, seen)
    if (this.#tenants.size > TENANTS) {
      const oldest = this.#tenants.keys().next().value
      if (oldest !== undefined) this.#tenants.delete(oldest)
    }
    const encoder = new TextEncoder()
    let previous = new Uint8Array(0)
    let matchedChars = 0
    let matching = true
    // Only whole chunks count: an engine caches whole pages, and a partial chunk proves nothing.
    for (let at = 0; at + CHUNK_CHARS <= text.length; at += CHUNK_CHARS) {
      const chunk = encoder.encode(text.slice(at, at + CHUNK_CHARS))
      const input = new Uint8Array(previous.length + chunk.length)
      input.set(previous)
      input.set(chunk, previous.length)
      previous = new Uint8Array(await crypto.subtle.digest('SHA-256', input))
      const hex = toHex(previous)
      if (matching && seen.has(hex)) {
        matchedChars = at + CHUNK_CHARS
        seen.delete(hex)
      } else {
        matching = false
      }
      seen.add(hex)
      if (seen.size > HASHES_PER_TENANT) {
        const oldest = seen.values().next().value
        if (oldest !== undefined) seen.delete(oldest)
      }
    }
    return { matchedChars, totalChars: text.length }
  }
}

function toHex(bytes: Uint8Array): string {
  let out = ''
  for (let i = 0; i < 16; i++) out += bytes[i]!.toString(16).padStart(2, '0')
  return out
}
