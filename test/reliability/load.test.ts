import { SELF } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { guardAi, MemoryQuarantineStore } from '../../src'
import { Guard } from '../../src/core/guard'
import { DEFAULT_PLUGINS } from '../../src/default-plugins'
import { chat, document } from '../support/prompts'
import { deliveredText } from '../support/surfaces'
import { KEY_A, KEY_B, sim } from '../support/worker'
import { MODEL, SECRET } from './upstreams'

/**
 * Many concurrent requests of mixed tenants, streaming and not: every answer carries only its own
 * request's marker (no cross-talk between requests in flight), and the only errors are the intended
 * ones. Bounded in count; the wall-clock bound is the test timeout, never a tight assertion.
 */
const MARK = /TENANT-[A-Z]-R\d{3}/g

/** Fixed width, so no marker is a prefix of another and a quote cut mid-marker matches none. */
const mark = (tenant: string, i: number): string =>
  `TENANT-${tenant}-R${String(i).padStart(3, '0')}`

/** The distinct request markers an answer carries. */
function markersIn(text: string): string[] {
  return [...new Set(text.match(MARK) ?? [])]
}

describe('concurrent requests through the Worker (SELF → simulator Worker)', {
  timeout: 30_000,
}, () => {
  it('should answer 48 concurrent requests each with its own content, and refuse the intended 8', async () => {
    await sim.reset({
      mode: 'fixed',
      prefillTokensPerSecond: 2_000_000,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    })
    const before = (await sim.stats()).requests.total
    const jobs = Array.from({ length: 48 }, (_, i) => {
      const [key, tenant] = i % 2 ? [KEY_B, 'B'] : [KEY_A, 'A']
      const marker = mark(tenant, i)
      const stream = i % 3 === 0
      return { marker, key, body: { model: MODEL, ...chat(document(marker, 600), { stream }) } }
    })
    // Intended refusals in the same burst: an output reserve beyond the pool, and an unknown key.
    const refused = Array.from({ length: 8 }, (_, i) => ({
      marker: mark('X', 100 + i),
      key: i % 2 ? KEY_A : 'not-a-tenant-key',
      body: { model: MODEL, ...chat(document(mark('X', 100 + i), 50)), max_tokens: 2 ** 24 },
    }))
    const results = await Promise.all(
      [...jobs, ...refused].map(async ({ marker, key, body }) => {
        const res = await SELF.fetch('http://guard.test/v1/chat/completions', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        return { marker, status: res.status, text: deliveredText(await res.text()) }
      }),
    )
    for (const r of results.slice(0, jobs.length)) {
      expect([r.marker, r.status]).toEqual([r.marker, 200])
      expect([r.marker, markersIn(r.text)]).toEqual([r.marker, [r.marker]])
    }
    for (const r of results.slice(jobs.length)) {
      expect([r.marker, r.status]).toEqual([
        r.marker,
        Number(r.marker.slice(-1)) % 2 === 0 ? 401 : 400,
      ])
      expect(r.text).not.toContain(r.marker)
    }
    // Refused requests never reached the model.
    expect((await sim.stats()).requests.total - before).toBe(jobs.length)
  }, 30_000)
})

describe('concurrent requests through guardAi over one shared engine', { timeout: 30_000 }, () => {
  it('should keep 200 concurrent requests of 8 tenants apart', async () => {
    const engine = new SimEngine({
      mode: 'fixed',
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    })
    const guard = new Guard({ secret: SECRET }, DEFAULT_PLUGINS)
    const tenants = 'ABCDEFGH'.split('')
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const tenant = tenants[i % tenants.length]!
        const marker = mark(tenant, i)
        const runner = guard.runner(engine.binding(`account-${tenant}`), `tenant-${tenant}`)
        const out = await runner.run(MODEL, chat(document(marker, 200), { stream: i % 2 === 0 }))
        const body =
          out instanceof ReadableStream
            ? await new Response(out as ReadableStream<Uint8Array>).text()
            : JSON.stringify(out)
        return { marker, markers: markersIn(deliveredText(body)) }
      }),
    )
    for (const r of results) expect([r.marker, r.markers]).toEqual([r.marker, [r.marker]])
    expect(engine.stats().requests.total).toBe(200)
  }, 30_000)

  it('should withhold every over-pool leak in a concurrent burst and release every in-pool answer intact', async () => {
    // The incident under load: the guard believes a 64k pool, the engine has 16k. Over-pool requests
    // are answered from other requests' stale pages; in-pool requests are served honestly.
    const engine = new SimEngine({
      mode: 'pd-abort-leak',
      poolTokens: 16_384,
      contextWindow: 65_536,
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
      queueTimeoutMs: 20_000,
    })
    const quarantine = new MemoryQuarantineStore()
    const options = {
      secret: SECRET,
      quarantine: { store: quarantine },
      models: {
        [MODEL]: { contextWindow: 65_536, kvPoolTokens: 65_536, defaultOutputReserve: 256 },
      },
    }
    const jobs = Array.from({ length: 24 }, (_, i) => {
      const tenant = i % 2 ? 'A' : 'B'
      const marker = mark(tenant, i)
      const over = i % 6 === 5
      return { marker, over, tokens: over ? 24_000 : 1_500, stream: i % 4 < 2 }
    })
    const results = await Promise.all(
      jobs.map(async ({ marker, over, tokens, stream }) => {
        const ai = guardAi(engine.binding('shared'), { ...options, tenant: marker.slice(0, 8) })
        try {
          const out = await ai.run(MODEL, chat(document(marker, tokens), { stream }))
          const body =
            out instanceof ReadableStream
              ? await new Response(out as ReadableStream<Uint8Array>).text()
              : JSON.stringify(out)
          return { marker, over, status: 200, markers: markersIn(deliveredText(body)) }
        } catch (error) {
          const e = error as { status: number; code: string; message: string }
          return { marker, over, status: e.status, code: e.code, markers: markersIn(e.message) }
        }
      }),
    )
    for (const r of results) {
      if (r.over)
        expect([r.marker, r.status, r.code]).toEqual([r.marker, 502, 'response_quarantined'])
      else expect([r.marker, r.status, r.markers]).toEqual([r.marker, 200, [r.marker]])
      // Whatever the outcome, no other request's marker reached this client.
      expect(r.markers.filter((m) => m !== r.marker)).toEqual([])
    }
    expect((await quarantine.list()).length).toBe(jobs.filter((j) => j.over).length)
  }, 30_000)
})
