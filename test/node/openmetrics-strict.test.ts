import { describe, expect, it } from 'vitest'
import { renderOpenMetrics } from '../../src/worker/telemetry/openmetrics'
import type { CounterRow, HistogramRow, MetricsSnapshot } from '../../src/worker/telemetry/types'
import { incrementsOf, OTHER } from '../../src/worker/telemetry/verdict-rows'
import { GLM, MAX_MODEL_SERIES, MODELS, snapshotOf, TRAFFIC, verdict } from './openmetrics-fixtures'

/**
 * /admin/metrics' text read back by the Prometheus project's own strict OpenMetrics parser
 * (python3-prometheus-client), which refuses anything the format does not allow — unordered or
 * non-cumulative buckets, a count that is not the +Inf bucket, a unit not in the name, a line after
 * `# EOF`. It needs that Debian package, so it runs in `npm run test:slow` (CI installs it); the same
 * figures through the npm parser are in ./openmetrics.test.ts, part of `npm test`.
 */

// Node's child_process beyond the project's small shim (bench/support/node.d.ts declares spawn only).
const { execFileSync } = (await import('node:child_process' as string)) as {
  execFileSync: (
    file: string,
    args: string[],
    options: { input: string; encoding: 'utf8' },
  ) => string
}

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
