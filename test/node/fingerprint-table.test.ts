import { describe, expect, it } from 'vitest'
import { prng } from '../../sim/random'
import { FingerprintTable, foreignContentPlugin } from '../../src/plugins/foreign-content'

const MODEL = '@cf/zai-org/glm-5.3'
const MIB = 1024 * 1024
const HOUR = 3_600_000

/** Random 52-bit hashes, as fingerprints are. */
function hashes(seed: number, count: number): number[] {
  const next = prng(seed)
  return Array.from(
    { length: count },
    () => Math.floor(next() * 2 ** 20) * 2 ** 32 + Math.floor(next() * 2 ** 32),
  )
}

describe('fingerprint table', () => {
  it('should name the tenants that sent a fingerprint, per model', () => {
    const table = new FingerprintTable({ budgetBytes: MIB })
    const [a, b] = hashes(1, 2) as [number, number]
    table.add(MODEL, 'acme', [a], 0)
    expect(table.lookup(MODEL, a, 1000)).toEqual({ tenants: ['acme'], common: false })
    expect(table.lookup(MODEL, b, 1000)).toBeUndefined()
    // The same text under another model never matches.
    expect(table.lookup('@cf/other', a, 1000)).toBeUndefined()
    table.add('@cf/other', 'globex', [a], 0)
    expect(table.lookup('@cf/other', a, 1000)).toEqual({ tenants: ['globex'], common: false })
    expect(table.lookup(MODEL, a, 1000)).toEqual({ tenants: ['acme'], common: false })
  })

  it('should make a deferred add before the next lookup, once, and give its owner the result', () => {
    const table = new FingerprintTable({ budgetBytes: MIB })
    const [a, b] = hashes(11, 2) as [number, number]
    let runs = 0
    const made = table.defer(() => {
      runs++
      table.add(MODEL, 'acme', [a], 0)
      return 'printed'
    })
    expect(runs).toBe(0)
    // Any lookup — even of another fingerprint — first makes what was registered before it.
    expect(table.lookup(MODEL, b, 1000)).toBeUndefined()
    expect(runs).toBe(1)
    expect(table.lookup(MODEL, a, 1000)).toEqual({ tenants: ['acme'], common: false })
    expect(made()).toBe('printed')
    expect(made()).toBe('printed')
    expect(runs).toBe(1)
    // Made by its owner first: the next lookup has nothing left to do.
    const later = table.defer(() => {
      runs++
      table.add(MODEL, 'globex', [b], 0)
    })
    later()
    expect(table.lookup(MODEL, b, 1000)).toEqual({ tenants: ['globex'], common: false })
    expect(runs).toBe(2)
  })

  it('should leave a failed deferred add to its owner, never to the reader that ran it', () => {
    const table = new FingerprintTable({ budgetBytes: MIB })
    const [a] = hashes(12, 1) as [number]
    const failing = table.defer(() => table.add(MODEL, 'x'.repeat(2000), [a], 0))
    expect(table.lookup(MODEL, a, 1000)).toBeUndefined()
    expect(() => failing()).toThrow(/tenant ids longer/)
    expect(() => failing()).toThrow(/tenant ids longer/)
  })

  it('should call a fingerprint common once commonAt distinct tenants sent it', () => {
    const table = new FingerprintTable({ budgetBytes: MIB, commonAt: 3 })
    const [h] = hashes(2, 1) as [number]
    table.add(MODEL, 'a', [h], 0)
    table.add(MODEL, 'a', [h], 10) // the same tenant again: still one sender
    table.add(MODEL, 'b', [h], 20)
    expect(table.lookup(MODEL, h, 30)).toEqual({ tenants: ['a', 'b'], common: false })
    table.add(MODEL, 'c', [h], 40)
    expect(table.lookup(MODEL, h, 50)).toEqual({ tenants: [], common: true })
  })

  it('should hide what is older than the ttl, and start a sender list afresh after it', () => {
    const table = new FingerprintTable({ budgetBytes: MIB, ttlMs: HOUR })
    const [h, g] = hashes(3, 2) as [number, number]
    table.add(MODEL, 'a', [h], 0)
    table.add(MODEL, 'b', [g], 0)
    expect(table.lookup(MODEL, h, HOUR - 1000)).toBeDefined()
    expect(table.lookup(MODEL, h, HOUR + 1000)).toBeUndefined()
    // Sent again by a: visible again, counted from then.
    table.add(MODEL, 'a', [h], HOUR + 2000)
    expect(table.lookup(MODEL, h, 2 * HOUR)).toEqual({ tenants: ['a'], common: false })
    // An expired sender does not make a later one common.
    table.add(MODEL, 'c', [g], 2 * HOUR)
    expect(table.lookup(MODEL, g, 2 * HOUR)).toEqual({ tenants: ['c'], common: false })
  })

  it('should keep senders and commonness across a rotation', () => {
    const table = new FingerprintTable({ budgetBytes: MIB, ttlMs: HOUR })
    const [h] = hashes(4, 1) as [number]
    table.add(MODEL, 'a', [h], 0)
    table.add(MODEL, 'b', [h], HOUR / 2 + 1000)
    expect(table.lookup(MODEL, h, HOUR / 2 + 2000)).toEqual({ tenants: [], common: true })
    // One generation until the first rotation: memory admission counts only a second one as held.
    expect(table.secondGenerationBytes).toBe(0)
    const one = table.stats().bytes
    // Past the ttl the next add rotates: h now lives in the previous generation.
    const rotations = table.rotations
    table.add(MODEL, 'z', hashes(5, 10), HOUR + 1000)
    expect(table.rotations).toBe(rotations + 1)
    expect(table.lookup(MODEL, h, HOUR + 1000)).toEqual({ tenants: [], common: true })
    // The second generation is as large as the first (names aside), and kept through later rotations.
    const second = table.secondGenerationBytes
    expect(second).toBeGreaterThan(MIB / 4)
    expect(second).toBeLessThanOrEqual(one)
    table.add(MODEL, 'y', hashes(6, 10), 3 * HOUR)
    expect(table.rotations).toBe(rotations + 2)
    expect(table.secondGenerationBytes).toBe(second)
  })

  it('should report its second generation as what the content check holds beyond its first', () => {
    const host = {
      secret: 's'.repeat(32),
      key: () => Promise.reject(new Error('unused')),
      now: () => 0,
    }
    const content = foreignContentPlugin.create({ ttlMs: HOUR, budgetBytes: MIB }, host)
    if (!content) throw new Error('the content check is on by default')
    // The plug-in's book, which the core's face of it does not show.
    const { table } = (content as unknown as { book: { table: FingerprintTable } }).book
    table.add(MODEL, 'a', hashes(7, 10), 0)
    expect(content.heldBytes?.()).toBe(0)
    table.add(MODEL, 'b', hashes(8, 10), HOUR + 1000)
    expect(content.heldBytes?.()).toBe(table.secondGenerationBytes)
    expect(content.heldBytes?.()).toBeGreaterThan(MIB / 4)
  })

  it('should keep every fingerprint visible for its whole ttl, however the generations rotate', () => {
    const table = new FingerprintTable({ budgetBytes: MIB, ttlMs: HOUR })
    const [h] = hashes(6, 1) as [number]
    // Sent at 0.4 of the ttl into a generation begun at 0; others keep sending every minute.
    table.add(MODEL, 'x', hashes(7, 10), 0)
    table.add(MODEL, 'a', [h], 0.4 * HOUR)
    for (let at = 0.4 * HOUR; at <= 1.39 * HOUR; at += 60_000) {
      table.add(MODEL, 'x', hashes(Math.round(at), 10), at)
    }
    expect(table.rotations).toBeGreaterThan(0)
    expect(table.lookup(MODEL, h, 1.39 * HOUR)).toEqual({ tenants: ['a'], common: false })
    // And not a second past it.
    expect(table.lookup(MODEL, h, 1.4 * HOUR + 1000)).toBeUndefined()
  })

  it('should never exceed its budget, whatever is sent', () => {
    for (const budget of [64 * 1024, MIB, 16 * MIB]) {
      const table = new FingerprintTable({ budgetBytes: budget })
      const next = prng(budget)
      for (let i = 0; i < 40; i++) {
        const tenant = `tenant-${Math.floor(next() * 1e9)}-${'x'.repeat(Math.floor(next() * 300))}`
        table.add(MODEL, tenant, hashes(i, 20_000), i * 1000)
        expect(table.stats().bytes).toBeLessThanOrEqual(budget)
      }
    }
    // Many tenants with long names: the name table is bounded too.
    const table = new FingerprintTable({ budgetBytes: 64 * 1024 })
    for (let i = 0; i < 5000; i++) table.add(MODEL, `t${i}${'n'.repeat(900)}`, hashes(i, 2), i)
    expect(table.stats().bytes).toBeLessThanOrEqual(64 * 1024)
  })

  it('should keep other tenants\u2019 recent fingerprints when one tenant floods (its share is capped)', () => {
    const table = new FingerprintTable({ budgetBytes: 16 * MIB, ttlMs: HOUR })
    const victims = Array.from({ length: 50 }, (_, i) => ({
      tenant: `v${i}`,
      hashes: hashes(100 + i, 2000),
    }))
    for (const v of victims) table.add(MODEL, v.tenant, v.hashes, 0)
    // One tenant sends two million fingerprints, in prompts spread over a generation's time.
    for (let i = 0; i < 20; i++) table.add(MODEL, 'flood', hashes(10_000 + i, 100_000), i * 5000)
    const stats = table.stats()
    expect(stats.dropped).toBeGreaterThan(1_800_000) // all but its third of a generation
    expect(stats.bytes).toBeLessThanOrEqual(16 * MIB)
    for (const v of victims) {
      for (const h of v.hashes.slice(0, 50)) {
        expect(table.lookup(MODEL, h, 100_000)?.tenants).toEqual([v.tenant])
      }
    }
  })

  it('should state what the budget holds', () => {
    const stats = new FingerprintTable({ budgetBytes: 16 * MIB }).stats()
    // 16.5625-byte slots (16, 4 filter bits and half a summary bit), two generations, 70% load,
    // 1/16 for tenant names.
    expect(stats.entriesPerGeneration).toBe(332_378)
  })
})
