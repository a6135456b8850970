/**
 * @module What the guard keeps of a tenant's long texts between its requests: facts computed from each
 * text (its family count, its fingerprints, when they last went into the table), found again by the
 * text's keyed digest — never the text itself. A conversation resends its whole history every turn
 * and an app sends one system prompt with every request; without this, every turn pays again for
 * every word of the history, and an engine that answers a long prompt at once (it has the prompt's
 * pages cached, which under cache isolation means this tenant sent it before) leaves nothing to hide
 * that work behind.
 *
 * Per tenant, on purpose: a fact found is work saved, and work saved shows on the clock; one tenant
 * must never learn by timing whether another sent a text. Every fact is a pure function of the text
 * (and the guard's key), so a remembered fact is the recomputed one: no verdict depends on what is
 * remembered, only how fast it comes. The digest is an HMAC under a key derived from the guard's
 * secret: a tenant cannot make two texts share one, so it cannot have a long text counted as a short
 * one. Bounded: a budget of bytes per isolate, a share of it per tenant; when over, the least recently
 * used tenant's least recently used text goes first.
 */
import { toHex } from '../crypto/bytes'
import { hmacOf, importHmacSecret } from '../crypto/hmac'

/** Memo settings. */
interface TextMemoOptions {
  /** Bytes of facts (and their bookkeeping) the isolate keeps. */
  budgetBytes: number
  /** The largest share of the budget one tenant's texts may hold. @default 1/2 */
  tenantShare?: number
  /** Texts shorter than this (UTF-16 units) are not remembered: recomputing them is cheaper. @default 2048 */
  minChars?: number
}

/**
 * One kind of fact (a slot of every entry). Each slot is its own object, so facts of two kinds never
 * mix, and `V` types what a slot holds.
 *
 * @example
 * const TALLY = memoSlot<TextTally>('tally')
 */
export interface MemoSlot<V> {
  readonly name: string
  /** Phantom: only carries `V`. */
  readonly _value?: V
}

/**
 * A slot for one kind of fact.
 *
 * @example
 * const PRINT = memoSlot<TextPrint>('print')
 */
export function memoSlot<V>(name: string): MemoSlot<V> {
  return { name }
}

/** What a consumer sees of one slot for one request's texts. */
export interface TextFacts<V> {
  /** Whether facts of `text` can be remembered (it is long enough, and its digest is known). */
  remembers(text: string): boolean
  /** The fact remembered for `text`, if any (always undefined before the texts' digests are known). */
  get(text: string): V | undefined
  /** Remembers a fact of `text` that costs about `bytes` to hold (ignored for texts not digested). */
  keep(text: string, value: V, bytes: number): void
}

/** Memo figures. */
interface TextMemoStats {
  entries: number
  bytes: number
  tenants: number
  /** Lookups that found a fact / that did not. */
  hits: number
  misses: number
}

/**
 * Long texts one request digests at most: a conversation rarely has more, and a body of 16 MiB cut
 * into 8,192 texts of 2,048 characters would otherwise cost 8,192 WebCrypto calls on top of its scan.
 * The rest of such a request's texts are computed afresh (the same, slower).
 */
const MAX_TEXTS_PER_REQUEST = 256

/** What one entry costs before its facts: the digest string, a Map slot, the entry object. */
const ENTRY_BYTES = 160

/** Where a fact is kept: the tenant's shelf and the text's digest. */
interface MemoPlace {
  tenant: string
  digest: string
}

interface Entry {
  readonly facts: Map<MemoSlot<unknown>, unknown>
  bytes: number
}

interface TenantShelf {
  readonly entries: Map<string, Entry>
  /** Its entries and its name. */
  bytes: number
  /** What its name is charged (tenant ids are the caller's: they can be long). */
  readonly nameBytes: number
}

/**
 * The isolate's memo of facts per tenant and text.
 *
 * @example
 * const memo = new TextMemo(secret, { budgetBytes: 16 * 1024 * 1024 })
 * const request = memo.forRequest('acme')
 * await request.know(pieces.texts)
 * const tallies = request.facts(TALLY)
 */
export class TextMemo {
  readonly #secret: string
  readonly #budget: number
  readonly #share: number
  readonly #minChars: number
  #key: Promise<CryptoKey> | undefined
  /** Tenants in least-recently-used order (first = least recent). */
  readonly #tenants = new Map<string, TenantShelf>()
  #bytes = 0
  #hits = 0
  #misses = 0

  constructor(secret: string, options: TextMemoOptions) {
    this.#secret = secret
    this.#budget = options.budgetBytes
    this.#share = Math.floor(options.budgetBytes * (options.tenantShare ?? 1 / 2))
    this.#minChars = options.minChars ?? 2048
  }

  /**
   * A view for one request of `tenant`; its texts are digested as it asks (`know`). Cheap: no work
   * until then.
   *
   * @example
   * const request = memo.forRequest(tenant)
   */
  forRequest(tenant: string): RequestMemo {
    return new RequestMemo(this, tenant, this.#minChars)
  }

  /** Bytes held now (what {@link stats} reports, without counting entries). */
  get bytes(): number {
    return this.#bytes
  }

  /** Memory held and entries, for tests and the bench. */
  stats(): TextMemoStats {
    let entries = 0
    for (const shelf of this.#tenants.values()) entries += shelf.entries.size
    return {
      entries,
      bytes: this.#bytes,
      tenants: this.#tenants.size,
      hits: this.#hits,
      misses: this.#misses,
    }
  }

  /**
   * The texts' digests: HMAC-SHA-256 under a key of their own of the SHA-256 of each of the text's
   * pieces of {@link PIECE_CHARS} (cut between code points), 128 bits as hex. Each piece is encoded
   * into one buffer reused for the next, so digesting a 3 MB prompt does not copy it whole as UTF-8.
   */
  async digest(texts: readonly string[]): Promise<string[]> {
    this.#key ??= this.#importKey()
    const key = await this.#key
    const buffer = new Uint8Array(3 * PIECE_CHARS)
    const digests: string[] = []
    for (const text of texts) {
      const pieces = new Uint8Array(32 * Math.max(1, Math.ceil(text.length / PIECE_CHARS)) + 32)
      let filled = 0
      let at = 0
      do {
        const end = pieceEnd(text, at)
        const { written } = UTF8.encodeInto(text.slice(at, end), buffer)
        const hash = await crypto.subtle.digest('SHA-256', buffer.subarray(0, written))
        pieces.set(new Uint8Array(hash), filled)
        filled += 32
        at = end
      } while (at < text.length)
      const mac = await crypto.subtle.sign('HMAC', key, pieces.subarray(0, filled))
      digests.push(toHex(new Uint8Array(mac, 0, 16)))
    }
    return digests
  }

  /** The fact in `slot` for `tenant`'s text with this digest; marks both as recently used. */
  read<V>(tenant: string, digest: string, slot: MemoSlot<V>): V | undefined {
    const shelf = this.#tenants.get(tenant)
    const entry = shelf?.entries.get(digest)
    const value = entry?.facts.get(slot) as V | undefined
    if (value === undefined) {
      this.#misses++
      return undefined
    }
    this.#hits++
    this.#touch(tenant, shelf!, digest, entry!)
    return value
  }

  /** Keeps a fact; nothing is kept that alone would take more than a tenant's share. */
  write<V>({ tenant, digest }: MemoPlace, slot: MemoSlot<V>, value: V, bytes: number): void {
    let shelf = this.#tenants.get(tenant)
    const nameBytes = shelf?.nameBytes ?? 2 * tenant.length + 72
    let entry = shelf?.entries.get(digest)
    const cost = Math.max(0, bytes) + (entry ? 0 : ENTRY_BYTES)
    if (nameBytes + (entry?.bytes ?? 0) + cost > this.#share) return
    if (!shelf) {
      shelf = { entries: new Map<string, Entry>(), bytes: nameBytes, nameBytes }
      this.#bytes += nameBytes
    }
    if (!entry) {
      entry = { facts: new Map(), bytes: 0 }
      shelf.entries.set(digest, entry)
    }
    if (entry.facts.has(slot)) return
    entry.facts.set(slot, value)
    entry.bytes += cost
    shelf.bytes += cost
    this.#bytes += cost
    this.#touch(tenant, shelf, digest, entry)
    // The entry just written is the most recent of its shelf and the shelf the most recent tenant:
    // it goes last, so an entry within the share always survives its own write.
    while (shelf.bytes > this.#share) this.#evictOldest(tenant, shelf)
    while (this.#bytes > this.#budget) {
      const [oldest, oldestShelf] = this.#tenants.entries().next().value as [string, TenantShelf]
      this.#evictOldest(oldest, oldestShelf)
    }
  }

  #touch(tenant: string, shelf: TenantShelf, digest: string, entry: Entry): void {
    shelf.entries.delete(digest)
    shelf.entries.set(digest, entry)
    this.#tenants.delete(tenant)
    this.#tenants.set(tenant, shelf)
  }

  #evictOldest(tenant: string, shelf: TenantShelf): void {
    const first = shelf.entries.entries().next()
    if (!first.done) {
      const [digest, entry] = first.value
      shelf.entries.delete(digest)
      shelf.bytes -= entry.bytes
      this.#bytes -= entry.bytes
    }
    if (shelf.entries.size === 0) {
      this.#tenants.delete(tenant)
      this.#bytes -= shelf.nameBytes
    }
  }

  async #importKey(): Promise<CryptoKey> {
    // A key of its own (HMAC of a label under the secret): digests of texts are never a MAC that
    // canaries or stand-ins are checked with.
    const derived = await hmacOf(await importHmacSecret(this.#secret), ['text-memo\0'])
    return crypto.subtle.importKey('raw', derived, { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ])
  }
}

/**
 * One request's view of the memo: its long texts' digests (each made once, when first needed) and the
 * facts of each slot found by them.
 */
export class RequestMemo {
  readonly #memo: TextMemo
  readonly #tenant: string
  readonly #minChars: number
  readonly #digests = new Map<string, string>()
  /** Long texts whose digest was asked for (made or being made). */
  readonly #asked = new Set<string>()
  readonly #inFlight: Promise<void>[] = []

  constructor(memo: TextMemo, tenant: string, minChars: number) {
    this.#memo = memo
    this.#tenant = tenant
    this.#minChars = minChars
  }

  /**
   * Digests these texts (the long ones not asked for yet), resolving once every digest asked for so
   * far is known. Never rejects: without digests every fact is computed afresh, which is slower and
   * the same.
   *
   * @example
   * await request.know(messageTexts) // before the secrets scan, which runs before the call
   */
  know(texts: readonly string[]): Promise<void> {
    const fresh: string[] = []
    for (const text of texts) {
      if (text.length < this.#minChars || this.#asked.has(text)) continue
      if (this.#asked.size >= MAX_TEXTS_PER_REQUEST) break
      this.#asked.add(text)
      fresh.push(text)
    }
    if (fresh.length > 0) {
      this.#inFlight.push(
        this.#memo.digest(fresh).then(
          (digests) => {
            for (const [i, text] of fresh.entries()) this.#digests.set(text, digests[i]!)
          },
          () => {},
        ),
      )
    }
    return Promise.all(this.#inFlight).then(() => {})
  }

  /**
   * The facts of one slot for this request's texts.
   *
   * @example
   * const prints = request.facts(PRINT)
   * const print = prints.get(text) ?? keepPrint(prints, text)
   */
  facts<V>(slot: MemoSlot<V>): TextFacts<V> {
    return {
      remembers: (text) => this.#digests.has(text),
      get: (text) => {
        const digest = this.#digests.get(text)
        return digest === undefined ? undefined : this.#memo.read(this.#tenant, digest, slot)
      },
      keep: (text, value, bytes) => {
        const digest = this.#digests.get(text)
        if (digest !== undefined)
          this.#memo.write({ tenant: this.#tenant, digest }, slot, value, bytes)
      },
    }
  }
}

const UTF8 = new TextEncoder()

/** UTF-16 units of text per piece hashed apart when a text is digested. */
const PIECE_CHARS = 64 * 1024

/**
 * Where the piece of `text` starting at `at` ends: {@link PIECE_CHARS} on, moved back one unit so no
 * surrogate pair is cut (a cut pair would encode as two U+FFFD, like a text that holds two U+FFFD).
 */
function pieceEnd(text: string, at: number): number {
  const end = Math.min(text.length, at + PIECE_CHARS)
  if (end >= text.length || end - at < 2) return end
  const before = text.charCodeAt(end - 1)
  return before >= 0xd800 && before <= 0xdbff ? end - 1 : end
}
