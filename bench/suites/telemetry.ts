/**
 * @module Benchmark: what recording verdict telemetry costs per request, side by side with
 * today's Worker without it — the real guard Worker (src/worker) in workerd with its local D1, Durable
 * Objects and the simulator bound as env.AI, started three times: telemetry off, on (every verdict
 * sampled) and sampled at 10%. Measured: the client's latency (alternating rounds), throughput at a
 * fixed concurrency (background writes compete with answers there), and inside the isolate the D1
 * batch of one verdict itself, with the rows D1 says it wrote (what D1 bills).
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { defaultTokenizerOnly } from '../../sim/bundle'
import {
  machineInfo,
  median,
  ROOT,
  reproduce,
  type Suite,
  type SuiteOptions,
  type Summary,
  summarize,
  writeResult,
} from '../lib'
import { bundleWorker } from '../support/workerd'

const MODEL = '@cf/zai-org/glm-5.3'
const KEY = 'bench-key-telemetry-0123456789'
/** Requests in flight in the throughput runs: background writes compete with answers there. */
const CONCURRENCY = 4

/** The Worker's configurations: the only difference between them is the telemetry variables. */
const CONFIGS = {
  off: { VERDICT_TELEMETRY: 'off' },
  on: { VERDICT_SAMPLE_RATE: '1' },
  sampled: { VERDICT_SAMPLE_RATE: '0.1' },
} as const
type Config = keyof typeof CONFIGS

/**
 * A Worker that times D1Telemetry.record inside workerd, where the clock moves across I/O: each call
 * is one D1 batch. `kind` picks the verdict; `rate` the sampling (0: counters and histograms only).
 */
const PROBE_SOURCE = `
import { D1Telemetry } from './src/worker/telemetry/d1-telemetry'
const MODEL = '${MODEL}'
function event(i, kind) {
  const base = { requestId: 'probe-' + kind + '-' + i + '-' + Math.random(), tenant: 'bench', model: MODEL }
  if (kind === 'quarantine')
    return { ...base, action: 'quarantine', reasons: ['foreign_canary', 'echo_missing'], incidentId: 'inc-' + i, sourceTenants: ['a'], estimatedTokens: 12000, ttftMs: 4, expectedMinMs: 60 }
  if (kind === 'reject')
    return { ...base, action: 'reject', reasons: ['context_length_exceeded'], scripts: ['georgian'] }
  return { ...base, action: 'release', reasons: [], tokenBound: 1800, ttftMs: 300 + (i % 50), firstByteMs: 320 + (i % 50) }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const n = Number(url.searchParams.get('n') ?? '50')
    const kind = url.searchParams.get('kind') ?? 'release'
    if (kind === 'select1') {
      const times = []
      for (let i = 0; i < n; i++) {
        const start = performance.now()
        await env.QUARANTINE_DB.prepare('SELECT 1').first()
        times.push(performance.now() - start)
      }
      return Response.json({ times })
    }
    const telemetry = new D1Telemetry(env.QUARANTINE_DB, { sampleRate: Number(url.searchParams.get('rate') ?? '1') })
    const times = []
    const costs = []
    for (let i = 0; i < n; i++) {
      const start = performance.now()
      costs.push(await telemetry.record(event(i, kind)))
      times.push(performance.now() - start)
    }
    return Response.json({ times, costs })
  },
}
`

interface Cell {
  config: Config
  latency: Summary
  /** Per-round difference from the `off` request of the same round, ms. */
  added: Summary
  /** Median latency ÷ the `off` median of the same rounds. */
  ratio: number
  throughput: {
    requests: number
    concurrency: number
    /** The median block's requests per second. */
    perSecond: number
    /** Each block's, in the order run. */
    blocks: number[]
    errors: number
  }
}

interface ProbeRow {
  kind: string
  rate: number
  batch: Summary
  /** Total time of the timed calls ÷ their number, ms (the isolate's clock ticks in whole ms). */
  mean: number
  rowsWritten: number
  rowsRead: number
  statements: number
}

function bundle(name: string, options: Parameters<typeof bundleWorker>[1]): Promise<string> {
  return bundleWorker(`bench-telemetry-${name}`, options)
}

/** The migrations as single statements (comments dropped): D1's exec takes one statement per line. */
async function migrationStatements(): Promise<string[]> {
  const out: string[] = []
  for (const file of [
    '0001_incidents.sql',
    '0002_incident_counts.sql',
    '0003_tenant_tags.sql',
    '0004_verdict_telemetry.sql',
  ]) {
    const sql = (await readFile(join(ROOT, 'migrations', file), 'utf8'))
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('--'))
      .join('\n')
    out.push(
      ...sql
        .split(';')
        .map((s) => s.trim())
        .filter(Boolean),
    )
  }
  return out
}

async function start(): Promise<Miniflare> {
  const plugins = [defaultTokenizerOnly('bench/suites/telemetry.ts')]
  const sim = await bundle('sim', { entryPoints: [join(ROOT, 'sim/worker.ts')], plugins })
  const guard = await bundle('guard', { entryPoints: [join(ROOT, 'src/worker/index.ts')], plugins })
  const probe = await bundle('probe', {
    stdin: { contents: PROBE_SOURCE, resolveDir: ROOT, loader: 'ts', sourcefile: 'probe.ts' },
  })
  const guardWorker = (config: Config) => ({
    name: `guard-${config}`,
    modules: true,
    scriptPath: guard,
    compatibilityDate: '2026-11-01',
    bindings: {
      GUARD_SECRET: 'bench-telemetry-canary-secret-0123456789abcdef',
      QUARANTINE_KEY: 'bench-telemetry-quarantine-key-0123456789abcdef',
      TENANT_KEYS: JSON.stringify({ [KEY]: 'bench' }),
      GUARD_MODELS: JSON.stringify({ [MODEL]: { maxPrefillTokensPerSecond: 1_000_000 } }),
      ...CONFIGS[config],
    },
    serviceBindings: { AI: { name: 'workers-ai-sim', entrypoint: 'SimulatedAi' } },
    // One D1 database for all three, as one deployment has; each Worker its own Durable Objects.
    d1Databases: { QUARANTINE_DB: 'telemetry-bench' },
    durableObjects: { GUARD_STATE: 'GuardState', FINGERPRINTS: 'FingerprintLog' },
  })
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      handleStructuredLogs: () => {},
      // The simulator first: Miniflare's entry Worker is reached another way than the others, and the
      // three guards must be reached alike.
      workers: [
        { name: 'workers-ai-sim', modules: true, scriptPath: sim, compatibilityDate: '2026-11-01' },
        ...(Object.keys(CONFIGS) as Config[]).map(guardWorker),
        {
          name: 'probe',
          modules: true,
          scriptPath: probe,
          compatibilityDate: '2026-11-01',
          d1Databases: { QUARANTINE_DB: 'telemetry-bench' },
        },
      ],
    }),
  )
  await mf.ready
  const db = await mf.getD1Database('QUARANTINE_DB', 'probe')
  for (const statement of await migrationStatements()) await db.prepare(statement).run()
  return mf
}

/**
 * The six orders of the three configurations, used in turn. A rotation (off, on, sampled → on,
 * sampled, off → …) always put `sampled` right before `off`: a background write slows the request
 * after it (locally), so `off` paid for its neighbour and `on` looked faster than `off` in every run.
 * With every order, each configuration follows each other equally often.
 */
const ORDERS: Config[][] = [
  ['off', 'on', 'sampled'],
  ['off', 'sampled', 'on'],
  ['on', 'off', 'sampled'],
  ['on', 'sampled', 'off'],
  ['sampled', 'off', 'on'],
  ['sampled', 'on', 'off'],
]

/** Alternates the configurations round by round (every order in turn), after untimed warm-up rounds. */
async function latencies(
  send: (config: Config) => Promise<{ ms: number; ok: boolean }>,
  rounds: number,
): Promise<Record<Config, number[]>> {
  const out = { off: [], on: [], sampled: [] } as Record<Config, number[]>
  for (let round = 0; round < rounds + 6; round++) {
    const order = ORDERS[round % ORDERS.length]!
    for (const config of order) {
      const { ms, ok } = await send(config)
      if (!ok) throw new Error(`${config}: request failed`)
      if (round >= 6) out[config].push(ms)
    }
  }
  return out
}

async function throughput(
  send: () => Promise<{ ok: boolean }>,
  requests: number,
  concurrency: number,
): Promise<{ perSecond: number; errors: number }> {
  let next = 0
  let errors = 0
  const startAt = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        next++
        if (!(await send()).ok) errors++
      }
    }),
  )
  const seconds = (performance.now() - startAt) / 1000
  return { perSecond: requests / seconds, errors }
}

/**
 * Throughput per configuration: `blocks` rotating blocks of each (a machine shared with other work
 * drifts; rotating spreads the drift), the median block's requests per second.
 */
async function throughputs(
  send: (config: Config) => Promise<{ ok: boolean }>,
  requests: number,
  blocks: number,
): Promise<Record<Config, Cell['throughput']>> {
  const configs = Object.keys(CONFIGS) as Config[]
  const rates = { off: [], on: [], sampled: [] } as Record<Config, number[]>
  const errors = { off: 0, on: 0, sampled: 0 } as Record<Config, number>
  for (let block = 0; block < blocks; block++) {
    for (let i = 0; i < configs.length; i++) {
      const config = configs[(i + block) % configs.length]!
      const result = await throughput(() => send(config), requests, CONCURRENCY)
      rates[config].push(result.perSecond)
      errors[config] += result.errors
    }
  }
  const out = {} as Record<Config, Cell['throughput']>
  for (const config of configs) {
    out[config] = {
      requests: requests * blocks,
      concurrency: CONCURRENCY,
      perSecond: Math.round(median(rates[config]) * 10) / 10,
      blocks: rates[config].map((r) => Math.round(r * 10) / 10),
      errors: errors[config],
    }
  }
  return out
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const startedAt = performance.now()
  const mf = await start()
  try {
    const fetchers = new Map<
      string,
      { fetch: (url: string, init?: RequestInit) => Promise<Response> }
    >()
    const fetcherFor = async (name: string) => {
      let fetcher = fetchers.get(name)
      if (!fetcher) {
        fetcher = (await mf.getWorker(name)) as unknown as {
          fetch: (url: string, init?: RequestInit) => Promise<Response>
        }
        fetchers.set(name, fetcher)
      }
      return fetcher
    }
    const prompt = 'The quarterly ledger stays private to this tenant. '.repeat(80)
    const body = JSON.stringify({
      model: MODEL,
      max_tokens: 64,
      messages: [{ role: 'user', content: prompt }],
    })
    const send = async (config: Config) => {
      const worker = await fetcherFor(`guard-${config}`)
      const t0 = performance.now()
      const res = await worker.fetch('http://guard.bench/v1/chat/completions', {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body,
      })
      await res.arrayBuffer()
      return { ms: performance.now() - t0, ok: res.status === 200 }
    }
    // The simulator at zero delays: only the guard's (and the telemetry's) own work shows.
    const sim = await fetcherFor('workers-ai-sim')
    await sim.fetch('http://sim.bench/sim/reset', {
      method: 'POST',
      body: JSON.stringify({ prefillTokensPerSecond: 1e12, decodeTokensPerSecond: 1e12 }),
    })

    const rounds = quick ? 90 : 402
    const samples = await latencies(send, rounds)
    const offMedian = median(samples.off)
    const rates = await throughputs(send, quick ? 60 : 300, quick ? 6 : 10)
    const cells: Cell[] = []
    for (const config of Object.keys(CONFIGS) as Config[]) {
      const cell: Cell = {
        config,
        latency: summarize(samples[config]),
        added: summarize(samples[config].map((ms, i) => ms - samples.off[i]!)),
        ratio: Math.round((median(samples[config]) / offMedian) * 1000) / 1000,
        throughput: rates[config],
      }
      console.log(
        `  ${config.padEnd(8)} median ${cell.latency.median.toFixed(2)} ms (×${cell.ratio}, +${cell.added.median.toFixed(2)} ms per round), p99 ${cell.latency.p99.toFixed(2)} ms; ${cell.throughput.perSecond} req/s at concurrency 4`,
      )
      cells.push(cell)
    }

    const probe = await fetcherFor('probe')
    const probeRows: ProbeRow[] = []
    const n = quick ? 100 : 500
    for (const [kind, rate] of [
      ['select1', 1],
      ['release', 1],
      ['release', 0],
      ['reject', 1],
      ['quarantine', 1],
    ] as const) {
      const res = await probe.fetch(`http://probe.bench/?kind=${kind}&rate=${rate}&n=${n}`)
      const { times, costs = [] } = (await res.json()) as {
        times: number[]
        costs?: { rowsWritten: number; rowsRead: number; statements: number }[]
      }
      const row: ProbeRow = {
        kind: kind === 'release' && rate === 0 ? 'release (not sampled)' : kind,
        rate,
        batch: summarize(times.slice(5)),
        mean:
          Math.round((times.slice(5).reduce((a, b) => a + b, 0) / (times.length - 5)) * 1000) /
          1000,
        rowsWritten: costs.length ? median(costs.map((c) => c.rowsWritten)) : 0,
        rowsRead: costs.length ? median(costs.map((c) => c.rowsRead)) : 0,
        statements: costs.length ? median(costs.map((c) => c.statements)) : 0,
      }
      console.log(
        `  D1 ${row.kind.padEnd(22)} median ${row.batch.median.toFixed(3)} ms, mean ${row.mean.toFixed(3)} ms, p99 ${row.batch.p99.toFixed(3)} ms; ${row.statements} statements, ${row.rowsWritten} rows written, ${row.rowsRead} read`,
      )
      probeRows.push(row)
    }

    const db = await mf.getD1Database('QUARANTINE_DB', 'probe')
    const stored = await db
      .prepare(
        "SELECT COUNT(*) AS n, SUM(action = 'release') AS releases, SUM(weight) AS weighted FROM verdict_samples",
      )
      .first<{ n: number; releases: number; weighted: number }>()
    await writeResult('telemetry', {
      suite: 'telemetry',
      quick,
      machine: machineInfo(),
      reproduce: reproduce('telemetry', quick, startedAt),
      description:
        'The guard Worker (src/worker) in workerd (Miniflare) with local D1 and Durable Objects, the simulator bound as env.AI at zero delays, a ~1,000-token prompt: telemetry off (VERDICT_TELEMETRY=off), on (VERDICT_SAMPLE_RATE=1) and sampled (0.1). latency: alternating sequential rounds timed from Node to the last body byte; the write goes through waitUntil, after the answer. throughput: fixed concurrency 4, where the background writes compete with answers. d1: one D1Telemetry.record (one db.batch) timed inside workerd, rows as D1 reports them; select1 is a bare D1 round trip for scale.',
      cells,
      d1: probeRows,
      storedSamples: stored,
    })
  } finally {
    await mf.dispose()
  }
}

const suite: Suite = { name: 'telemetry', run }
export default suite
