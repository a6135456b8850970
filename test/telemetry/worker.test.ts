import { env } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import type { Env } from '../../src/worker/env'
import { metricsResponse } from '../../src/worker/metrics'
import { D1Telemetry } from '../../src/worker/telemetry/d1-telemetry'
import type { MetricsSnapshot, VerdictSample } from '../../src/worker/telemetry/types'
import { chat, document } from '../support/prompts'
import { captureWorkerVerdicts } from '../support/verdicts'
import { ADMIN, get, KEY_A, KEY_B, post, sim } from '../support/worker'

/**
 * Real guarded requests through the Worker (SELF.fetch, simulator behind env.AI), then what its
 * background writes left in the local D1: the sample rows, the exact counters and the histograms,
 * and /admin/metrics' text built from them.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const workerEnv = env as unknown as Env
const db = workerEnv.QUARANTINE_DB!
const telemetry = new D1Telemetry(db)

/** Polls until `read` gives a value `done` accepts: the Worker writes through waitUntil, after the answer. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The sample of one logged request, found by its figures' owner: the newest of that tenant and action. */
async function sampleOf(
  tenant: string,
  action: VerdictSample['action'],
  since: number,
): Promise<VerdictSample | undefined> {
  const rows = await eventually(
    () => telemetry.samples({ since }),
    (rows) => rows.some((r) => r.tenant === tenant && r.action === action),
  )
  return rows.find((r) => r.tenant === tenant && r.action === action)
}

function counter(
  snapshot: MetricsSnapshot,
  labels: Partial<MetricsSnapshot['counters'][number]>,
): number {
  return snapshot.counters
    .filter((c) => Object.entries(labels).every(([k, v]) => c[k as keyof typeof c] === v))
    .reduce((sum, c) => sum + c.value, 0)
}

function histogramCount(snapshot: MetricsSnapshot, metric: 'ttft' | 'first_byte'): number {
  return snapshot.histograms
    .filter((h) => h.metric === metric && h.model === MODEL)
    .reduce((sum, h) => sum + h.count, 0)
}

/** One of tenant A's documents of about `tokens` tokens, answered and released (its body read). */
async function releasedA(tokens: number): Promise<void> {
  const res = await post(
    '/v1/chat/completions',
    { model: MODEL, ...chat(document('TENANT-A', tokens)) },
    KEY_A,
  )
  expect(res.status).toBe(200)
  await res.text()
}

beforeEach(async () => {
  await sim.reset({
    mode: 'fixed',
    poolTokens: 8_192,
    contextWindow: 16_384,
    prefillTokensPerSecond: 500_000,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  })
})

describe('verdict telemetry through the Worker', () => {
  const logged = captureWorkerVerdicts()

  it('should record a release: its sample with figures only, its counter and both histograms', async () => {
    const before = await telemetry.metrics()
    const since = Date.now()
    await releasedA(400)
    const sample = await sampleOf('tenant-a', 'release', since)
    const line = logged.events.find((e) => e.action === 'release')!
    expect(sample).toMatchObject({ model: MODEL, reasons: [], weight: 1 })
    expect(sample!.tokenBound ?? sample!.estimatedTokens).toBe(
      line.tokenBound ?? line.estimatedTokens,
    )
    expect(sample!.ttftMs).toBe(line.ttftMs)
    expect(sample!.expectedMinMs).toBe(line.expectedMinMs)
    expect(sample!.firstByteMs).toBe(line.firstByteMs)
    // Figures only: nothing of the prompt or the answer in the row.
    expect(JSON.stringify(sample)).not.toContain('TENANT-A')
    const after = await eventually(
      () => telemetry.metrics(),
      (m) => histogramCount(m, 'first_byte') > histogramCount(before, 'first_byte'),
    )
    const clean = { metric: 'verdicts', model: MODEL, action: 'release', reason: 'none' } as const
    expect(counter(after, clean) - counter(before, clean)).toBe(1)
    // A short prompt is judged against no bound (too little evidence), but its TTFT is still measured
    // and kept: the console plots every answer, not only the judged ones.
    expect(line.expectedMinMs).toBeUndefined()
    expect(sample!.ttftMs).toBeGreaterThanOrEqual(0)
    expect(histogramCount(after, 'ttft') - histogramCount(before, 'ttft')).toBe(1)
    expect(histogramCount(after, 'first_byte') - histogramCount(before, 'first_byte')).toBe(1)
  })

  it('should count a refusal under the script class that drove it', async () => {
    const before = await telemetry.metrics()
    const since = Date.now()
    // Georgian splits about 7× finer than English: 900,000 characters are far over the 681,280 ceiling.
    const georgian = 'ქართული ენა არის ლამაზი და ძველი. '.repeat(27_000)
    const res = await post('/v1/chat/completions', { model: MODEL, ...chat(georgian) }, KEY_A)
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'context_length_exceeded',
    )
    const sample = await sampleOf('tenant-a', 'reject', since)
    expect(sample?.reasons).toEqual(['context_length_exceeded'])
    expect(sample?.scripts?.[0]).toBe('georgian')
    expect(sample?.weight).toBe(1)
    const refusals = await telemetry.refusals({ since })
    expect(refusals).toContainEqual({
      reason: 'context_length_exceeded',
      script: 'georgian',
      count: 1,
    })
    const after = await telemetry.metrics()
    const georgianRefusals = {
      metric: 'refusals',
      model: MODEL,
      reason: 'context_length_exceeded',
      script: 'georgian',
    } as const
    expect(counter(after, georgianRefusals) - counter(before, georgianRefusals)).toBe(1)
  }, 60_000)

  it('should count a quarantine under each of its reasons, with its incident in the sample', async () => {
    await sim.configure({ mode: 'fixed' })
    await releasedA(6_000)
    const before = await eventually(
      () => telemetry.metrics(),
      (m) => counter(m, { metric: 'verdicts', action: 'release' }) > 0,
    )
    const since = Date.now()
    await sim.configure({ mode: 'pd-abort-leak' })
    const res = await post(
      '/v1/chat/completions',
      { model: MODEL, ...chat(document('TENANT-B', 12_000)) },
      KEY_B,
    )
    expect(res.status).toBe(422)
    const incident = ((await res.json()) as { error: { incident_id: string } }).error.incident_id
    const sample = await sampleOf('tenant-b', 'quarantine', since)
    expect(sample?.incidentId).toBe(incident)
    expect(sample?.weight).toBe(1)
    const line = logged.events.find((e) => e.action === 'quarantine')!
    expect(sample?.reasons).toEqual(line.reasons)
    const after = await telemetry.metrics()
    const first = {
      metric: 'verdicts',
      model: MODEL,
      action: 'quarantine',
      reason: line.reasons[0],
    } as const
    expect(counter(after, first) - counter(before, first)).toBe(1)
    for (const reason of line.reasons) {
      const each = { metric: 'verdict_reasons', action: 'quarantine', reason } as const
      expect(counter(after, each) - counter(before, each), reason).toBe(1)
    }
    // A stored incident is no store failure.
    expect(counter(after, { metric: 'quarantine_store_failures' })).toBe(
      counter(before, { metric: 'quarantine_store_failures' }),
    )
  }, 60_000)

  it('should serve /admin/metrics with cumulative buckets consistent with count and sum', async () => {
    // The simulator's full-size pool (the leak tests above shrink it).
    await sim.reset({
      mode: 'fixed',
      prefillTokensPerSecond: 500_000,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    })
    // 220,000 tokens take over 200 ms to prefill at the profile's bound: enough evidence for a TTFT.
    for (const tokens of [400, 220_000]) {
      await releasedA(tokens)
    }
    const snapshot = await eventually(
      () => telemetry.metrics(),
      (m) => histogramCount(m, 'first_byte') >= 2 && histogramCount(m, 'ttft') >= 1,
    )
    expect(histogramCount(snapshot, 'ttft')).toBeGreaterThanOrEqual(1)
    // Behind the admin auth at GET /admin/metrics (the admin router mounts metricsResponse).
    expect((await get('/admin/metrics')).status).toBe(401)
    const res = await get('/admin/metrics', ADMIN)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe(
      'application/openmetrics-text; version=1.0.0; charset=utf-8',
    )
    const text = await res.text()
    expect(text).toBe(await (await metricsResponse(workerEnv)).text())
    expect(text.endsWith('# EOF\n')).toBe(true)
    for (const metric of ['ttft', 'first_byte'] as const) {
      const name = metric === 'ttft' ? 'guard_ttft_seconds' : 'guard_first_byte_seconds'
      const buckets = [
        ...text.matchAll(
          new RegExp(`^${name}_bucket\\{model="([^"]+)",le="([^"]+)"\\} (\\d+)$`, 'gm'),
        ),
      ]
        .filter((m) => m[1] === MODEL)
        .map((m) => ({ le: m[2]!, n: Number(m[3]) }))
      expect(buckets.at(-1)?.le).toBe('+Inf')
      const counts = buckets.map((b) => b.n)
      expect(counts).toEqual([...counts].sort((x, y) => x - y))
      const count = Number(
        new RegExp(`^${name}_count\\{model="${MODEL}"\\} (\\d+)$`, 'm').exec(text)?.[1],
      )
      const sum = Number(
        new RegExp(`^${name}_sum\\{model="${MODEL}"\\} (\\S+)$`, 'm').exec(text)?.[1],
      )
      expect(count).toBe(counts.at(-1))
      expect(count).toBe(histogramCount(snapshot, metric))
      const stored = snapshot.histograms
        .filter((h) => h.metric === metric && h.model === MODEL)
        .reduce((s, h) => s + h.sum, 0)
      expect(sum).toBeCloseTo(stored, 5)
      // Each bucket holds what the samples say: at sampling rate 1 every release has its row.
      const samples = await telemetry.samples({ model: MODEL, limit: 10_000 })
      const figure = (s: VerdictSample) => (metric === 'ttft' ? s.ttftMs : s.firstByteMs)
      const withFigure = samples.filter((s) => figure(s) !== undefined)
      expect(withFigure.length).toBe(count)
      for (const { le, n } of buckets) {
        const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le)
        expect(
          withFigure.filter((s) => figure(s)! / 1000 <= bound).length,
          `${name} le=${le}`,
        ).toBe(n)
      }
    }
    const verdicts = Number(
      /^guard_verdicts_total\{model="@cf\/zai-org\/glm-5\.3",action="release",reason="none"\} (\d+)$/m.exec(
        text,
      )?.[1],
    )
    expect(verdicts).toBe(
      counter(snapshot, { metric: 'verdicts', model: MODEL, action: 'release', reason: 'none' }),
    )
  }, 60_000)
})
