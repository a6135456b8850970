/**
 * @module Benchmark: a peer side by side — Portkey's open-source gateway and this guard Worker, each in
 * front of the same simulator process, driven by the same load generator in one run.
 */
import { join } from 'node:path'
import {
  machineInfo,
  median,
  ms,
  ROOT,
  type Suite,
  type SuiteOptions,
  type Summary,
  summarize,
  writeResult,
} from '../lib'
import { type LoadResult, load, timedFetch } from '../support/http'
import { PEER_KEY } from '../support/peer-env'
import { printedPort, startPortkey, startSimulator } from '../support/peers'
import { type Child, startChild } from '../support/processes'
import { BENCH_SECRET, MODEL } from '../support/prompts'
import { type RunningWorker, startWorker } from '../support/workerd'
import { cpuMs, startedWorkerd } from '../support/workerd-cpu'
import { english } from '../texts'

const TENANT_KEYS = JSON.stringify({ [PEER_KEY]: 'bench' })

interface Target {
  name: 'direct' | 'portkey' | 'proxy-workerd' | 'js-proxy-workerd' | 'guard-workerd' | 'guard-node'
  label: string
  url: string
  headers: Record<string, string>
  checks: string
  /** Everything its process printed so far, where the bench started that process. */
  log?: () => string
  /** Its workerd process, whose CPU time per request the bench reads. */
  pid?: number
}

/** A failed target on a workload: its answer and, from its own log, the error it printed. */
interface Failure {
  target: Target['name']
  workload: string
  status: number
  body: string
  logged?: string
}

/** The first error a process printed (`TypeError: …`), for the report of a target that failed. */
function loggedError(output: string): string | undefined {
  return /\b[A-Z]\w*Error: [^\n]*/.exec(output)?.[0].slice(0, 200)
}

interface Workload {
  name: string
  /** Approximate prompt tokens (o200k). */
  tokens: number
  stream: boolean
  body: string
}

function workload(name: string, tokens: number, stream: boolean): Workload {
  const text = english(11, tokens * 4.1)
  return {
    name,
    tokens,
    stream,
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: 'user', content: text }],
      ...(stream ? { stream: true } : {}),
    }),
  }
}

/** One request of the workload to the target (its body read to the end; kept with `keepText`). */
function request(target: Target, w: Workload, keepText = false) {
  return timedFetch(
    `${target.url}/v1/chat/completions`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...target.headers },
      body: w.body,
    },
    keepText,
  )
}

function send(target: Target, w: Workload) {
  return () => request(target, w)
}

interface LatencyRow {
  workload: string
  tokens: number
  stream: boolean
  target: Target['name']
  total: Summary
  firstByte: Summary
  /** Per-round difference from the direct request of the same round. */
  added: Summary
  errors: number
}

interface ThroughputRow {
  workload: string
  target: Target['name']
  concurrency: number
  requests: number
  requestsPerSecond: number
  latency: Summary
  errors: number
  /**
   * Streams: the events (and bytes) of one answer as this target delivers it, mean of a few untimed
   * requests, and requests/s × events. The guard's prompt carries its directive and markers, which the
   * simulator quotes, so its answers are longer than the same prompt's direct ones: per event is the
   * like-for-like figure of the stream path.
   */
  answer?: { events: number; bytes: number }
  eventsPerSecond?: number
}

/** Events (SSE `data:` lines but `[DONE]`) and bytes of a target's streamed answer: mean of `n`. */
async function answerSize(
  t: Target,
  w: Workload,
  n: number,
): Promise<{ events: number; bytes: number }> {
  let events = 0
  let bytes = 0
  for (let i = 0; i < n; i++) {
    const r = await request(t, w, true)
    const text = r.text ?? ''
    events += text
      .split('\n')
      .filter((l) => l.startsWith('data:') && l.trim() !== 'data: [DONE]').length
    bytes += r.bytes
  }
  return { events: Math.round((events / n) * 10) / 10, bytes: Math.round(bytes / n) }
}

async function latency(targets: Target[], w: Workload, rounds: number): Promise<LatencyRow[]> {
  const samples = new Map<Target['name'], { total: number[]; first: number[]; errors: number }>()
  for (const t of targets) samples.set(t.name, { total: [], first: [], errors: 0 })
  for (let round = 0; round < rounds + 2; round++) {
    // Rotate the order every round so no target always runs first (or after the same neighbour).
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!)
    for (const t of order) {
      const r = await send(t, w)()
      if (round < 2) continue
      const s = samples.get(t.name)!
      s.total.push(r.totalMs)
      s.first.push(r.firstByteMs)
      if (r.status !== 200) s.errors++
    }
  }
  const direct = samples.get('direct')!.total
  return targets.map((t) => {
    const s = samples.get(t.name)!
    return {
      workload: w.name,
      tokens: w.tokens,
      stream: w.stream,
      target: t.name,
      total: summarize(s.total),
      firstByte: summarize(s.first),
      added: summarize(s.total.map((v, i) => v - direct[i]!)),
      errors: s.errors,
    }
  })
}

async function throughput(
  targets: Target[],
  w: Workload,
  count: number,
  concurrency: number,
): Promise<ThroughputRow[]> {
  const results = new Map<Target['name'], LoadResult[]>()
  for (const t of targets) results.set(t.name, [])
  for (let rep = 0; rep < 2; rep++) {
    const order = rep % 2 ? [...targets].reverse() : targets
    for (const t of order) {
      await load(send(t, w), Math.min(8, count), concurrency) // warm
      results.get(t.name)!.push(await load(send(t, w), count, concurrency))
    }
  }
  const sizes = new Map<Target['name'], { events: number; bytes: number }>()
  if (w.stream) for (const t of targets) sizes.set(t.name, await answerSize(t, w, 5))
  return targets.map((t) => {
    const runs = results.get(t.name)!
    const requestsPerSecond = Math.round(median(runs.map((r) => r.requestsPerSecond)) * 10) / 10
    const answer = sizes.get(t.name)
    return {
      workload: w.name,
      target: t.name,
      concurrency,
      requests: count,
      requestsPerSecond,
      latency: summarize(runs.flatMap((r) => r.latencies)),
      errors: runs.reduce((n, r) => n + r.errors, 0),
      ...(answer ? { answer, eventsPerSecond: Math.round(requestsPerSecond * answer.events) } : {}),
    }
  })
}

interface CpuRow {
  workload: string
  target: Target['name']
  requests: number
  /** CPU time of the target's workerd process (every thread) per request, ms: median of the runs. */
  cpuPerRequest: number
  runs: number[]
}

/** Idle after a run before its CPU is read: work a request left to `waitUntil` is billed too. */
const SETTLE_MS = 300

/**
 * CPU time per request of each workerd target: `count` requests one at a time, the process's CPU
 * read before them and after them (and after {@link SETTLE_MS} more), in alternating runs.
 */
async function cpuPerRequest(
  targets: Target[],
  w: Workload,
  count: number,
  runs: number,
): Promise<CpuRow[]> {
  const measured = targets.filter((t) => t.pid !== undefined)
  const samples = new Map<Target['name'], number[]>(measured.map((t) => [t.name, []]))
  for (let r = 0; r < runs; r++) {
    const order = r % 2 ? [...measured].reverse() : measured
    for (const t of order) {
      for (let i = 0; i < 4; i++) await request(t, w) // warm
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
      const before = await cpuMs(t.pid!)
      for (let i = 0; i < count; i++) await request(t, w)
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
      samples.get(t.name)!.push((await cpuMs(t.pid!)) - before)
    }
  }
  return measured.map((t) => {
    const perRun = samples.get(t.name)!.map((ms) => Math.round((ms / count) * 1000) / 1000)
    return {
      workload: w.name,
      target: t.name,
      requests: count,
      cpuPerRequest: median(perRun),
      runs: perRun,
    }
  })
}

function table(
  targets: Target[],
  lat: LatencyRow[],
  thr: ThroughputRow[],
  quick: boolean,
  concurrency: number,
  failed: Failure[],
  cpu: CpuRow[],
): string {
  const m = machineInfo()
  const label = (name: Target['name']) => targets.find((t) => t.name === name)!.label
  const lines = [
    `Same simulator process (OpenAI-compatible HTTP on loopback, delays at zero, every request tokenized afresh as an engine does), same load generator ` +
      `(Node fetch, every body read to the end), one run; Node ${m.node}, ${m.cpu} (${m.cores} cores, shared by ` +
      `the simulator, the gateways and the load generator)${quick ? ', quick run' : ''}. Latency: requests ` +
      'sent one at a time, targets rotating each round; “added” = median (p99) of per-round differences ' +
      'from the direct request.',
    '',
    '| what each checked | |',
    '|---|---|',
    ...targets.map((t) => `| ${t.label} | ${t.checks} |`),
    '',
    '| workload | target | median | p99 | added median | added p99 | errors |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...lat.map(
      (r) =>
        `| ${r.workload} | ${label(r.target)} | ${ms(r.total.median)} | ${ms(r.total.p99)} | ${r.target === 'direct' ? '—' : signed(r.added.median)} | ${r.target === 'direct' ? '—' : signed(r.added.p99)} | ${r.errors} |`,
    ),
    '',
    ...(failed.length > 0
      ? [
          '',
          `Not timed (failed before timing): ${failed.map((f) => `${label(f.target)} on “${f.workload}” → HTTP ${f.status} \`${f.body.replace(/\|/g, '\\|')}\`${f.logged ? `, its own log: \`${f.logged.replace(/\|/g, '\\|')}\`` : ''}`).join('; ')}.`,
        ]
      : []),
    '',
    `Throughput at concurrency ${concurrency} (median of two alternating runs per target). Streams: ` +
      'events per answer as each target delivers it (mean of 5 untimed requests) and requests/s × ' +
      "events — the guard's prompt carries its directive and markers, which the simulator quotes, so " +
      'its answers are longer than the direct ones:',
    '',
    '| workload | target | requests/s | events per answer | events/s | latency median | latency p99 | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...thr.map(
      (r) =>
        `| ${r.workload} | ${label(r.target)} | ${r.requestsPerSecond} | ${r.answer ? `${r.answer.events} (${(r.answer.bytes / 1024).toFixed(1)} KiB)` : '—'} | ${r.eventsPerSecond ?? '—'} | ${ms(r.latency.median)} | ${ms(r.latency.p99)} | ${r.errors} |`,
    ),
    '',
    `CPU per request in workerd (the process's CPU time over ${cpu[0]?.requests ?? 0} requests sent one at a ` +
      `time and ${SETTLE_MS} ms after them, so work left to \`waitUntil\` counts; median of runs):`,
    '',
    '| workload | target | CPU per request |',
    '|---|---|---:|',
    ...cpu.map((r) => `| ${r.workload} | ${label(r.target)} | ${ms(r.cpuPerRequest)} |`),
  ]
  return lines.join('\n')
}

function signed(value: number): string {
  return value < 0 ? `−${ms(-value)}` : ms(value)
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const children: Child[] = []
  let worker: RunningWorker | undefined
  let proxy: RunningWorker | undefined
  let jsProxy: RunningWorker | undefined
  try {
    const simulator = await startSimulator()
    children.push(simulator.child)
    const simUrl = simulator.url
    const portkey = await startPortkey()
    children.push(portkey.child)
    const guardNode = await startChild(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'bench', 'support', 'guard-server.ts')],
      /\{"port":\d+\}/,
      {
        cwd: ROOT,
        env: { ...process.env, SIM_URL: simUrl, GUARD_SECRET: BENCH_SECRET, TENANT_KEYS },
      },
    )
    children.push(guardNode)
    const startedPlain = await startedWorkerd(() =>
      startWorker('bench/support/proxy-worker.ts', { SIM_URL: simUrl }),
    )
    proxy = startedPlain.value
    const startedJs = await startedWorkerd(() =>
      startWorker('bench/support/proxy-worker.ts', { SIM_URL: simUrl, READ: 'js' }),
    )
    jsProxy = startedJs.value
    const startedGuard = await startedWorkerd(() =>
      startWorker('bench/support/peer-worker.ts', {
        SIM_URL: simUrl,
        GUARD_SECRET: BENCH_SECRET,
        TENANT_KEYS,
      }),
    )
    worker = startedGuard.value
    const guardChecks =
      'token ceiling (built-in glm-5.3 profile) before the call; canary echo + foreign-canary scan on every ' +
      'byte; time-to-first-token evidence (prompts long enough to judge); secrets in the prompt ' +
      "detected and substituted, stand-ins restored and recognised on every byte (the Worker's " +
      'default); quarantine on failure'
    const targets: Target[] = [
      {
        name: 'direct',
        label: 'direct (simulator)',
        url: simUrl,
        headers: { authorization: 'Bearer worker' },
        checks: 'nothing (the baseline)',
      },
      {
        name: 'portkey',
        label: `Portkey gateway ${'1.15.2'} (Node)`,
        url: `http://127.0.0.1:${portkey.port}`,
        log: () => portkey.child.output(),
        headers: {
          authorization: 'Bearer worker',
          'x-portkey-provider': 'openai',
          'x-portkey-custom-host': `${simUrl}/v1`,
        },
        checks:
          'no content checks (default config: no guardrails, no cache, no retries configured); routes to the ' +
          'provider and maps the OpenAI format',
      },
      {
        name: 'proxy-workerd',
        label: 'plain proxy Worker (workerd)',
        url: proxy.url,
        pid: startedPlain.pid,
        headers: {},
        checks:
          'nothing: forwards to the simulator and streams the answer back (the floor any Worker in front of it pays)',
      },
      {
        name: 'js-proxy-workerd',
        label: 'reading proxy Worker (workerd)',
        url: jsProxy.url,
        pid: startedJs.pid,
        headers: {},
        checks:
          'nothing, but it does what any Worker that inspects the traffic must: parses the request and serialises it again, parses a whole answer and serialises it again, reads every chunk of a stream in JavaScript and enqueues it again (the floor of any inspecting Worker)',
      },
      {
        name: 'guard-workerd',
        label: 'this guard Worker (workerd)',
        url: worker.url,
        pid: startedGuard.pid,
        headers: { authorization: `Bearer ${PEER_KEY}` },
        checks: `${guardChecks}. \`src/worker\` app in workerd (Miniflare), AI = the simulator over HTTP`,
      },
      {
        name: 'guard-node',
        label: 'this guard Worker (Node)',
        url: `http://127.0.0.1:${printedPort(guardNode.output())}`,
        headers: { authorization: `Bearer ${PEER_KEY}` },
        checks: `the same app and checks on Node 22 (like-for-like runtime with Portkey)`,
      },
    ]
    const workloads = [
      workload('1k tokens, whole', 1_000, false),
      workload('1k tokens, stream', 1_000, true),
      workload('32k tokens, whole', 32_000, false),
    ]
    // Every target must answer 200 before it is timed on a workload; one that cannot is reported, not timed.
    const failed: Failure[] = []
    const ok = new Map<string, Target[]>()
    for (const w of workloads) {
      const able: Target[] = []
      for (const t of targets) {
        const logged0 = t.log?.().length ?? 0
        const r = await request(t, w, true)
        if (r.status === 200) able.push(t)
        else {
          // Its log line may follow its answer by a moment.
          await new Promise((resolve) => setTimeout(resolve, 100))
          const logged = loggedError(t.log?.().slice(logged0) ?? '')
          failed.push({
            target: t.name,
            workload: w.name,
            status: r.status,
            body: (r.text ?? '').slice(0, 300),
            ...(logged ? { logged } : {}),
          })
        }
      }
      if (!able.some((t) => t.name === 'direct')) throw new Error(`the simulator failed ${w.name}`)
      ok.set(w.name, able)
    }
    for (const f of failed)
      console.log(
        `  ${f.target} cannot serve ${f.workload}: ${f.status} ${f.body}${f.logged ? ` (its log: ${f.logged})` : ''}`,
      )
    const lat: LatencyRow[] = []
    for (const w of workloads) {
      const rows = await latency(
        ok.get(w.name)!,
        w,
        w.tokens > 1_000 ? (quick ? 10 : 60) : quick ? 20 : 150,
      )
      for (const r of rows) {
        console.log(
          `  ${w.name.padEnd(18)} ${r.target.padEnd(13)} ${ms(r.total.median).padStart(9)}  added ${signed(r.added.median).padStart(9)}  p99 ${ms(r.total.p99)}${r.errors ? `  ${r.errors} errors` : ''}`,
        )
      }
      lat.push(...rows)
    }
    const concurrency = 8
    const thr: ThroughputRow[] = []
    for (const w of workloads.slice(0, 2)) {
      const rows = await throughput(ok.get(w.name)!, w, quick ? 80 : 400, concurrency)
      for (const r of rows) {
        console.log(
          `  ${w.name.padEnd(18)} ${r.target.padEnd(13)} ${String(r.requestsPerSecond).padStart(7)} req/s at c=${concurrency}${r.errors ? `  ${r.errors} errors` : ''}`,
        )
      }
      thr.push(...rows)
    }
    const cpu: CpuRow[] = []
    for (const w of workloads.slice(0, 2)) {
      const rows = await cpuPerRequest(ok.get(w.name)!, w, quick ? 40 : 200, quick ? 2 : 4)
      for (const r of rows) {
        console.log(
          `  ${w.name.padEnd(18)} ${r.target.padEnd(13)} CPU ${ms(r.cpuPerRequest)} per request`,
        )
      }
      cpu.push(...rows)
    }
    const path = await writeResult('peer', {
      suite: 'peer',
      date: new Date().toISOString(),
      quick,
      machine: machineInfo(),
      targets: targets.map(({ name, label, checks }) => ({ name, label, checks })),
      config: {
        simulator:
          'sim/http.ts over SimEngine, prefill and decode Infinity, every request tokenized afresh as a real engine does (no memo of repeated long prompts), one process (bench/support/sim-server.ts)',
        portkey: '@portkey-ai/gateway 1.15.2 build/start-server.js, default config',
        guard:
          'src/worker createApp, env.AI = openAiHttpUpstream(simulator), built-in glm-5.3 profile',
        loadGenerator: 'bench/support/http.ts (Node fetch, loopback)',
      },
      note: 'Times in ms. added = per-round target − direct.',
      failed,
      latency: lat,
      throughput: thr,
      cpu,
    })
    console.log(table(targets, lat, thr, quick, concurrency, failed, cpu))
    console.log(`  wrote ${path}`)
  } finally {
    await worker?.dispose()
    await proxy?.dispose()
    await jsProxy?.dispose()
    for (const child of children.reverse()) await child.stop()
  }
}

const suite: Suite = { name: 'peer', run }
export default suite
