/**
 * The FingerprintLog under production's storage limits (src/worker/platform-limits.ts): local workerd
 * stores 8 MB BLOBs, production refuses 2 MB, so the log runs here over a `storage.sql` that refuses
 * what production refuses. The prompts are the densest the guard admits: one-letter words (a unit per
 * two characters), Han text (a unit per character) and English, each printed for real.
 */
import { env, runInDurableObject } from 'cloudflare:test'
import { beforeAll, describe, expect, it } from 'vitest'
import { prng } from '../../sim/random'
import { contentSeed, importCanaryKey } from '../../src/core/canary'
import {
  FINGERPRINT_DEFAULTS,
  type FingerprintBatch,
  type FingerprintKey,
  fingerprintKey,
  printPrompt,
} from '../../src/plugins/foreign-content'
import { FingerprintLog } from '../../src/worker/fingerprint-log'
import { limitedSql } from '../../src/worker/platform-limits'

/**
 * Production's largest value or row, bytes: D1 and Durable Objects' SQLite refuse more (the figure
 * src/worker/platform-limits.ts states and its wrappers enforce).
 */
const MAX_VALUE_BYTES = 2_000_000

const namespace = (env as unknown as { FINGERPRINTS: DurableObjectNamespace<FingerprintLog> })
  .FINGERPRINTS

let key: FingerprintKey
beforeAll(async () => {
  key = fingerprintKey(await contentSeed(await importCanaryKey('x'.repeat(32))))
})

/** Words drawn at random from `alphabet`, `count` of them, joined by `sep`. */
function words(seed: number, alphabet: string, count: number, sep: string): string {
  const random = prng(seed)
  const chars = [...alphabet]
  const out: string[] = new Array(count)
  for (let i = 0; i < count; i++) out[i] = chars[Math.floor(random() * chars.length)]!
  return out.join(sep)
}

/**
 * Runs `work` on a FingerprintLog of its own whose SQL storage refuses what production refuses (the
 * instance the namespace made keeps its own storage; this one shares it, wrapped).
 */
async function underLimits<T>(name: string, work: (log: FingerprintLog) => Promise<T>): Promise<T> {
  const stub = namespace.get(namespace.idFromName(`limits:${name}`))
  return runInDurableObject(stub, async (_instance, state) => {
    const storage = new Proxy(state.storage, {
      get(target, property) {
        if (property === 'sql') return limitedSql(target.sql)
        const value: unknown = Reflect.get(target, property, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const ctx = new Proxy(state, {
      get(target, property) {
        if (property === 'storage') return storage
        const value: unknown = Reflect.get(target, property, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    // The runtime constructs only with a real state: the wrapped one is put in its place after.
    const log = new FingerprintLog(state, env)
    Object.defineProperty(log, 'ctx', { value: ctx })
    return work(log)
  })
}

/** Every fingerprint stored, read page by page from the start. */
async function everything(log: FingerprintLog): Promise<number[]> {
  const all: number[] = []
  let cursor = 0
  for (;;) {
    const page = await log.since('m', cursor)
    if (page.batches.length === 0) return all
    for (const b of page.batches) for (const h of b.hashes) all.push(h)
    cursor = page.cursor
  }
}

describe('FingerprintLog under the platform limits', () => {
  it('should refuse a 2 MB value through the wrapper, as production does', async () => {
    await underLimits('wrapper', async (log) => {
      const sql = (log as unknown as { ctx: DurableObjectState }).ctx.storage.sql
      sql.exec('CREATE TABLE IF NOT EXISTS t (b BLOB)')
      expect(() =>
        sql.exec('INSERT INTO t (b) VALUES (?)', new ArrayBuffer(MAX_VALUE_BYTES + 1)),
      ).toThrow(/SQLITE_TOOBIG/)
      sql.exec('INSERT INTO t (b) VALUES (?)', new ArrayBuffer(MAX_VALUE_BYTES))
    })
  })

  const prompts: [string, () => string][] = [
    // 657k one-letter words: the densest prompt, 2,102,984 B of fingerprints.
    ['one-letter words', () => words(1, 'abcdefghijklmnopqrstuvwxyz', 660_000, ' ')],
    [
      'Han text',
      () => words(2, '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年', 640_000, ''),
    ],
  ]
  for (const [script, make] of prompts) {
    it(`should store and return every fingerprint of a maximal prompt of ${script}`, async () => {
      const selected = printPrompt(key, [make()], FINGERPRINT_DEFAULTS).selected
      // The test means something only if one BLOB of them would be over the limit.
      expect(selected.length * 8).toBeGreaterThan(MAX_VALUE_BYTES)
      const batch: FingerprintBatch = {
        model: 'm',
        tenant: 'dense',
        at: Date.now(),
        hashes: selected,
      }
      const stored = await underLimits(script, async (log) => {
        await log.publish(batch)
        return everything(log)
      })
      expect(stored.length).toBe(selected.length)
      expect(new Set(stored)).toEqual(new Set(selected))
    }, 120_000)
  }
})
