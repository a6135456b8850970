/**
 * The D1 quarantine store under production D1's limits (src/worker/platform-limits.ts and
 * test/support/limited-d1.ts): rows and
 * values of at most 2,000,000 bytes, statements of 100 KB, 100 bound parameters, 1,000 queries per
 * invocation. Local D1 accepts larger rows, so the store runs here over a binding that refuses what
 * production refuses. A withheld answer is the model's whole output, reasoning included: in Han text
 * (three bytes a character) a long one is megabytes.
 */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import type { QuarantineRecord } from '../../src/core/vocabulary/quarantine'
import { limitedD1 } from '../support/limited-d1'

/**
 * Production's largest value or row, bytes: D1 and Durable Objects' SQLite refuse more (the figure
 * src/worker/platform-limits.ts states and its wrappers enforce).
 */
const MAX_VALUE_BYTES = 2_000_000

const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB
const KEY = 'k'.repeat(32)

function record(id: string, withheld: Record<string, string>, at = Date.now()): QuarantineRecord {
  return {
    id,
    at,
    tenant: 'tenant-b',
    model: '@cf/zai-org/glm-5.3',
    requestId: `req-${id}`,
    reasons: ['foreign_content'],
    figures: { contentRun: 40 },
    canaries: [],
    sourceTenants: ['tenant-a'],
    withheld,
  }
}

/** `chars` characters of Han text (3 bytes each in UTF-8), not repeating. */
function han(chars: number): string {
  let text = ''
  for (let i = 0; i < chars; i++) text += String.fromCodePoint(0x4e00 + ((i * 7_919) % 20_000))
  return text
}

describe('D1QuarantineStore under the platform limits', () => {
  it('should refuse what production D1 refuses, through the wrapper', async () => {
    const limited = limitedD1(db)
    await limited.exec('CREATE TABLE IF NOT EXISTS limits_probe (b BLOB)')
    const insert = limited.prepare('INSERT INTO limits_probe (b) VALUES (?)')
    expect(() => insert.bind(new ArrayBuffer(MAX_VALUE_BYTES + 1))).toThrow(/SQLITE_TOOBIG/)
    expect(() => limited.prepare(`SELECT 1 ${' '.repeat(100_000)}`)).toThrow(/statement too long/)
    const many = Array.from({ length: 101 }, () => '?').join(', ')
    expect(() => limited.prepare(`SELECT ${many}`).bind(...new Array(101).fill(1))).toThrow(
      /too many SQL variables/,
    )
    await insert.bind(new ArrayBuffer(1_000)).run()
  })

  it('should count queries per invocation, batches by their statements', async () => {
    const limited = limitedD1(db)
    const one = limited.prepare('SELECT 1')
    await limited.batch(Array.from({ length: 999 }, () => one))
    await one.first()
    await expect(async () => one.first()).rejects.toThrow(/too many queries/)
  })

  it('should keep and return a withheld answer of 1.2M Han characters (3.6 MB)', async () => {
    const store = new D1QuarantineStore(limitedD1(db), { key: KEY })
    const withheld = { reasoning: han(600_000), content: han(600_000) }
    expect(JSON.stringify(withheld).length * 3).toBeGreaterThan(MAX_VALUE_BYTES)
    await store.put(record('big-han', withheld))
    const back = await store.get('big-han')
    expect(back?.withheld).toEqual(withheld)
    expect((await store.list({ tenant: 'tenant-b' })).some((s) => s.id === 'big-han')).toBe(true)
  }, 60_000)

  it('should store an ordinary answer in its row, as before', async () => {
    const limited = limitedD1(db)
    const store = new D1QuarantineStore(limited, { key: KEY })
    await store.put(record('small', { content: 'a short answer' }))
    expect((await store.get('small'))?.withheld).toEqual({ content: 'a short answer' })
    const parts = await db
      .prepare('SELECT COUNT(*) AS n FROM incident_withheld WHERE id = ?')
      .bind('small')
      .first<{ n: number }>()
    expect(parts?.n).toBe(0)
    expect(limited.queries()).toBeLessThanOrEqual(5)
  })

  it("should delete a large record's parts with it when retention expires", async () => {
    const old = Date.now() - 3 * 86_400_000
    const store = new D1QuarantineStore(limitedD1(db), { key: KEY, retentionDays: 1 })
    await store.put(record('old-big', { content: han(800_000) }, old))
    await store.put(record('new-small', { content: 'fresh' }))
    expect(await store.get('old-big')).toBeUndefined()
    const parts = await db
      .prepare('SELECT COUNT(*) AS n FROM incident_withheld WHERE id = ?')
      .bind('old-big')
      .first<{ n: number }>()
    expect(parts?.n).toBe(0)
  }, 60_000)
})
