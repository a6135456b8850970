import { describe, expect, it } from 'vitest'
import { renderOpenMetrics } from '../../src/worker/telemetry/openmetrics'
import type { CounterRow, HistogramRow } from '../../src/worker/telemetry/types'
import { incrementsOf, OTHER } from '../../src/worker/telemetry/verdict-rows'
import { GLM, MAX_MODEL_SERIES, MODELS, snapshotOf, TRAFFIC, verdict } from './openmetrics-fixtures'

/**
 * /admin/metrics' text, rendered from Node (the renderer is pure) over realistic rows, read back by
 * the npm `parse-prometheus-text-format` (what a JavaScript scraper would use): Node only, so part of
 * `npm test`. The Prometheus project's strict OpenMetrics parser reads the same texts in
 * ./openmetrics-strict.test.ts (`npm run test:slow`: it needs python3-prometheus-client).
 */

/** What parse-prometheus-text-format returns (the package ships no types). */
type ParsedFamily = {
  name: string
  type: string
  metrics: {
    value?: string
    labels?: Record<string, string>
    buckets?: Record<string, string>
  }[]
}
const { default: parsePrometheusTextFormat } = (await import(
  'parse-prometheus-text-format' as string
)) as { default: (text: string) => ParsedFamily[] }

/** The families by name; an OpenMetrics counter's samples end in _total, this parser's name. */
function parse(text: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]))
}

function metric(f: ParsedFamily | undefined, labels: Record<string, string>) {
  return f?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
}

describe('OpenMetrics rendering, read by the npm parser', () => {
  const text = renderOpenMetrics(snapshotOf(TRAFFIC))

  it('should be read by parse-prometheus-text-format with the counts', () => {
    const parsed = parse(text)
    // This Prometheus 0.0.4 parser reads each OpenMetrics counter as its typed family (no samples)
    // and its _total samples as an untyped one; the figures are the same.
    for (const name of ['verdicts', 'verdict_reasons', 'refusals', 'secrets']) {
      expect(parsed.get(`guard_${name}`)?.type).toBe('COUNTER')
    }
    expect(parsed.get('guard_ttft_seconds')?.type).toBe('HISTOGRAM')
    expect(parsed.get('guard_first_byte_seconds')?.type).toBe('HISTOGRAM')
    const verdicts = parsed.get('guard_verdicts_total')
    expect(metric(verdicts, { model: GLM, action: 'release', reason: 'none' })?.value).toBe('43')
    const total = verdicts!.metrics.reduce((sum, m) => sum + Number(m.value), 0)
    expect(total).toBe(TRAFFIC.length)
    const refusals = parsed.get('guard_refusals_total')!
    expect(
      refusals.metrics.map((m) => [m.labels?.reason, m.labels?.script, m.value]).sort(),
    ).toEqual([
      ['context_length_exceeded', 'georgian', '1'],
      ['context_length_exceeded', 'han', '1'],
      ['context_length_exceeded', 'latin', '1'],
      ['echo_cut_off', 'none', '1'],
    ])
  })

  it('should write cumulative buckets, +Inf last and equal to every observation', () => {
    const ttft = parse(text).get('guard_ttft_seconds')!
    // This parser keeps a histogram's buckets but not its labels, and only its first series: GLM's,
    // the busiest (the strict parser checks every series).
    const glm = ttft.metrics[0]!.buckets!
    const bounds = Object.keys(glm).sort((x, y) => Number(x) - Number(y))
    expect(bounds.at(-1)).toBe('+Inf')
    const values = bounds.map((b) => Number(glm[b]))
    expect(values).toEqual([...values].sort((x, y) => x - y))
    expect(values.at(-1)).toBe(TRAFFIC.filter((v) => v.model === GLM && v.ttftMs).length)
    // The two quarantines' 2 ms and 4 ms first tokens sit in the lowest bucket.
    expect(glm['0.025']).toBe('2')
  })

  it('should escape hostile label values so that no value can end its line or forge a sample', () => {
    const hostile = ['x"} 1\nguard_verdicts_total{model="forged"} 999\n# EOF', 'back\\slash', '"']
    const counters: CounterRow[] = hostile.map((model) => ({
      metric: 'verdicts',
      model,
      action: 'release',
      reason: 'none',
      script: '',
      value: 1,
    }))
    const out = renderOpenMetrics({ counters, histograms: [] })
    expect(out.split('\n').filter((l) => l === '# EOF')).toHaveLength(1)
    const models = parse(out)
      .get('guard_verdicts_total')!
      .metrics.map((m) => m.labels?.model)
    expect(models).toHaveLength(hostile.length)
    expect(models).not.toContain('forged')
  })

  it(`should cap model series at ${MAX_MODEL_SERIES}, folding the rest into other`, () => {
    const counters: CounterRow[] = Array.from({ length: 500 }, (_, i) => ({
      metric: 'verdicts',
      model: `@cf/hostile/model-${i}`,
      action: 'release',
      reason: 'none',
      script: '',
      value: i + 1,
    }))
    const histograms: HistogramRow[] = []
    const verdicts = parse(renderOpenMetrics({ counters, histograms })).get('guard_verdicts_total')!
    const models = new Set(verdicts.metrics.map((m) => m.labels?.model))
    expect(models.size).toBe(MAX_MODEL_SERIES)
    expect(models.has(OTHER)).toBe(true)
    expect(verdicts.metrics.reduce((s, m) => s + Number(m.value), 0)).toBe((500 * 501) / 2)
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
})
