/**
 * @module Canary tokens: minted per request with HMAC-SHA-256 (WebCrypto) so that any canary found in
 * any output can be verified as ours and attributed to a tenant.
 *
 * Why: when decode reads KV pages that prefill never wrote, answers carry other
 * customers' prompts. A canary placed in every prompt turns that into evidence: finding a canary that
 * verifies under our key but is not this request's proves cross-request leakage, and its tenant tag
 * says whose prompt leaked (src/core/attribution maps tags back to tenants, durably).
 *
 * Layout: `cnry_` + 24 chars of lowercase Crockford base32 (`0-9a-hjkmnp-tv-z`, no i l o u) encoding
 * 15 bytes = nonce (4) ‖ tenant tag (5) ‖ MAC (6); {@link CANARY_LENGTH} = 29 chars. The widths:
 * - MAC, 48 bits: first 6 bytes of HMAC(key, "canary-v2\0" ‖ nonce ‖ tag). A forger without the key
 *   succeeds with probability 2^-48 (3.6e-15) per try, and a random look-alike verifies with the same
 *   odds; a try costs the attacker a model answer, so even 10^9 tries stay at 3.6e-6. Verification is
 *   online only (the key never leaves the guard), so no offline search applies.
 * - Nonce, 32 bits: first 4 bytes of HMAC(key, "request\0" + requestId), so a canary can be
 *   re-derived from (and bound to) its request id. A nonce collision is harmless: it only makes two
 *   canaries of the same tenant equal (both still ours). The one case where it matters — a stale answer
 *   of tenant T's request X served to T's request Y carrying X's canary, which then passes as Y's echo —
 *   needs X and Y to share a nonce: 2^-32 (2.3e-10) per such leak, and the data is T's own.
 * - Tenant tag, 40 bits: first 5 bytes of HMAC(key, "tenant\0" + tenant), in hex (10 chars) for
 *   reports. It attributes, it does not authenticate (the MAC does). With N tenants, the probability
 *   that another tenant shares the leaking tenant's tag is (N−1)/2^40: 9.1e-9 at 10^4, 9.1e-7 at
 *   10^6. Across all tenants the expected number of colliding pairs is N(N−1)/2^41: 4.5e-5 at 10^4,
 *   0.45 at 10^6 (a 37% chance that some pair collides). So collisions are rare but not ruled out at
 *   scale, and the tenant directory (src/core/attribution) reports every owner of a tag — a collision is
 *   an ambiguous attribution naming both tenants, never a wrong one.
 * The previous layout (v1: nonce 5 ‖ tag 3 ‖ MAC 7, MAC label "canary\0") still verifies, so a leak
 * of a prompt minted before the upgrade (still in the engine's cache) is still proof; its 6-hex tag is
 * reported as is and attributes to nobody (a 24-bit tag at scale names the wrong tenant). Look-alike
 * odds with both layouts: 2^-48 + 2^-56.
 * The lowercase Crockford alphabet keeps the token one "word" for tokenizers and unambiguous to read.
 * Token cost, measured with gpt-tokenizer o200k_base (test/canary/token.test.ts; 5,000 canaries):
 * 13 to 24 tokens, 18.4 on average (median 18, 99th percentile 22) — the same as the v1 layout
 * measured the same way (14 to 24, 18.0): the layout moves bits, not characters. The whole echo
 * directive is about 34 — negligible next to the long prompts this guard exists for, and the echo
 * costs the same again in output.
 */
import { constantTimeEqual, toHex } from '../crypto/bytes'
import { hmacOf, importHmacSecret } from '../crypto/hmac'
import { MarkerBook } from './marker-book'

/**
 * Every canary starts with this.
 *
 * @example
 * canary.startsWith(CANARY_PREFIX) // true
 */
export const CANARY_PREFIX = 'cnry_'

/**
 * Length of a canary: the prefix plus 24 base32 chars.
 *
 * @example
 * const holdBack = CANARY_LENGTH - 1 // the longest tail a scanner may hold
 */
export const CANARY_LENGTH = 29

/**
 * Crockford base32, lowercase (no i, l, o, u).
 *
 * @example
 * [...body].every((c) => CANARY_ALPHABET.includes(c))
 */
export const CANARY_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

/**
 * Number of base32 chars after the prefix.
 *
 * @example
 * CANARY_PREFIX.length + CANARY_BODY_LENGTH === CANARY_LENGTH // true
 */
export const CANARY_BODY_LENGTH = 24

/**
 * Matches every canary this guard mints (global, case-insensitive). No leading word boundary, so a
 * canary glued to other text (`xcnry_…`) is still caught. It is global and so stateful under
 * `test`/`exec`: prefer `text.matchAll(CANARY_PATTERN)` or `text.replace(CANARY_PATTERN, …)`.
 *
 * @example
 * for (const m of text.matchAll(CANARY_PATTERN)) console.log(m.index)
 */
export const CANARY_PATTERN = /cnry_[0-9a-hjkmnp-tv-z]{24}/gi

const NONCE_BYTES = 4
const TAG_BYTES = 5
const MAC_BYTES = 6
/** The v1 layout, still verified (see the module comment). */
const V1 = { nonce: 5, tag: 3, mac: 7, label: 'canary\0' } as const
const MAC_LABEL = 'canary-v2\0'

const utf8 = new TextEncoder()

/** The HMAC key behind an opaque handle: callers can pass it around but never read it. */
const keys = new WeakMap<CanaryKey, CryptoKey>()

/** An imported canary secret (opaque; create with {@link importCanaryKey}). */
export interface CanaryKey {
  readonly kind: 'canary-key'
}

/**
 * Import the canary secret as an HMAC-SHA-256 key. Throws a plain `Error` naming `secret` when it is
 * shorter than 32 bytes of UTF-8 (a short secret would make the 48-bit MAC the weaker part).
 *
 * @example
 * const key = await importCanaryKey(env.GUARD_SECRET)
 */
export async function importCanaryKey(secret: string): Promise<CanaryKey> {
  const cryptoKey = await importHmacSecret(secret)
  const handle: CanaryKey = Object.freeze({ kind: 'canary-key' as const })
  keys.set(handle, cryptoKey)
  return handle
}

async function hmac(key: CanaryKey, ...parts: Uint8Array[]): Promise<Uint8Array> {
  const cryptoKey = keys.get(key)
  if (cryptoKey === undefined) throw new Error('not a CanaryKey from importCanaryKey')
  return await hmacOf(cryptoKey, parts)
}

/** 15 bytes → 24 base32 chars (120 bits, no padding). */
function encodeBase32(bytes: Uint8Array): string {
  let out = ''
  let buffer = 0
  let bits = 0
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      bits -= 5
      out += CANARY_ALPHABET[(buffer >> bits) & 31]
    }
    buffer &= (1 << bits) - 1
  }
  return out
}

/** 24 base32 chars → 15 bytes, or undefined when a char is outside the alphabet. */
function decodeBase32(text: string): Uint8Array | undefined {
  const out = new Uint8Array((text.length * 5) / 8)
  let buffer = 0
  let bits = 0
  let index = 0
  for (const char of text) {
    const value = CANARY_ALPHABET.indexOf(char)
    if (value === -1) return undefined
    buffer = (buffer << 5) | value
    bits += 5
    if (bits >= 8) {
      bits -= 8
      out[index++] = (buffer >> bits) & 0xff
    }
    buffer &= (1 << bits) - 1
  }
  return out
}

/** How many tenants' tags each key keeps (least recently used first out). */
const TAG_CACHE_SIZE = 10_000

/**
 * Tenant tags per key: a tenant's tag never changes, and every request needs it, so it is computed
 * once (each HMAC is a WebCrypto round trip). Bounded LRU: a busy isolate keeps its active tenants
 * rather than dropping every tag at once.
 */
const TAGS = new WeakMap<CanaryKey, Map<string, Promise<Uint8Array>>>()

/** Cache salts per key, kept the same way as tags (every salted request needs its tenant's). */
const SALTS = new WeakMap<CanaryKey, Map<string, Promise<Uint8Array>>>()

/** The full 32-byte tag digest: v2 tags are its first 5 bytes, v1 tags its first 3. */
function tagDigest(key: CanaryKey, tenant: string): Promise<Uint8Array> {
  return perTenant(TAGS, key, tenant, () => hmac(key, utf8.encode(`tenant\0${tenant}`)))
}

/** `make()`, memoized per key and tenant in a bounded LRU (a failed one is not kept). */
function perTenant<T>(
  store: WeakMap<CanaryKey, Map<string, Promise<T>>>,
  key: CanaryKey,
  tenant: string,
  make: () => Promise<T>,
): Promise<T> {
  let values = store.get(key)
  if (!values) {
    values = new Map()
    store.set(key, values)
  }
  let value = values.get(tenant)
  if (value) {
    values.delete(tenant) // re-inserted below: most recently used
  } else {
    value = make()
    const cache = values
    value.catch(() => cache.delete(tenant))
  }
  values.set(tenant, value)
  if (values.size > TAG_CACHE_SIZE) {
    const oldest = values.keys().next().value
    if (oldest !== undefined) values.delete(oldest)
  }
  return value
}

async function tagBytes(key: CanaryKey, tenant: string): Promise<Uint8Array> {
  return (await tagDigest(key, tenant)).slice(0, TAG_BYTES)
}

async function macBytes(key: CanaryKey, nonce: Uint8Array, tag: Uint8Array): Promise<Uint8Array> {
  return (await hmac(key, utf8.encode(MAC_LABEL), nonce, tag)).slice(0, MAC_BYTES)
}

/**
 * The tenant tag (10 hex chars, 40 bits) a tenant's canaries carry; compare it with a finding's
 * `tenantTag`, or resolve it with a tenant directory (src/core/attribution), to know whose prompt leaked.
 *
 * @example
 * if (finding.tenantTag === (await tenantTag(key, 'acme'))) console.log('acme leaked')
 */
export async function tenantTag(key: CanaryKey, tenant: string): Promise<string> {
  return toHex(await tagBytes(key, tenant))
}

/** Bytes of a cache salt: 128 bits, so no two tenants' salts meet by chance. */
const SALT_BYTES = 16

/**
 * The prefix-cache salt of a tenant (vLLM's `cache_salt`): 22 base64url chars, the first 16 bytes of
 * HMAC(key, "cache-salt\0" ‖ tenant). Stable per (key, tenant), so a tenant keeps hitting its own
 * cached prefixes; unrelated to the tenant tag (its own label), so neither reveals the other; and not
 * reversible to the tenant's name without the key. A client cannot choose it: the guard drops any
 * `cache_salt` a request carries and sets this one.
 *
 * @example
 * const inputs = { ...request, cache_salt: await cacheSalt(key, 'acme') }
 */
export async function cacheSalt(key: CanaryKey, tenant: string): Promise<string> {
  const digest = await perTenant(SALTS, key, tenant, () =>
    hmac(key, utf8.encode(`cache-salt\0${tenant}`)),
  )
  return toBase64Url(digest.slice(0, SALT_BYTES))
}

function toBase64Url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/**
 * The 32-byte seed of the guard's content fingerprints (src/plugins/foreign-content): HMAC(key, "content-shingles\0").
 * Stored fingerprints are hashes of prompt text under it, so nobody without the key can test a guess
 * of a prompt's words against them.
 *
 * @example
 * const seed = await contentSeed(key) // Uint8Array(32)
 */
export function contentSeed(key: CanaryKey): Promise<Uint8Array> {
  return hmac(key, utf8.encode('content-shingles\0'))
}

const FINGERPRINTS = new WeakMap<CanaryKey, Promise<string>>()

/**
 * A public name for a key (16 hex chars): HMAC(key, "fingerprint\0"), so it reveals nothing of the
 * secret. Stored tag → tenant entries are namespaced by it, so guards under different secrets never
 * mix their tenants (the same tag means different tenants under different keys).
 *
 * @example
 * const namespace = await keyFingerprint(key) // e.g. '3f9c0a7b12e4d5c6'
 */
export function keyFingerprint(key: CanaryKey): Promise<string> {
  let fingerprint = FINGERPRINTS.get(key)
  if (!fingerprint) {
    fingerprint = hmac(key, utf8.encode('fingerprint\0')).then((bytes) => toHex(bytes.slice(0, 8)))
    fingerprint.catch(() => FINGERPRINTS.delete(key))
    FINGERPRINTS.set(key, fingerprint)
  }
  return fingerprint
}

/**
 * Mint the canary of one request: deterministic in (key, requestId, tenant), so it can be
 * re-derived from a quarantine record without storing it.
 *
 * @example
 * const canary = await mintCanary(key, { requestId: crypto.randomUUID(), tenant: 'acme' })
 * // 'cnry_' + 24 base32 chars
 */
export async function mintCanary(
  key: CanaryKey,
  request: { requestId: string; tenant: string },
): Promise<string> {
  const [digest, tag] = await Promise.all([
    hmac(key, utf8.encode(`request\0${request.requestId}`)),
    tagBytes(key, request.tenant),
  ])
  const nonce = digest.slice(0, NONCE_BYTES)
  const mac = await macBytes(key, nonce, tag)
  const body = new Uint8Array(NONCE_BYTES + TAG_BYTES + MAC_BYTES)
  body.set(nonce, 0)
  body.set(tag, NONCE_BYTES)
  body.set(mac, NONCE_BYTES + TAG_BYTES)
  return CANARY_PREFIX + encodeBase32(body)
}

/**
 * The tenant's prefix marker (`cacheIsolation: 'prefix'`): a canary minted for the tenant rather than a
 * request (its nonce from the reserved request id `cache-prefix\0<tenant>`, which `crypto.randomUUID`
 * never produces), so it is the same on every request of the tenant — the tenant keeps its own cache
 * hits — differs between tenants, verifies under the key like any canary, and attributes to its tenant
 * when it turns up in another tenant's answer.
 *
 * @example
 * const marker = await prefixMarker(key, 'acme') // 'cnry_…', stable for acme
 */
export async function prefixMarker(key: CanaryKey, tenant: string): Promise<string> {
  const [marker, book] = await Promise.all([
    perTenant(MARKERS, key, tenant, () =>
      mintCanary(key, { requestId: `cache-prefix\0${tenant}`, tenant }),
    ),
    markerBook(key),
  ])
  // Kept in the book while the tenant is served: a piece of it in another tenant's answer is a leak.
  if (!book.touch(tenant)) book.add(tenant, marker, markerTag(marker))
  return marker
}

/** The tenant tag (hex) a canary-shaped token carries, read from its body without verifying it. */
function markerTag(marker: string): string {
  const body = decodeBase32(marker.toLowerCase().slice(CANARY_PREFIX.length))
  return body ? toHex(body.slice(NONCE_BYTES, NONCE_BYTES + TAG_BYTES)) : ''
}

/** Marker books by key fingerprint: guards under one secret (one per option set) share one book. */
const BOOKS = new Map<string, MarkerBook>()
/** Distinct secrets an isolate keeps books for (a deployment has one or two; tests have many). */
const BOOK_KEYS = 16
const BOOK_OF = new WeakMap<CanaryKey, Promise<MarkerBook>>()

/**
 * The prefix markers minted in this isolate under `key`'s secret (see ./marker-book.ts): where a
 * piece of another tenant's marker is looked up.
 *
 * @example
 * const entry = (await markerBook(key)).find(gram)
 */
export function markerBook(key: CanaryKey): Promise<MarkerBook> {
  let book = BOOK_OF.get(key)
  if (!book) {
    book = keyFingerprint(key).then((fingerprint) => {
      let found = BOOKS.get(fingerprint)
      if (!found) {
        found = new MarkerBook(TAG_CACHE_SIZE)
        BOOKS.set(fingerprint, found)
        if (BOOKS.size > BOOK_KEYS) BOOKS.delete(BOOKS.keys().next().value!)
      }
      return found
    })
    book.catch(() => BOOK_OF.delete(key))
    BOOK_OF.set(key, book)
  }
  return book
}

/**
 * Prefix markers per key, kept like tags: a tenant's marker never changes, and minting it is two
 * HMACs (two WebCrypto round trips) on every request of a prefix-isolated model.
 */
const MARKERS = new WeakMap<CanaryKey, Map<string, Promise<string>>>()

/** What {@link inspectCanary} learned about a token. */
export type CanaryInspection = { ours: false } | { ours: true; tenantTag: string; nonce: string }

const EXACT = /^cnry_[0-9a-hjkmnp-tv-z]{24}$/

/**
 * Whether `token` (exactly one canary-shaped string, any case) was minted under `key`; if so, its
 * tenant tag and nonce (hex: 10 and 8 chars; 6 and 10 for a canary of the v1 layout). The MAC is
 * compared in constant time. Look-alikes (wrong shape, wrong MAC) answer `{ ours: false }` and never
 * throw.
 *
 * @example
 * const info = await inspectCanary(key, found)
 * if (info.ours && found.toLowerCase() !== own) report(info.tenantTag)
 */
export async function inspectCanary(key: CanaryKey, token: string): Promise<CanaryInspection> {
  if (typeof token !== 'string') return { ours: false }
  const lower = token.toLowerCase()
  if (!EXACT.test(lower)) return { ours: false }
  const body = decodeBase32(lower.slice(CANARY_PREFIX.length))
  if (body === undefined) return { ours: false }
  const nonce = body.slice(0, NONCE_BYTES)
  const tag = body.slice(NONCE_BYTES, NONCE_BYTES + TAG_BYTES)
  if (constantTimeEqual(body.slice(NONCE_BYTES + TAG_BYTES), await macBytes(key, nonce, tag))) {
    return { ours: true, tenantTag: toHex(tag), nonce: toHex(nonce) }
  }
  // Only a token that failed the current layout pays for the second HMAC.
  const v1Nonce = body.slice(0, V1.nonce)
  const v1Tag = body.slice(V1.nonce, V1.nonce + V1.tag)
  const v1Mac = (await hmac(key, utf8.encode(V1.label), v1Nonce, v1Tag)).slice(0, V1.mac)
  if (constantTimeEqual(body.slice(V1.nonce + V1.tag), v1Mac)) {
    return { ours: true, tenantTag: toHex(v1Tag), nonce: toHex(v1Nonce) }
  }
  return { ours: false }
}
