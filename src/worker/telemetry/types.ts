/**
 * @module The console's and the metrics' data: sampled verdicts and exact counters (never text).
 */

/** One verdict as the console plots it: figures only, never prompt or answer text, never canaries. */
export interface VerdictSample {
  /** ms since epoch (the guard's clock). */
  at: number
  model: string
  tenant: string
  action: 'release' | 'quarantine' | 'reject' | 'would_block'
  reasons: string[]
  /** The prompt's estimated tokens, when it was counted. */
  estimatedTokens?: number
  /** The prompt's byte bound, when it was admitted uncounted. */
  tokenBound?: number
  ttftMs?: number
  expectedMinMs?: number
  firstByteMs?: number
  /** Refusals: the script classes that drove the estimate. */
  scripts?: string[]
  incidentId?: string
  /** How many verdicts this sample stands for (1 / the sampling rate it was kept at). */
  weight: number
}

/** Filters of a sample query; `limit` caps the rows (newest first). */
export interface SampleQuery {
  since?: number
  until?: number
  model?: string
  limit?: number
}

/** One learned margin of a script class at a time (the calibration history the console draws). */
export interface MarginPoint {
  at: number
  model: string
  script: string
  /** Learned margin on top of the family bound (0.12 = 12%). */
  margin: number
}

/** Refusals (`context_length_exceeded`) per script class that drove them, and per reason. */
export interface RefusalCount {
  reason: string
  script: string
  count: number
}

/**
 * What the console reads. The Worker's implementation is D1 (src/telemetry/d1.ts); tests may use the
 * same class over miniflare's local D1.
 */
export interface TelemetryReader {
  samples(query: SampleQuery): Promise<VerdictSample[]>
  refusals(query: Omit<SampleQuery, 'limit'>): Promise<RefusalCount[]>
  marginHistory(query: Omit<SampleQuery, 'limit'>): Promise<MarginPoint[]>
}

/** One exact counter of /admin/metrics: a metric, its labels ('' when unused) and its value. */
export interface CounterRow {
  metric: CounterMetric
  model: string
  action: string
  reason: string
  script: string
  value: number
}

/** The counters kept per label set (src/worker/telemetry/openmetrics.ts names and documents each). */
export type CounterMetric =
  | 'verdicts'
  | 'verdict_reasons'
  | 'refusals'
  | 'quarantine_store_failures'
  | 'secrets'

/** One histogram bucket (not cumulative: the observations that fell in it), with their sum. */
export interface HistogramRow {
  metric: HistogramMetric
  model: string
  /** Upper bound in seconds as OpenMetrics writes it: '0.05', '1', '+Inf'. */
  le: string
  count: number
  /** Seconds. */
  sum: number
}

/** The histograms kept per model. */
export type HistogramMetric = 'ttft' | 'first_byte'

/** Everything /admin/metrics renders. */
export interface MetricsSnapshot {
  counters: CounterRow[]
  histograms: HistogramRow[]
  /** Learned tokenizer margins now, per model and script class (gauges); absent when not known. */
  margins?: { model: string; script: string; margin: number }[]
}

/** Where the learned margins' history comes from (the GuardState Durable Object in the Worker). */
export interface MarginSource {
  marginHistory(query: Omit<SampleQuery, 'limit'>): Promise<MarginPoint[]>
}
