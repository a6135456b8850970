/**
 * @module The bounded index of recent prompt fingerprints: fingerprint → the tenants that sent it, per
 * model, in a fixed memory budget. Two generations of open-addressing typed arrays: new fingerprints
 * go to the current one; when it is full, or older than the ttl, the older generation is dropped whole
 * and the current one takes its place. Each entry also keeps the second it was last sent, so nothing
 * older than the ttl is ever visible, whatever the rotations.
 *
 * Against a flood: a tenant may create at most `tenantShare` of a generation's entries (the rest of
 * its fingerprints are dropped, counted in `stats().dropped`), so one tenant alone can never fill a
 * generation and evict others' entries; it takes 1/tenantShare tenants flooding together. A tenant
 * can mark someone else's fingerprint common only by sending the same text (the fingerprint is a
 * keyed PRF of it), which it then already knows.
 */
import { COMMON, Generation, NO_OWNER, nameCost, slotBytes } from './generation'

/** Table settings. */
export interface FingerprintTableOptions {
  /** The most memory the table may hold (typed arrays and tenant names). @default 16 MiB */
  budgetBytes?: number
  /** How long a fingerprint stays visible after it was last sent. @default 3_600_000 (1 hour) */
  ttlMs?: number
  /** Distinct tenants from which a fingerprint is common (never evidence), 2 to 4. @default 2 */
  commonAt?: number
  /** The largest share of a generation one tenant may fill. @default 1/3 */
  tenantShare?: number
}

/** Who sent a fingerprint within the ttl. */
export interface FingerprintOwners {
  /** Its senders (empty when common). */
  tenants: readonly string[]
  /** Sent by `commonAt` distinct tenants or more: boilerplate, never evidence. */
  common: boolean
}

/** The lookup side of a table: what an answer scanner needs. */
export interface FingerprintLookup {
  lookup(model: string, hash: number, now: number): FingerprintOwners | undefined
}

/** Table figures. */
export interface FingerprintTableStats {
  /** Occupied slots in both generations (expired ones included until their generation drops). */
  entries: number
  /** Memory held: typed arrays plus the charge of tenant names. */
  bytes: number
  /** Distinct tenants named in either generation. */
  tenants: number
  /** Fingerprints not stored because their tenant had used its share of the generation. */
  dropped: number
  /** Entries a generation takes before it rotates. */
  entriesPerGeneration: number
}

const TWO_32 = 0x100000000
/** The load at which a generation counts as full: linear probing stays short (≈ 6 probes on a miss). */
const MAX_LOAD = 0.7
const MIN_BUDGET = 64 * 1024
const MAX_TENANT_LENGTH = 1024

/**
 * The fingerprint index of one isolate.
 *
 * @example
 * const table = new FingerprintTable({ budgetBytes: 16 * 1024 * 1024, ttlMs: 3_600_000 })
 * table.add('@cf/zai-org/glm-5.3', 'acme', print.selected, Date.now())
 * table.lookup('@cf/zai-org/glm-5.3', fingerprint, Date.now()) // { tenants: ['acme'], common: false }
 */
export class FingerprintTable implements FingerprintLookup {
  private readonly ttlMs: number
  private readonly ttlSeconds: number
  private readonly ownerSlots: number
  private readonly capacity: number
  private readonly maxEntries: number
  private readonly quota: number
  private readonly nameBudget: number
  private current: Generation | undefined
  private previous: Generation | undefined
  private epoch: number | undefined
  private dropped = 0
  /** Rotations so far: an add recorded before the last one may sit in the generation dropped next. */
  private rotated = 0
  private readonly models = new Map<string, [number, number]>()
  /** Adds registered but not yet made: each runs before the next lookup (see `defer`). */
  private readonly deferred = new Set<() => unknown>()

  constructor(options: FingerprintTableOptions = {}) {
    const budget = options.budgetBytes ?? 16 * 1024 * 1024
    const ttl = options.ttlMs ?? 3_600_000
    const commonAt = options.commonAt ?? 2
    const share = options.tenantShare ?? 1 / 3
    if (!(budget >= MIN_BUDGET)) throw new Error(`budgetBytes: at least ${MIN_BUDGET}`)
    if (!(ttl >= 1000)) throw new Error('ttlMs: at least 1000')
    if (!Number.isInteger(commonAt) || commonAt < 2 || commonAt > 4) {
      throw new Error('commonAt: an integer from 2 to 4')
    }
    if (!(share > 0 && share <= 1)) throw new Error('tenantShare: in (0, 1]')
    this.ttlMs = ttl
    this.ttlSeconds = Math.ceil(ttl / 1000)
    this.ownerSlots = commonAt - 1
    // A sixteenth of the budget for tenant names, the rest for two generations of slots.
    this.nameBudget = Math.floor(budget / 32)
    this.capacity = Math.floor((budget - 2 * this.nameBudget) / (2 * slotBytes(this.ownerSlots)))
    this.maxEntries = Math.floor(this.capacity * MAX_LOAD)
    this.quota = Math.max(1, Math.floor(this.maxEntries * share))
  }

  /**
   * Records that `tenant` sent these fingerprints (a prompt's `selected`) at `at` (ms).
   *
   * @example
   * table.add(model, tenant, printPrompt(key, texts, params).selected, Date.now())
   */
  add(model: string, tenant: string, hashes: readonly number[], at: number): void {
    if (tenant.length > MAX_TENANT_LENGTH) {
      throw new Error(`FingerprintTable: tenant ids longer than ${MAX_TENANT_LENGTH} characters`)
    }
    const [mlo, mhi] = this.modelCode(model)
    const second = this.secondOf(at)
    let generation = this.generationFor(at, tenant)
    let id = generation.idOf(tenant)
    for (const hash of hashes) {
      if (generation.size >= this.maxEntries) {
        generation = this.rotate(at)
        id = generation.idOf(tenant)
      }
      this.addOne(generation, id, this.stored(hash, mlo, mhi), second)
    }
  }

  /**
   * Registers adds whose hashing can wait but whose effect cannot: `work` (which calls `add`) runs
   * once — when the returned function is called, or before the table's next lookup, whichever comes
   * first — so every lookup sees every add registered before it. The returned function gives `work`'s
   * result (or throws its error) on every call.
   *
   * @example
   * const print = table.defer(() => record(printPrompt(key, texts, params)))
   * setTimeout(print, 0) // the call is sent first; an answer checked before then runs it
   */
  defer<T>(work: () => T): () => T {
    let outcome: { value: T } | { error: unknown } | undefined
    const run = (): T => {
      if (outcome === undefined) {
        this.deferred.delete(run)
        try {
          outcome = { value: work() }
        } catch (error) {
          outcome = { error }
        }
      }
      if ('error' in outcome) throw outcome.error
      return outcome.value
    }
    this.deferred.add(run)
    return run
  }

  /**
   * Who sent `hash` under `model` within the ttl before `now`; undefined when nobody did.
   *
   * @example
   * const owners = table.lookup(model, fingerprint, Date.now())
   * if (owners && !owners.common && owners.tenants.some((t) => t !== tenant)) count()
   */
  lookup(model: string, hash: number, now: number): FingerprintOwners | undefined {
    if (this.deferred.size !== 0) this.runDeferred()
    const current = this.current
    if (current === undefined) return undefined
    // Indexed, not destructured: this runs for a fingerprint of every few words of every answer.
    const code = this.modelCode(model)
    const stored = this.stored(hash, code[0], code[1])
    // The current generation, then the previous (unrolled: a list of the two cost an allocation).
    let generation = current
    let slot = this.slotOf(current, stored)
    if (slot < 0 && this.previous !== undefined) {
      generation = this.previous
      slot = this.slotOf(generation, stored)
    }
    if (slot < 0 || !this.visible(generation.seen[slot]!, this.secondOf(now))) return undefined
    return generation.ownersOf(slot)
  }

  /** The slot holding `stored` in `generation`, or −1. */
  private slotOf(generation: Generation, stored: number): number {
    if (!generation.mayHold(stored)) return -1
    const slot = generation.find(stored)
    return generation.keys[slot] === 0 ? -1 : slot
  }

  /**
   * How many times the generations have rotated. Fingerprints added when this was r (read after the
   * add) are still held, in one generation or the other, for as long as it is still r: adding them
   * again then would only refresh their time.
   *
   * @example
   * const mark = table.rotations
   * table.add(model, tenant, hashes, Date.now())
   * if (table.rotations === mark) skipReAdd()
   */
  get rotations(): number {
    return this.rotated
  }

  /**
   * Bytes of the second generation's arrays: made at the first rotation and kept from then on, 0
   * before. An isolate's idle memory holds the first only (made at the first add), so memory admission
   * leaves these out of what requests may reserve.
   */
  get secondGenerationBytes(): number {
    return this.previous === undefined ? 0 : this.previous.arrayBytes
  }

  /**
   * Memory and occupancy.
   *
   * @example
   * table.stats().bytes <= budgetBytes // always
   */
  stats(): FingerprintTableStats {
    const gens = [this.current, this.previous].filter((g) => g !== undefined)
    const names = new Set(gens.flatMap((g) => g.names))
    return {
      entries: gens.reduce((sum, g) => sum + g.size, 0),
      bytes: gens.reduce((sum, g) => sum + g.arrayBytes + g.nameBytes, 0),
      tenants: names.size,
      dropped: this.dropped,
      entriesPerGeneration: this.maxEntries,
    }
  }

  /** A failed deferred add is its owner's error (thrown where it asks for the result), not the reader's. */
  private runDeferred(): void {
    for (const run of [...this.deferred]) {
      try {
        run()
      } catch {}
    }
  }

  private addOne(generation: Generation, id: number, stored: number, second: number): void {
    const slot = generation.find(stored)
    const base = slot * this.ownerSlots
    if (generation.keys[slot] !== 0) {
      if (!this.visible(generation.seen[slot]!, second)) {
        // Expired: it starts afresh with this sender alone.
        generation.owners.fill(NO_OWNER, base, base + this.ownerSlots)
      }
      this.addOwner(generation, base, id)
      generation.seen[slot] = Math.max(generation.seen[slot]!, second)
      return
    }
    if (generation.created[id]! >= this.quota) {
      this.dropped++
      return
    }
    generation.put(slot, stored)
    generation.seen[slot] = second
    generation.created[id]!++
    this.inherit(generation, base, stored, second)
    this.addOwner(generation, base, id)
  }

  /** A fingerprint already in the previous generation keeps its senders (and commonness). */
  private inherit(generation: Generation, base: number, stored: number, second: number): void {
    const previous = this.previous
    if (previous === undefined || !previous.mayHold(stored)) return
    const slot = previous.find(stored)
    if (previous.keys[slot] === 0 || !this.visible(previous.seen[slot]!, second)) return
    const from = slot * this.ownerSlots
    if (previous.owners[from] === COMMON) {
      generation.owners[base] = COMMON
      return
    }
    for (let i = 0; i < this.ownerSlots; i++) {
      const old = previous.owners[from + i]!
      const name = old >= 0 ? previous.names[old] : undefined
      if (name !== undefined && this.roomForName(generation, name)) {
        this.addOwner(generation, base, generation.idOf(name))
      }
    }
  }

  private addOwner(generation: Generation, base: number, id: number): void {
    const owners = generation.owners
    if (owners[base] === COMMON) return
    for (let i = 0; i < this.ownerSlots; i++) {
      const owner = owners[base + i]!
      if (owner === id) return
      if (owner === NO_OWNER) {
        owners[base + i] = id
        return
      }
    }
    // Every slot holds another tenant: this one is the commonAt-th.
    owners.fill(NO_OWNER, base, base + this.ownerSlots)
    owners[base] = COMMON
  }

  /** The generation to add to at `at`: rotated first when it is too old or its names are full. */
  private generationFor(at: number, tenant: string): Generation {
    const current = this.current
    if (current === undefined) {
      this.epoch = at
      this.current = new Generation(this.capacity, this.ownerSlots, at)
      return this.current
    }
    // At the ttl, not before: the generation it turns into is cleared a ttl later at the soonest, so
    // whatever went in stays visible its whole ttl (at half the ttl, some lived only half of it).
    const old = at - current.startedAt >= this.ttlMs
    if (old || current.size >= this.maxEntries || !this.roomForName(current, tenant)) {
      return this.rotate(at)
    }
    return current
  }

  private roomForName(generation: Generation, tenant: string): boolean {
    return generation.ids.has(tenant) || generation.nameBytes + nameCost(tenant) <= this.nameBudget
  }

  private rotate(at: number): Generation {
    this.rotated++
    const dropped = this.previous
    this.previous = this.current
    if (dropped === undefined) {
      this.current = new Generation(this.capacity, this.ownerSlots, at)
    } else {
      dropped.clear(at)
      this.current = dropped
    }
    return this.current
  }

  private visible(seen: number, nowSecond: number): boolean {
    return nowSecond - seen < this.ttlSeconds
  }

  private secondOf(at: number): number {
    const epoch = this.epoch ?? at
    return Math.max(0, Math.floor((at - epoch) / 1000))
  }

  /** The fingerprint xor the model's code, + 1: the same text under two models never matches. */
  private stored(hash: number, mlo: number, mhi: number): number {
    // `>>> 0` is the low 32 bits (ToUint32 reduces mod 2^32), without a floating-point remainder.
    const lo = ((hash >>> 0) ^ mlo) >>> 0
    const hi = (Math.floor(hash / TWO_32) ^ mhi) & 0xfffff
    return hi * TWO_32 + lo + 1
  }

  private modelCode(model: string): [number, number] {
    let code = this.models.get(model)
    if (code === undefined) {
      let a = 0x811c9dc5
      let b = 0x1b873593
      for (let i = 0; i < model.length; i++) {
        a = Math.imul(a ^ model.charCodeAt(i), 0x01000193)
        b = Math.imul(b ^ model.charCodeAt(i), 0x5bd1e995)
      }
      code = [(a ^ (a >>> 15)) >>> 0, (b ^ (b >>> 13)) & 0xfffff]
      if (this.models.size < 256) this.models.set(model, code)
    }
    return code
  }
}
