/**
 * @module The guard's own record of each tenant's recent prompt prefixes, to foresee prefix-cache hits.
 *
 * Prefix caching makes honest answers fast: a repeated long prefix skips prefill. The upstream reports
 * `cached_tokens` only at the end of a stream, but the timing guard judges at the first token, so the
 * guard remembers, per tenant, chained hashes of fixed-size chunks of the prompts it sent. The longest run
 * of leading chunks seen before is what the engine may have cached. Records are keyed by tenant: one
 * tenant's history never relaxes another tenant's checks.
 *
 * A prompt is remembered only after its answer was verified and released: remembered before the call,
 * a "primer" the engine refused (never prefilled, never cached) would excuse the fast placeholder
 * answer of the next, shorter attack prompt as a cache hit. Looking up and remembering
 * are two steps over one hashing pass ({@link PrefixRecord.digest}).
 */
import { toHex } from '../crypto/bytes'

/** Bytes per hashed chunk: coarse enough to be cheap (a 4 MB prompt is 64 digests), fine enough to matter. */
const CHUNK_CHARS = 64 * 1024
/** Bytes of a SHA-256 digest. */
const DIGEST_BYTES = 32
/** Distinct chunk hashes remembered per tenant (least recently used go first): 2 MB at most per tenant. */
const HASHES_PER_TENANT = 16_384
/** Tenants remembered per isolate. */
const TENANTS = 1_024

/** How much of a prompt the engine may hold in its prefix cache. */
interface PrefixEstimate {
  /** Leading characters matched by earlier verified prompts of the same tenant. */
  matchedChars: number
  totalChars: number
}

/** A prompt's chained chunk hashes (whole chunks only), computed once for lookup and remember. */
export interface PromptDigest {
  hashes: string[]
  totalChars: number
}

/**
 * Per-tenant prefix memory.
 *
 * @example
 * const digest = await PrefixRecord.digest(promptText)
 * const estimate = record.lookup('acme', digest)
 * // … later, once the answer was verified and released:
 * record.remember('acme', digest)
 */
export class PrefixRecord {
  readonly #tenants = new Map<string, Set<string>>()

  /** Chained SHA-256 of each whole chunk: a chunk's hash stands for everything before it too. */
  static async digest(text: string): Promise<PromptDigest> {
    const hashes: string[] = []
    if (text.length < CHUNK_CHARS) return { hashes, totalChars: text.length }
    const encoder = new TextEncoder()
    // One buffer for every chunk: the previous digest, then the chunk's UTF-8 (3 bytes a char at most),
    // so hashing a 3 MB prompt leaves no 3 MB of encoded chunks behind for the garbage collector.
    const input = new Uint8Array(DIGEST_BYTES + 3 * CHUNK_CHARS)
    let chained = 0
    // Only whole chunks count: an engine caches whole pages, and a partial chunk proves nothing.
    for (let at = 0; at + CHUNK_CHARS <= text.length; at += CHUNK_CHARS) {
      const { written } = encoder.encodeInto(
        text.slice(at, at + CHUNK_CHARS),
        input.subarray(chained),
      )
      const digest = new Uint8Array(
        await crypto.subtle.digest('SHA-256', input.subarray(0, chained + written)),
      )
      input.set(digest)
      chained = DIGEST_BYTES
      // The first 16 bytes name a chunk: 128 bits, half the memory of the whole digest.
      hashes.push(toHex(digest.subarray(0, 16)))
    }
    return { hashes, totalChars: text.length }
  }

  /** How much of the prompt earlier remembered prompts of this tenant cover. Changes nothing. */
  lookup(tenant: string, digest: PromptDigest): PrefixEstimate {
    const seen = this.#tenants.get(tenant)
    let matched = 0
    while (seen && matched < digest.hashes.length && seen.has(digest.hashes[matched]!)) matched++
    return { matchedChars: matched * CHUNK_CHARS, totalChars: digest.totalChars }
  }

  /** Remembers a prompt whose answer was verified (the engine really prefilled and cached it). */
  remember(tenant: string, digest: PromptDigest): void {
    let seen = this.#tenants.get(tenant)
    if (seen) this.#tenants.delete(tenant)
    else seen = new Set()
    this.#tenants.set(tenant, seen)
    if (this.#tenants.size > TENANTS) {
      const oldest = this.#tenants.keys().next().value
      if (oldest !== undefined) this.#tenants.delete(oldest)
    }
    for (const hash of digest.hashes) {
      seen.delete(hash) // re-inserted last: least recently used go first
      seen.add(hash)
      if (seen.size > HASHES_PER_TENANT) {
        const oldest = seen.values().next().value
        if (oldest !== undefined) seen.delete(oldest)
      }
    }
  }
}
