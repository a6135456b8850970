import { env, SELF } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { CANARY_PATTERN } from '../../src'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import type { QuarantineRecord } from '../../src/core/vocabulary/quarantine'
import { type OverviewSources, overviewData } from '../../src/worker/admin/data'
import { overview } from '../../src/worker/admin/pages/overview'
import type {
  MarginPoint,
  RefusalCount,
  SampleQuery,
  TelemetryReader,
  VerdictSample,
} from '../../src/worker/telemetry/types'
import { ADMIN } from '../support/worker'

const bindings = env as unknown as { QUARANTINE_DB: D1Database; QUARANTINE_KEY: string }
const store = new D1QuarantineStore(bindings.QUARANTINE_DB, { key: bindings.QUARANTINE_KEY })
const MODEL = '@cf/zai-org/glm-5.3'
const HOUR = 3_600_000

/** Canary-shaped strings: a whole one of ours, one in capitals, one cut short, one glued to a word. */
const CANARIES = [
  'cnry_0123456789abcdefghjkmnpq',
  'CNRY_ABCDEFGHJKMNPQRSTVWXYZ01',
  'cnry_7h3k',
  'xcnry_zzzzzzzzzzzzzzzzzzzzzzzz',
]

let serial = 0
function record(over: Partial<QuarantineRecord> = {}): QuarantineRecord {
  serial++
  return {
    id: `inc_test_${String(serial).padStart(4, '0')}`,
    at: Date.now() - serial * 1_000,
    tenant: 'tenant-b',
    model: MODEL,
    requestId: `req_${serial}`,
    reasons: ['foreign_canary', 'echo_missing'],
    figures: { estimatedTokens: 12_000, ttftMs: 3, expectedMinMs: 12, score: 1 },
    canaries: [
      { kind: 'foreign', tenantTag: 'a1b2c3d4e5', channel: 'content', tenants: ['tenant-a'] },
    ],
    sourceTenants: ['tenant-a'],
    withheld: { content: 'TENANT-A ledger line' },
    ...over,
  }
}

async function page(path: string): Promise<string> {
  const res = await SELF.fetch(`http://guard.test${path}`, {
    headers: { accept: 'text/html', authorization: `Bearer ${ADMIN}` },
  })
  expect([path, res.status]).toEqual([path, 200])
  return await res.text()
}

/** The incident ids of the list page's rows, in order. */
function rows(html: string): string[] {
  return [...html.matchAll(/<tr data-incident="([^"]+)"/g)].map((m) => m[1]!)
}

describe('incident detail', () => {
  it('should show the withheld text with every canary-shaped token redacted, reasons and guidance', async () => {
    const r = record({
      id: 'inc_redact',
      withheld: {
        reasoning: `thinking about ${CANARIES[0]} and ${CANARIES[1]}`,
        content: `TENANT-A payroll ${CANARIES[2]} end ${CANARIES[3]}`,
      },
      requestId: `req_${CANARIES[0]}`,
    })
    await store.put(r)
    const html = await page('/admin/incidents/inc_redact')
    expect(html).toContain('TENANT-A payroll [canary] end x[canary]')
    expect(html).toContain('thinking about [canary] and [canary]')
    expect(html).not.toMatch(/cnry_/i)
    expect(html).not.toMatch(new RegExp(CANARY_PATTERN.source, 'i'))
    // Reasons with their guidance; figures; the source tenant and the canary's tag owners.
    expect(html).toContain('data-reason="foreign_canary"')
    expect(html).toContain('Tell each source tenant')
    expect(html).toContain('data-reason="echo_missing"')
    expect(html).toMatch(/<dd id="sources">tenant-a<\/dd>/)
    expect(html).toContain('a1b2c3d4e5')
    expect(html).toContain('12,000')
    // The JSON API still returns the record as stored (its callers are trusted scripts).
    const json = await SELF.fetch('http://guard.test/admin/incidents/inc_redact', {
      headers: { authorization: `Bearer ${ADMIN}` },
    })
    expect(((await json.json()) as QuarantineRecord).withheld.content).toContain(CANARIES[2])
  })

  it('should render hostile tenant, model and text inert', async () => {
    const hostile = '<script>alert(1)</script>'
    const attr = '"><img src=x onerror=alert(2)>'
    await store.put(
      record({
        id: 'inc_hostile',
        tenant: hostile,
        model: attr,
        sourceTenants: [`</pre>${hostile}`],
        reasons: ['<b>new_reason</b>'],
        withheld: { [`tool:${attr}`]: `</pre><script>alert(3)</script>` },
      }),
    )
    for (const path of [
      '/admin/incidents/inc_hostile',
      `/admin/incidents?tenant=${encodeURIComponent(hostile)}`,
      `/admin/incidents?model=${encodeURIComponent(attr)}&source=${encodeURIComponent(`</pre>${hostile}`)}`,
      `/admin/?model=${encodeURIComponent(attr)}`,
    ]) {
      const html = await page(path)
      expect([path, html.includes('<script')]).toEqual([path, false])
      expect([path, html.includes('<img')]).toEqual([path, false])
      expect([path, html.includes('<b>')]).toEqual([path, false])
      if (path.includes('incidents'))
        expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    }
  })
})

describe('incident list', () => {
  it('should filter by time, tenant, source tenant, reason and model', async () => {
    const base = Math.floor(Date.now() / (24 * HOUR) - 6) * 24 * HOUR + 12 * HOUR
    const day = (d: number) => new Date(base + d * 24 * HOUR).toISOString().slice(0, 10)
    const fixtures = [
      record({ id: 'inc_f1', at: base, tenant: 'filter-t1', sourceTenants: ['filter-s1'] }),
      record({
        id: 'inc_f2',
        at: base - 2 * 24 * HOUR,
        tenant: 'filter-t1',
        sourceTenants: ['filter-s2'],
        reasons: ['ttft_impossible', 'echo_missing'],
      }),
      record({ id: 'inc_f3', at: base - HOUR, tenant: 'filter-t2', model: '@cf/meta/other-model' }),
      record({ id: 'inc_f4', at: base - 5 * 24 * HOUR, tenant: 'filter-t2', sourceTenants: [] }),
    ]
    for (const r of fixtures) await store.put(r)
    const q = (params: Record<string, string>) =>
      page(
        `/admin/incidents?${new URLSearchParams({ since: day(-10), until: day(3), ...params })}`,
      ).then(rows)
    expect(await q({})).toEqual(['inc_f1', 'inc_f3', 'inc_f2', 'inc_f4'])
    expect(await q({ tenant: 'filter-t1' })).toEqual(['inc_f1', 'inc_f2'])
    expect(await q({ source: 'filter-s2' })).toEqual(['inc_f2'])
    expect(await q({ reason: 'ttft_impossible' })).toEqual(['inc_f2'])
    expect(await q({ model: '@cf/meta/other-model' })).toEqual(['inc_f3'])
    expect(await q({ tenant: 'filter-t2', model: MODEL })).toEqual(['inc_f4'])
    // Dates are UTC days; `until` includes its whole day.
    expect(await q({ since: day(0), until: day(0) })).toEqual(['inc_f1', 'inc_f3'])
    expect(await q({ since: day(-2), until: day(-2) })).toEqual(['inc_f2'])
    expect(await q({ tenant: 'nobody' })).toEqual([])
    expect(await page('/admin/incidents?tenant=nobody')).toContain(
      'No incidents match these filters.',
    )
    // The form keeps the filters it was sent.
    const html = await page('/admin/incidents?tenant=filter-t1&reason=ttft_impossible')
    expect(html).toContain('name="tenant" value="filter-t1"')
    expect(html).toContain('<option value="ttft_impossible" selected>')
  })

  it('should page 50 rows at a time through the Older link, without repeats or gaps', async () => {
    const base = Date.now() - 20 * 24 * HOUR
    const ids: string[] = []
    for (let i = 0; i < 73; i++) {
      // Some share a millisecond: the cursor must order them by id too.
      const r = record({
        id: `inc_page_${String(i).padStart(3, '0')}`,
        at: base - Math.floor(i / 3),
        tenant: 'pager',
      })
      ids.push(r.id)
      await store.put(r)
    }
    const first = await page('/admin/incidents?tenant=pager')
    expect(rows(first)).toHaveLength(50)
    const next = /id="next-page" href="([^"]+)"/.exec(first)![1]!.replace(/&amp;/g, '&')
    const second = await page(next)
    expect(second).not.toContain('id="next-page"')
    expect([...rows(first), ...rows(second)]).toEqual(ids)
  })
})

/** The attributes of one tag. */
function attributes(tag: string): Record<string, string> {
  return Object.fromEntries([...tag.matchAll(/([\w-]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]))
}

/** A TelemetryReader over fixed samples, as H1's D1 reader answers. */
function fixtureTelemetry(
  samples: VerdictSample[],
  refusals: RefusalCount[],
  margins: MarginPoint[],
): TelemetryReader {
  const within = (at: number, q: Omit<SampleQuery, 'limit'>) =>
    (q.since === undefined || at >= q.since) && (q.until === undefined || at <= q.until)
  return {
    samples: async (q) => samples.filter((s) => within(s.at, q)).slice(0, q.limit ?? 1000),
    refusals: async () => refusals,
    marginHistory: async (q) => margins.filter((m) => within(m.at, q)),
  }
}

describe('overview', () => {
  it('should plot released and withheld answers against the physical line, with data attributes', async () => {
    const now = Date.UTC(2026, 10, 30, 12)
    const sample = (
      tokens: number,
      ttftMs: number,
      action: VerdictSample['action'],
      incidentId?: string,
    ) => ({
      at: now - HOUR,
      model: MODEL,
      tenant: 'tenant-a',
      action,
      reasons: action === 'release' ? [] : ['ttft_impossible'],
      estimatedTokens: tokens,
      ttftMs,
      // A withheld answer here was judged on its timing: the minimum for its tokens at 1M/s.
      ...(action === 'release' ? {} : { expectedMinMs: tokens / 1_000 }),
      weight: 1,
      ...(incidentId ? { incidentId } : {}),
    })
    const telemetry = fixtureTelemetry(
      [
        sample(10_000, 40, 'release'),
        sample(200_000, 900, 'release'),
        sample(300_000, 4, 'quarantine', 'inc_fast'),
        // The ceiling's estimate (400k) is an upper bound; the timing guard charged its lower count,
        // 300k uncached tokens (300 ms at 1M/s): released at 350 ms, it is plotted above the line.
        { ...sample(400_000, 350, 'release'), expectedMinMs: 300 },
        // Not judged (a prompt too short for the bound to matter), its byte bound far to the right:
        // plotted no further right than where the line meets its 20 ms, never under the line.
        { ...sample(100_000, 20, 'release'), estimatedTokens: undefined, tokenBound: 100_000 },
      ],
      [
        { reason: 'context_length_exceeded', script: 'cjk', count: 7 },
        { reason: 'context_length_exceeded', script: 'latin', count: 2 },
      ],
      [
        { at: now - 3 * HOUR, model: MODEL, script: 'cjk', margin: 0.04 },
        { at: now - HOUR, model: MODEL, script: 'cjk', margin: 0.09 },
      ],
    )
    const incidents = [
      record({
        id: 'inc_fast',
        at: now - HOUR,
        figures: { estimatedTokens: 300_000, ttftMs: 4, expectedMinMs: 300 },
      }),
      record({
        id: 'inc_only_store',
        at: now - 2 * HOUR,
        figures: { estimatedTokens: 50_000, ttftMs: 2, expectedMinMs: 50 },
      }),
    ]
    const sources: OverviewSources = {
      store: {
        put: async () => {},
        get: async () => undefined,
        list: async () => incidents.map(({ withheld: _, ...summary }) => summary),
        counts: async () => ({}),
      },
      telemetry,
      profileRate: () => 1_000_000,
      calibration: async () => ({
        [MODEL]: {
          margins: { cjk: 0.09 },
          classes: {},
          observations: 3,
          ignored: {},
          timing: { 'latin:4': { tenants: 3, minMsPer100k: 400 } },
        } as never,
      }),
    }
    const html = String(await overview(await overviewData(sources, { now, days: 14 })))
    const line =
      /<line class="bound" data-line="physical" data-tokens-per-second="1000000" x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)"/.exec(
        html,
      )!
    const [x1, y1, x2, y2] = line.slice(1).map(Number) as [number, number, number, number]
    const lineY = (x: number) => y1 + ((x - x1) / (x2 - x1)) * (y2 - y1)
    const points = [...html.matchAll(/<(?:circle|path) class="pt [^>]*>/g)].map((m) => {
      const at = attributes(m[0])
      return {
        action: at['data-action'],
        tokens: Number(at['data-tokens']),
        incident: at['data-incident'],
        x: Number(at.cx ?? at['data-cx']),
        y: Number(at.cy ?? at['data-cy']),
      }
    })
    expect(points.map((p) => [p.action, p.tokens, p.incident ?? null])).toEqual([
      ['release', 10_000, null],
      ['release', 200_000, null],
      ['quarantine', 300_000, 'inc_fast'],
      ['release', 300_000, null],
      ['release', 20_000, null],
      ['quarantine', 50_000, 'inc_only_store'], // in the store, not sampled: plotted once all the same
    ])
    // SVG y grows downwards: under the line (faster than physics) is a larger y.
    const under = points.filter((p) => p.y > lineY(p.x)).map((p) => p.tokens)
    expect(under).toEqual([300_000, 50_000])
    expect(html).toContain('href="/admin/incidents/inc_fast"')
    expect(html).toContain('data-line="baseline" data-script="latin" data-ms-per-100k="400"')
    expect(html).toContain('data-series="cjk" data-last="0.09"')
    expect(html).toMatch(/data-count="7" data-reason="context_length_exceeded" data-script="cjk"/)
    expect(html).toContain('2 answers of @cf/zai-org/glm-5.3 came faster than a physical prefill')
  })

  it('should count incidents per day by reason through the Worker', async () => {
    await store.put(record({ id: 'inc_today', at: Date.now(), reasons: ['foreign_content'] }))
    const html = await page('/admin/?days=1')
    const today = new Date().toISOString().slice(0, 10)
    expect(html).toMatch(
      new RegExp(`data-day="${today}" data-reason="foreign_content" data-count="\\d+"`),
    )
    expect(html).toContain('data-line="physical"')
  })
})

describe('secrets', () => {
  it('should put no secret on any page', async () => {
    const secrets = env as unknown as Record<string, string>
    await store.put(record({ id: 'inc_secrets' }))
    const pages = await Promise.all(
      ['/admin/', '/admin/incidents', '/admin/incidents/inc_secrets'].map(page),
    )
    const login = await (await SELF.fetch('http://guard.test/admin/login')).text()
    for (const html of [...pages, login]) {
      for (const name of ['ADMIN_SECRET', 'GUARD_SECRET', 'QUARANTINE_KEY', 'TENANT_KEYS']) {
        expect([name, html.includes(secrets[name]!)]).toEqual([name, false])
      }
      expect(html).not.toContain('dev-key-tenant')
    }
  })
})
