import { describe, expect, it } from 'vitest'
import type { VerdictLog } from '../../src'
import { renderOpenMetrics } from '../../src/telemetry/openmetrics'
import type { CounterRow, HistogramRow, MetricsSnapshot } from '../../src/telemetry/types'
import { incrementsOf, OTHER } from '../../src/telemetry/verdict-rows'

/** Most model label values on the page, the rest folded into `other` (docs/telemetry.md). */
const MAX_MODEL_SERIES = 32

/**
 * /admin/metrics' text, rendered from Node (the renderer is pure) over realistic rows, read back by two
 * parsers: the npm `parse-prometheus-text-format` (what a JavaScript scraper would use) and the
 * Prometheus project's own strict OpenMetrics parser (python3-prometheus-client), which refuses
 * anything the format does not allow — unordered or non-cumulative buckets, a count that is not the
 * +Inf bucket, a unit not in the name, a line after `# EOF`.
 */
const GLM = '@cf/zai-org/glm-5.3'
const LLAMA = '@cf/meta/llama-3.3-70b-instruct-fp8-fast'
const MODELS = new Set([GLM, LLAMA])

// Node's child_process beyond the project's small shim (bench/support/node.d.ts declares spawn only).
const { execFileSync } = (await import('node:child_process' as string)) as {
  execFileSync: (
    file: string,
    args: string[],
    options: { input: string; encoding: 'utf8' },
  ) => string
}

/** What parse-prometheus-text-format returns (the package ships no types). */
type ParsedFamily = {
  name: string
  type: string
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string> }[]
}
const { default: parsePrometheusTextFormat } = (await import(
  'parse-prometheus-text-format' as string
)) as { default: (text: string) => ParsedFamily[] }

interface Family {
  name: string
  type: string
  unit: string
  samples: { name: string; labels: Record<string, string>; value: number }[]
}

/** The text through prometheus_client's OpenMetrics parser; throws with its message if it refuses. */
function strictParse(text: string): Family[] {
  const script = [
    'import sys, json',
    'from prometheus_client.openmetrics.parser import text_string_to_metric_families',
    'out = []',
    'for f in text_string_to_metric_families(sys.stdin.read()):',
    '    out.append({"name": f.name, "type": f.type, "unit": f.unit, "samples": [',
    '        {"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]})',
    'print(json.dumps(out))',
  ].join('\n')
  // Debian's python3 with python3-prometheus-client (`.ci/run` installs it); PYTHON3 for another.
  const python = (globalThis as unknown as { process: { env: Record<string, string | undefined> } })
    .process.env.PYTHON3
  const stdout = execFileSync(python ?? '/usr/bin/python3', ['-c', script], {
    input: text,
    encoding: 'utf8',
  })
  return JSON.parse(stdout) as Family[]
}

/** Sums a list of verdicts into rows, as D1's upserts would. */
function snapshotOf(events: VerdictLog[]): MetricsSnapshot {
  const counters = new Map<string, CounterRow>()
  const histograms = new Map<string, HistogramRow>()
  for (const event of events) {
    const { counters: add, observations } = incrementsOf(event, MODELS)
    for (const row of add) {
      const key = JSON.stringify([row.metric, row.model, row.action, row.reason, row.script])
      const old = counters.get(key)
      if (old) old.value += row.value
      else counters.set(key, { ...row })
    }
    for (const o of observations) {
      const key = JSON.stringify([o.metric, o.model, o.le])
      const old = histograms.get(key) ?? {
        metric: o.metric,
        model: o.model,
        le: o.le,
        count: 0,
        sum: 0,
      }
      old.count += 1
      old.sum += o.seconds
      histograms.set(key, old)
    }
  }
  return { counters: [...counters.values()], histograms: [...histograms.values()] }
}

function verdict(overrides: Partial<VerdictLog>): VerdictLog {
  return {
    requestId: 'r',
    tenant: 'tenant-a',
    model: GLM,
    action: 'release',
    reasons: [],
    ...overrides,
  }
}

/** A day's worth of shapes: clean releases, retries, refusals by script, quarantines, a store failure. */
const TRAFFIC: VerdictLog[] = [
  ...Array.from({ length: 40 }, (_, i) =>
    verdict({ ttftMs: 30 + i * 137, firstByteMs: 35 + i * 140, estimatedTokens: 1000 * i }),
  ),
  verdict({ model: LLAMA, ttftMs: 800, firstByteMs: 900 }),
  verdict({ reasons: ['released_after_retry'], ttftMs: 2_400, firstByteMs: 2_500 }),
  verdict({ action: 'reject', reasons: ['context_length_exceeded'], scripts: ['georgian'] }),
  verdict({ action: 'reject', reasons: ['context_length_exceeded'], scripts: ['han', 'latin'] }),
  verdict({ action: 'reject', reasons: ['echo_cut_off'] }),
  verdict({
    action: 'quarantine',
    reasons: ['foreign_canary', 'echo_missing'],
    ttftMs: 4,
    incidentId: 'inc_1',
    sourceTenants: ['tenant-b'],
  }),
  verdict({ action: 'quarantine', reasons: ['ttft_impossible', 'store_failed'], ttftMs: 2 }),
  verdict({ ttftMs: 300_000, firstByteMs: 300_100 }), // beyond the last bound: +Inf only
  verdict({
    secrets: { substituted: { 'card-number': 2, 'openai-key': 1 }, detected: { 'us-ssn': 1 } },
  }),
  verdict({ secrets: { substituted: { 'card-number': 3 }, restored: { 'card-number': 3 } } }),
  verdict({
    action: 'quarantine',
    reasons: ['foreign_stand_in'],
    incidentId: 'inc_2',
    secrets: { foreign: { 'github-token': 1 } },
  }),
]

function family(families: Family[], name: string): Family {
  const found = families.find((f) => f.name === name)
  expect(found, name).toBeDefined()
  return found!
}

function value(f: Family, sample: string, labels: Record<string, string>): number | undefined {
  return f.samples.find(
    (s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value
}

describe('OpenMetrics rendering', () => {
  const text = renderOpenMetrics(snapshotOf(TRAFFIC))

  it('should be accepted by the Prometheus project’s strict OpenMetrics parser, with the counts', () => {
    const families = strictParse(text)
    expect(families.map((f) => `${f.name}:${f.type}`).sort()).toEqual([
      'guard_first_byte_seconds:histogram',
      'guard_quarantine_store_failures:counter',
      'guard_refusals:counter',
      'guard_secrets:counter',
      'guard_ttft_seconds:histogram',
      'guard_verdict_reasons:counter',
      'guard_verdicts:counter',
    ])
    const verdicts = family(families, 'guard_verdicts')
    expect(
      value(verdicts, 'guard_verdicts_total', { model: GLM, action: 'release', reason: 'none' }),
    ).toBe(43)
    expect(
      value(verdicts, 'guard_verdicts_total', {
        model: GLM,
        action: 'quarantine',
        reason: 'foreign_canary',
      }),
    ).toBe(1)
    const total = verdicts.samples.reduce((sum, s) => sum + s.value, 0)
    expect(total).toBe(TRAFFIC.length)
    const reasons = family(families, 'guard_verdict_reasons')
    expect(value(reasons, 'guard_verdict_reasons_total', { reason: 'echo_missing' })).toBe(1)
    const refusals = family(families, 'guard_refusals')
    expect(refusals.samples.map((s) => [s.labels.reason, s.labels.script, s.value]).sort()).toEqual(
      [
        ['context_length_exceeded', 'georgian', 1],
        ['context_length_exceeded', 'han', 1],
        ['context_length_exceeded', 'latin', 1],
        ['echo_cut_off', 'none', 1],
      ],
    )
    expect(family(families, 'guard_quarantine_store_failures').samples).toEqual([
      { name: 'guard_quarantine_store_failures_total', labels: { model: GLM }, value: 1 },
    ])
  })

  it('should write cumulative buckets whose +Inf equals the count, and the sum in seconds', () => {
    const ttft = family(strictParse(text), 'guard_ttft_seconds')
    expect(ttft.unit).toBe('seconds')
    const glm = ttft.samples.filter((s) => s.labels.model === GLM)
    const buckets = glm.filter((s) => s.name.endsWith('_bucket'))
    const values = buckets.map((s) => s.value)
    expect(values).toEqual([...values].sort((a, b) => a - b))
    expect(buckets.at(-1)!.labels.le).toBe('+Inf')
    const withTtft = TRAFFIC.filter((v) => v.model === GLM && v.ttftMs !== undefined)
    expect(value(ttft, 'guard_ttft_seconds_count', { model: GLM })).toBe(withTtft.length)
    expect(buckets.at(-1)!.value).toBe(withTtft.length)
    // The two quarantines' 2 ms and 4 ms first tokens sit in the lowest bucket; 300 s only in +Inf.
    expect(value(ttft, 'guard_ttft_seconds_bucket', { model: GLM, le: '0.025' })).toBe(2)
    expect(buckets.at(-2)!.value).toBe(withTtft.length - 1)
    const sum = withTtft.reduce((s, v) => s + v.ttftMs! / 1000, 0)
    expect(value(ttft, 'guard_ttft_seconds_sum', { model: GLM })).toBeCloseTo(sum, 5)
  })

  it('should be read by parse-prometheus-text-format with the same figures', () => {
    const parsed = parsePrometheusTextFormat(text)
    // An OpenMetrics counter's samples end in _total; this Prometheus 0.0.4 parser files them under
    // that name. The figures are the same.
    const verdicts = parsed.find((f) => f.name === 'guard_verdicts_total')!
    const clean = verdicts.metrics.find(
      (m) => m.labels?.model === GLM && m.labels.action === 'release' && m.labels.reason === 'none',
    )
    expect(clean?.value).toBe('43')
    const ttft = parsed.find((f) => f.name === 'guard_ttft_seconds')!
    expect(ttft.type).toBe('HISTOGRAM')
    expect(ttft.metrics.length).toBeGreaterThan(0)
  })

  it('should escape hostile label values so that no value can end its line or forge a sample', () => {
    const hostile = [
      'x"} 1\nguard_verdicts_total{model="forged"} 999\n# EOF',
      'back\\slash',
      'cr\rlf\u2028ls\u0000nul\u0085nel',
      'lone \ud800 surrogate',
      '"',
    ]
    const snapshot: MetricsSnapshot = {
      counters: hostile.map((model) => ({
        metric: 'verdicts',
        model,
        action: 'release',
        reason: 'none',
        script: '',
        value: 1,
      })),
      histograms: [],
    }
    const out = renderOpenMetrics(snapshot)
    // Every sample line is one line, and the only # EOF is the last line.
    expect(out.split('\n').filter((l) => l === '# EOF')).toHaveLength(1)
    expect(out.endsWith('# EOF\n')).toBe(true)
    const families = strictParse(out)
    const models = family(families, 'guard_verdicts').samples.map((s) => s.labels.model)
    expect(models).toHaveLength(hostile.length)
    expect(models).toContain(hostile[0])
    expect(models).toContain('back\\slash')
    expect(models).toContain('cr\ufffdlf\ufffdls\ufffdnul\ufffdnel')
    expect(models).not.toContain('forged')
    expect(family(families, 'guard_verdicts').samples.every((s) => s.value === 1)).toBe(true)
  })

  it(`should cap model series at ${MAX_MODEL_SERIES} whatever the store holds, folding the rest into other`, () => {
    const counters: CounterRow[] = Array.from({ length: 500 }, (_, i) => ({
      metric: 'verdicts',
      model: `@cf/hostile/model-${i}`,
      action: 'release',
      reason: 'none',
      script: '',
      value: i + 1,
    }))
    const histograms: HistogramRow[] = counters.map((c) => ({
      metric: 'ttft',
      model: c.model,
      le: '0.5',
      count: 1,
      sum: 0.25,
    }))
    const families = strictParse(renderOpenMetrics({ counters, histograms }))
    const verdicts = family(families, 'guard_verdicts')
    const models = new Set(verdicts.samples.map((s) => s.labels.model))
    expect(models.size).toBe(MAX_MODEL_SERIES)
    expect(models.has(OTHER)).toBe(true)
    // The busiest kept their names; nothing was lost in the fold.
    expect(models.has('@cf/hostile/model-499')).toBe(true)
    expect(verdicts.samples.reduce((s, v) => s + v.value, 0)).toBe((500 * 501) / 2)
    const ttft = family(families, 'guard_ttft_seconds')
    expect(value(ttft, 'guard_ttft_seconds_count', { model: OTHER })).toBe(
      500 - (MAX_MODEL_SERIES - 1),
    )
  })

  it('should count a model outside the configured set as other, and an unknown script or reason too', () => {
    const { counters } = incrementsOf(
      verdict({
        model: 'made-up\n"model',
        action: 'reject',
        reasons: ['context_length_exceeded', 'Not A Reason'],
        scripts: ['klingon', 'latin'],
      }),
      MODELS,
    )
    expect(new Set(counters.map((c) => c.model))).toEqual(new Set([OTHER]))
    expect(counters.filter((c) => c.metric === 'verdict_reasons').map((c) => c.reason)).toEqual([
      'context_length_exceeded',
      OTHER,
    ])
    expect(counters.filter((c) => c.metric === 'refusals').map((c) => c.script)).toEqual([
      OTHER,
      'latin',
    ])
    expect(JSON.stringify(counters)).not.toContain('tenant')
  })

  it('should count secrets by outcome and kind, with the counts of each verdict, never a value', () => {
    const secrets = family(strictParse(text), 'guard_secrets')
    expect(secrets.type).toBe('counter')
    const count = (outcome: string, kind: string) =>
      value(secrets, 'guard_secrets_total', { model: GLM, outcome, kind })
    expect(count('substituted', 'card-number')).toBe(5)
    expect(count('substituted', 'openai-key')).toBe(1)
    expect(count('detected', 'us-ssn')).toBe(1)
    expect(count('restored', 'card-number')).toBe(3)
    expect(count('foreign', 'github-token')).toBe(1)
    const { counters } = incrementsOf(
      verdict({ secrets: { substituted: { 'Not A Kind\n': 1, 'card-number': 0 } } }),
      MODELS,
    )
    expect(counters.filter((c) => c.metric === 'secrets').map((c) => [c.reason, c.value])).toEqual([
      [OTHER, 1],
    ])
  })

  it('should write the learned margins as a gauge with its unit', () => {
    const margins = [
      { model: GLM, script: 'georgian', margin: 0.42 },
      { model: GLM, script: 'han', margin: 0.05 },
    ]
    const families = strictParse(renderOpenMetrics({ counters: [], histograms: [], margins }))
    const gauge = family(families, 'guard_learned_margin_ratio')
    expect([gauge.type, gauge.unit]).toEqual(['gauge', 'ratio'])
    expect(gauge.samples.map((s) => [s.labels.script, s.value])).toEqual([
      ['georgian', 0.42],
      ['han', 0.05],
    ])
  })

  it('should write every family even with nothing counted', () => {
    const families = strictParse(renderOpenMetrics({ counters: [], histograms: [] }))
    expect(families).toHaveLength(7)
    expect(families.every((f) => f.samples.length === 0)).toBe(true)
  })
})
