import { env } from 'cloudflare:test'
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest'
import type { VerdictLog } from '../../src'
import { DurableCalibration } from '../../src/worker/durable-calibration'
import type { Env } from '../../src/worker/env'
import { metricsResponse } from '../../src/worker/metrics'
import { D1Telemetry } from '../../src/worker/telemetry/d1-telemetry'
import { keepSample, OTHER, sampleWeight } from '../../src/worker/telemetry/verdict-rows'
import { recordVerdict, telemetryFor } from '../../src/worker/telemetry/worker-telemetry'
import { chat } from '../support/prompts'
import { KEY_A, post } from '../support/worker'

/** Margin history points kept per model, the oldest dropped first (docs/telemetry.md; src/worker/state.ts). */
const MARGIN_HISTORY_POINTS = 512

/**
 * D1Telemetry over the real local D1, driven directly: sampling and its weights, retention and the row
 * cap, labels a tenant cannot inflate, the background write's failure path, and the margin history.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const workerEnv = env as unknown as Env
const db = workerEnv.QUARANTINE_DB!

function release(requestId: string, overrides: Partial<VerdictLog> = {}): VerdictLog {
  return {
    requestId,
    tenant: 'tenant-s',
    model: MODEL,
    action: 'release',
    reasons: [],
    ttftMs: 900,
    ...overrides,
  }
}

async function rows(sql: string, ...args: (string | number)[]): Promise<Record<string, unknown>[]> {
  return (
    await db
      .prepare(sql)
      .bind(...args)
      .all<Record<string, unknown>>()
  ).results
}

beforeEach(async () => {
  await db.batch([
    db.prepare('DELETE FROM verdict_samples'),
    db.prepare('DELETE FROM verdict_counters'),
    db.prepare('DELETE FROM verdict_histograms'),
  ])
})

describe('sampling', () => {
  it('should keep every refusal and quarantine, releases at the rate, each release weighing 1/rate', async () => {
    const telemetry = new D1Telemetry(db, { sampleRate: 0.1 })
    const n = 2_000
    for (let i = 0; i < n; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          telemetry.record(release(crypto.randomUUID(), { tenant: `t${i + j}` })),
        ),
      )
    }
    for (let i = 0; i < 20; i++) {
      await telemetry.record(
        release(`reject-${i}`, {
          action: 'reject',
          reasons: ['context_length_exceeded'],
          ttftMs: undefined,
        }),
      )
      await telemetry.record(
        release(`q-${i}`, {
          action: 'quarantine',
          reasons: ['foreign_canary'],
          incidentId: `inc-${i}`,
        }),
      )
    }
    const samples = await telemetry.samples({ limit: 10_000 })
    const released = samples.filter((s) => s.action === 'release')
    // Binomial(2000, 0.1): mean 200, sd 13.4; ±60 is over 4 sd.
    expect(released.length).toBeGreaterThan(140)
    expect(released.length).toBeLessThan(260)
    expect(released.every((s) => s.weight === 10)).toBe(true)
    const estimate = released.reduce((sum, s) => sum + s.weight, 0)
    expect(Math.abs(estimate - n) / n).toBeLessThan(0.3)
    expect(samples.filter((s) => s.action === 'reject')).toHaveLength(20)
    expect(samples.filter((s) => s.action === 'quarantine')).toHaveLength(20)
    expect(samples.filter((s) => s.action !== 'release').every((s) => s.weight === 1)).toBe(true)
    // The counters and histograms are exact whatever the rate.
    const { counters, histograms } = await telemetry.metrics()
    const clean = counters.find((c) => c.metric === 'verdicts' && c.action === 'release')
    expect(clean?.value).toBe(n)
    const ttft = histograms.filter((h) => h.metric === 'ttft').reduce((s, h) => s + h.count, 0)
    expect(ttft).toBe(n + 20)
  }, 60_000)

  it('should decide by request id alone: the same request is always kept or always not', () => {
    const ids = Array.from({ length: 500 }, (_, i) => `req-${i}`)
    const first = ids.map((id) => keepSample({ action: 'release', requestId: id }, 0.25))
    const again = ids.map((id) => keepSample({ action: 'release', requestId: id }, 0.25))
    expect(again).toEqual(first)
    // Ids that differ in their last character still spread (the hash avalanches).
    const kept = first.filter(Boolean).length
    expect(kept).toBeGreaterThan(80)
    expect(kept).toBeLessThan(170)
    expect(keepSample({ action: 'quarantine', requestId: 'x' }, 0)).toBe(true)
    expect(keepSample({ action: 'release', requestId: 'x' }, 0)).toBe(false)
    expect(sampleWeight('release', 0.25)).toBe(4)
    expect(sampleWeight('reject', 0.25)).toBe(1)
  })

  it('should refuse a rate outside 0 to 1 at construction, naming the option', () => {
    expect(() => new D1Telemetry(db, { sampleRate: 1.5 })).toThrow('sampleRate')
    expect(() => new D1Telemetry(db, { sampleRate: Number.NaN })).toThrow('sampleRate')
    expect(() => new D1Telemetry(db, { maxSamples: 0 })).toThrow('maxSamples')
  })
})

describe('reading', () => {
  it('should count refusals per reason and script in a window and for a model, none for no script', async () => {
    let now = Date.UTC(2026, 0, 1)
    const telemetry = new D1Telemetry(db, { models: [MODEL], now: () => now })
    const refuse = (id: string, reasons: string[], scripts?: string[], model = MODEL) =>
      telemetry.record(
        release(id, {
          action: 'reject',
          reasons,
          model,
          ttftMs: undefined,
          ...(scripts ? { scripts } : {}),
        }),
      )
    await refuse('a', ['context_length_exceeded'], ['han', 'latin'])
    await refuse('b', ['echo_cut_off'])
    now += 60_000
    await refuse('c', ['context_length_exceeded'], ['han'])
    await refuse('d', ['context_length_exceeded'], ['han'], '@cf/other/model')
    await telemetry.record(release('e'))
    expect(await telemetry.refusals({})).toEqual([
      { reason: 'context_length_exceeded', script: 'han', count: 3 },
      { reason: 'context_length_exceeded', script: 'latin', count: 1 },
      { reason: 'echo_cut_off', script: 'none', count: 1 },
    ])
    expect(await telemetry.refusals({ since: now, model: MODEL })).toEqual([
      { reason: 'context_length_exceeded', script: 'han', count: 1 },
    ])
    expect(await telemetry.refusals({ until: now - 1 })).toHaveLength(3)
    const samples = await telemetry.samples({ model: '@cf/other/model' })
    expect(samples.map((s) => s.scripts)).toEqual([['han']])
    expect((await telemetry.samples({ limit: 2 })).map((s) => s.action)).toEqual([
      'release',
      'reject',
    ])
  })

  it('should read refusals through the partial index of non-releases, never the whole table', async () => {
    const plan = await rows(
      `EXPLAIN QUERY PLAN SELECT COUNT(*) FROM verdict_samples
       WHERE action != 'release' AND action = 'reject' AND at >= ?`,
      0,
    )
    expect(JSON.stringify(plan)).toContain('verdict_samples_unreleased')
  })
})

describe('retention', () => {
  it('should delete samples older than the retention on write, and all of them on prune', async () => {
    let now = Date.UTC(2026, 0, 1)
    const telemetry = new D1Telemetry(db, { retentionDays: 7, now: () => now })
    for (let i = 0; i < 50; i++) await telemetry.record(release(`old-${i}`))
    now += 8 * 86_400_000
    await telemetry.record(release('new-0'))
    // One write deletes at most 32 expired rows: bounded work per verdict.
    expect((await rows('SELECT COUNT(*) AS n FROM verdict_samples'))[0]!.n).toBe(50 + 1 - 32)
    expect(await telemetry.prune()).toBe(18)
    const left = await telemetry.samples({})
    expect(left).toHaveLength(1)
    expect(left[0]!.at).toBe(now)
    // Counters are totals since the start, never pruned (Prometheus computes rates from them).
    const { counters } = await telemetry.metrics()
    expect(counters.find((c) => c.metric === 'verdicts')?.value).toBe(51)
  })

  it('should keep at most maxSamples rows, the newest', async () => {
    let now = Date.UTC(2026, 0, 1)
    const telemetry = new D1Telemetry(db, { maxSamples: 5, now: () => now++ })
    for (let i = 0; i < 20; i++) {
      await telemetry.record(release(`r-${i}`, { estimatedTokens: i }))
      expect(
        Number((await rows('SELECT COUNT(*) AS n FROM verdict_samples'))[0]!.n),
      ).toBeLessThanOrEqual(5)
    }
    const left = await telemetry.samples({})
    expect(left.map((s) => s.estimatedTokens)).toEqual([19, 18, 17, 16, 15])
  })
})

describe('label cardinality against a hostile tenant', () => {
  const HOSTILE = (i: number) =>
    `evil-${i}"} 1\nguard_verdicts_total{model="forged-${i}"} 1e9\n# EOF\n`

  it('should count any model outside the configured set as other, however many names are sent', async () => {
    // As if the guard allowed unknown models (the Worker refuses them before any verdict).
    const telemetry = new D1Telemetry(db, { models: [MODEL] })
    for (let i = 0; i < 300; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          telemetry.record(
            release(`h-${i + j}`, {
              model: HOSTILE(i + j),
              action: 'reject',
              reasons: ['context_length_exceeded', `reason-${i + j}\n`],
              scripts: [`script-${i + j}`],
            }),
          ),
        ),
      )
    }
    const models = await rows('SELECT DISTINCT model FROM verdict_counters')
    expect(models).toEqual([{ model: OTHER }])
    const labels = await rows(
      'SELECT COUNT(DISTINCT reason) AS reasons, COUNT(DISTINCT script) AS scripts FROM verdict_counters',
    )
    // The real code and other; scripts: '' (the counters without one) and other.
    expect(labels[0]).toEqual({ reasons: 2, scripts: 2 })
    const text = await (await metricsResponse({ ...workerEnv, GUARD_STATE: undefined })).text()
    expect(text).not.toContain('forged')
    expect(text).not.toContain('evil')
    expect(text.split('\n').filter((l) => l === '# EOF')).toHaveLength(1)
    expect(text).toContain(
      `guard_refusals_total{model="other",reason="context_length_exceeded",script="other"} 300`,
    )
    // The samples keep what was sent (the console escapes it as text); the metrics never name it.
    expect((await telemetry.samples({ limit: 1 }))[0]!.model).toMatch(/^evil-/)
  }, 60_000)

  it('should refuse hostile and unknown model names through the Worker and add no series', async () => {
    const before = await (await metricsResponse({ ...workerEnv, GUARD_STATE: undefined })).text()
    // An unknown model's operator hint goes to the log: kept out of the test output.
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      for (let i = 0; i < 40; i++) {
        const model = i % 2 === 0 ? HOSTILE(i) : `@cf/unknown/model-${i}`
        const res =
          i % 4 < 2
            ? await post('/v1/chat/completions', { model, ...chat('hi') }, KEY_A)
            : await post(`/ai/run/${encodeURIComponent(model)}`, chat('hi'), KEY_A)
        // A name no model can have is a bad request; a well-formed unknown one is not found.
        if (i % 2 === 1) expect(res.status).toBe(404)
        else expect([400, 404]).toContain(res.status)
      }
    } finally {
      warn.mockRestore()
    }
    const after = await (await metricsResponse({ ...workerEnv, GUARD_STATE: undefined })).text()
    expect(after).toBe(before)
    expect(
      await rows(
        "SELECT * FROM verdict_samples WHERE model LIKE 'evil-%' OR model LIKE '@cf/unknown/%'",
      ),
    ).toEqual([])
  })
})

describe('recordVerdict', () => {
  let errors: MockInstance<typeof console.error>
  const lines: string[] = []
  beforeEach(() => {
    lines.length = 0
    errors = vi.spyOn(console, 'error').mockImplementation((line: unknown) => {
      lines.push(String(line))
    })
  })
  afterEach(() => errors.mockRestore())

  it('should write through waitUntil, never before returning', async () => {
    const pending: Promise<unknown>[] = []
    recordVerdict(workerEnv, release('bg-1'), { waitUntil: (p) => pending.push(p) })
    expect(pending).toHaveLength(1)
    await Promise.all(pending)
    const samples = await new D1Telemetry(db).samples({})
    expect(samples.map((s) => s.tenant)).toEqual(['tenant-s'])
    expect(lines).toEqual([])
  })

  it('should log one ai_guard_telemetry_failed line and never throw when the write fails', async () => {
    const broken = {
      prepare: () => ({ bind: () => ({}) }),
      batch: () => Promise.reject(new Error('D1_ERROR: database is locked')),
    } as unknown as D1Database
    const pending: Promise<unknown>[] = []
    const brokenEnv = { ...workerEnv, QUARANTINE_DB: broken }
    expect(() =>
      recordVerdict(brokenEnv, release('bg-2'), { waitUntil: (p) => pending.push(p) }),
    ).not.toThrow()
    await Promise.all(pending)
    expect(lines).toHaveLength(1)
    const line = JSON.parse(lines[0]!) as Record<string, string>
    expect(line).toEqual({
      event: 'ai_guard_telemetry_failed',
      requestId: 'bg-2',
      error: 'D1_ERROR: database is locked',
    })
    // A bad variable is a failed write too, named, not a thrown request.
    const badRate = { ...workerEnv, VERDICT_SAMPLE_RATE: 'lots' }
    recordVerdict(badRate, release('bg-3'), { waitUntil: (p) => pending.push(p) })
    await Promise.all(pending)
    expect(lines[1]).toContain('sampleRate')
  })

  it('should write nothing when telemetry is off or there is no D1', async () => {
    expect(telemetryFor({ ...workerEnv, VERDICT_TELEMETRY: 'off' })).toBeUndefined()
    expect(telemetryFor({ ...workerEnv, QUARANTINE_DB: undefined })).toBeUndefined()
    const pending: Promise<unknown>[] = []
    recordVerdict({ ...workerEnv, VERDICT_TELEMETRY: 'off' }, release('bg-4'), {
      waitUntil: (p) => pending.push(p),
    })
    expect(pending).toEqual([])
  })
})

describe('margin history', () => {
  const TEST_MODEL = '@cf/test/margin-history'
  const calibration = new DurableCalibration(workerEnv.GUARD_STATE!)

  it('should add a point when a class’s margin is raised, keep the other classes out, and read through D1Telemetry', async () => {
    const start = Date.now()
    // The engine counted 1,500 tokens where the family bound charged Georgian 1,000: +50%, +2% step.
    await calibration.observeTokens(TEST_MODEL, {
      classes: { georgian: 1_000 },
      overhead: 0,
      actual: 1_500,
      tenant: 'a',
    })
    // Covered now: no new point.
    await calibration.observeTokens(TEST_MODEL, {
      classes: { georgian: 1_000 },
      overhead: 0,
      actual: 1_400,
      tenant: 'b',
    })
    await calibration.observeTokens(TEST_MODEL, {
      classes: { georgian: 1_000 },
      overhead: 0,
      actual: 1_900,
      tenant: 'c',
    })
    const telemetry = new D1Telemetry(db, { margins: calibration })
    const points = await telemetry.marginHistory({ model: TEST_MODEL, since: start })
    const georgian = points.filter((p) => p.script === 'georgian')
    // Two raises, then the margin now (the last point).
    expect(georgian.map((p) => Math.round(p.margin * 100))).toEqual([52, 92, 92])
    expect(points.every((p) => p.model === TEST_MODEL && p.script === 'georgian')).toBe(true)
    expect(georgian.map((p) => p.at)).toEqual([...georgian.map((p) => p.at)].sort((x, y) => x - y))
    // The Worker's own telemetry reads the same Durable Object.
    const viaWorker = await telemetryFor(workerEnv)!.marginHistory({ model: TEST_MODEL })
    expect(viaWorker.filter((p) => p.script === 'georgian')).toHaveLength(3)
  })

  it(`should keep at most ${MARGIN_HISTORY_POINTS} points per model, the newest`, async () => {
    const model = '@cf/test/margin-bounded'
    const classes = [
      'thai',
      'lao',
      'khmer',
      'tibetan',
      'myanmar',
      'sinhala',
      'oriya',
      'telugu',
      'kannada',
      'malayalam',
      'gujarati',
      'gurmukhi',
    ] as const
    // Each report is 6% over the last one, beyond the 2% safety step the last raise added: every report
    // raises its class by more than 5%, so each is a point (540 in all).
    for (let k = 0; k < 45; k++) {
      for (const cls of classes) {
        await calibration.observeTokens(model, {
          classes: { [cls]: 100_000 },
          overhead: 0,
          actual: Math.round(100_000 * (1 + 0.4 * 1.06 ** k)),
          tenant: 't',
        })
      }
    }
    const points = await calibration.marginHistory({ model })
    // The newest stored points, and one current point per class.
    expect(points.length).toBe(MARGIN_HISTORY_POINTS + classes.length)
    const last = points.filter((p) => p.script === 'gurmukhi').slice(-2)
    expect(last[0]!.margin).toBeCloseTo(0.4 * 1.06 ** 44 + 0.02, 2)
    expect(last[1]!.margin).toBeCloseTo(last[0]!.margin, 6)
    // The oldest went first: thai's first points are gone.
    const first = points.find((p) => p.script === 'thai')!
    expect(first.margin).toBeGreaterThan(0.4 * 1.06 + 0.02 + 0.001)
  }, 120_000)
})
