/**
 * @module Benchmark: the guard's SSE path against a plain pass-through of the same bytes (throughput),
 * and the extra time to first byte its canary hold-back costs a client at realistic decode rates.
 */
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { createGuard, type EchoWording, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { parseFrame } from '../../src/core/format/frames'
import { encodeSseEvent, type SseEvent, sseDecoder } from '../../src/core/format/sse'
import {
  machineInfo,
  median,
  ms,
  percentile,
  type Suite,
  type SuiteOptions,
  type Summary,
  sideBySide,
  summarize,
  writeResult,
} from '../lib'
import { BENCH_SECRET, chat, ledger, MODEL, withLookalikeDirective } from '../support/prompts'
import { recordStream, replay } from '../support/streams'

const TENANT = 'bench'
const REQUEST_ID = 'stream-bench'
const RATES = [30, 60, 100]
const SHORT_PROMPT = { messages: [{ role: 'user', content: 'Explain the quarterly ledger.' }] }

/** The canary the guard will mint for attempt 1 of REQUEST_ID (its request ids are injectable). */
async function benchCanary(): Promise<string> {
  return mintCanary(await importCanaryKey(BENCH_SECRET), {
    requestId: `${REQUEST_ID}/1`,
    tenant: TENANT,
  })
}

function guardOver(
  upstream: AiRunner,
  now?: () => number,
  directive: EchoWording = 'reply-first',
): AiRunner {
  return guardAi(upstream, {
    secret: BENCH_SECRET,
    tenant: TENANT,
    hooks: { requestId: () => REQUEST_ID, ...(now ? { now } : {}) },
    models: { [MODEL]: { directive } },
  })
}

/** Events back to SSE bytes, one chunk per event, as the guard writes them (encodeSseEvent). */
function sseEncoder(): TransformStream<SseEvent, Uint8Array> {
  const utf8 = new TextEncoder()
  return new TransformStream<SseEvent, Uint8Array>({
    transform(event, controller) {
      controller.enqueue(utf8.encode(encodeSseEvent(event)))
    },
  })
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let bytes = 0
  const reader = stream.getReader()
  while (true) {
    const { done, value } = await reader.read()
    if (done) return bytes
    bytes += value.length
  }
}

interface ThroughputRow {
  name: string
  description: string
  time: Summary
  /** Upstream bytes per second (the same bytes enter every path). */
  bytesPerSecond: number
  /** Share of the pass-through's throughput. */
  ofPassThrough: number
  /**
   * The same share round by round (the pass-through's time over this path's, in one round): its
   * median and middle half, which show how far this host lets one run's figure be trusted.
   */
  perRound: { median: number; low: number; high: number }
}

async function throughput(quick: boolean) {
  const canary = await benchCanary()
  const tokens = quick ? 24_000 : 90_000
  const rec = recordStream({
    echo: canary,
    reasoningTokens: tokens / 2,
    contentTokens: tokens / 2,
  })
  const upstream: AiRunner = { run: async () => replay(rec) }
  const guarded = guardOver(upstream)
  const withoutContent = guardAi(upstream, {
    secret: BENCH_SECRET,
    tenant: TENANT,
    hooks: { requestId: () => REQUEST_ID },
    content: false,
  })
  // Sanity: the guard releases the whole answer with only its own canary removed.
  const check = (await guarded.run(MODEL, { ...SHORT_PROMPT, stream: true })) as ReadableStream
  const delivered = await new Response(check).text()
  if (delivered.includes(canary) || delivered.length < rec.bytes * 0.99) {
    throw new Error('the guard did not release the recorded stream intact')
  }
  const contenders = {
    passThrough: () =>
      drain(replay(rec).pipeThrough(new TransformStream<Uint8Array, Uint8Array>())),
    sseCodec: () => drain(replay(rec).pipeThrough(sseDecoder()).pipeThrough(sseEncoder())),
    guard: async () =>
      drain((await guarded.run(MODEL, { ...SHORT_PROMPT, stream: true })) as ReadableStream),
    // The same path without the foreign-content check: what its shingling and lookups cost.
    guardNoContent: async () =>
      drain((await withoutContent.run(MODEL, { ...SHORT_PROMPT, stream: true })) as ReadableStream),
  }
  const samples = await sideBySide(contenders, quick ? 5 : 40, 2)
  const pass = median(samples.passThrough)
  const describe: Record<keyof typeof contenders, string> = {
    passThrough: 'plain pass-through (one identity TransformStream)',
    sseCodec: "the guard's SSE decoder + encoder only (no checks)",
    guard:
      'guardAi stream, one pass: read with stall deadlines, split, frames, verdict, canary scan/strip, hold-back',
    guardNoContent: 'the same with `foreignContent: false` (no shingling or fingerprint lookups)',
  }
  const rows: ThroughputRow[] = (Object.keys(contenders) as (keyof typeof contenders)[]).map(
    (name) => {
      const med = median(samples[name])
      const ratios = samples[name].map((t, i) => samples.passThrough[i]! / t)
      const share = (value: number) => Math.round(value * 1000) / 1000
      return {
        name,
        description: describe[name],
        time: summarize(samples[name]),
        bytesPerSecond: Math.round((rec.bytes / med) * 1000),
        ofPassThrough: Math.round((pass / med) * 1000) / 1000,
        perRound: {
          median: share(median(ratios)),
          low: share(percentile(ratios, 25)),
          high: share(percentile(ratios, 75)),
        },
      }
    },
  )
  for (const r of rows) {
    console.log(
      `  ${r.name.padEnd(12)} ${ms(r.time.median).padStart(9)}  ${(r.bytesPerSecond / 1e6).toFixed(2)} MB/s  ${(r.ofPassThrough * 100).toFixed(0)}% of pass-through (per round ${pct(r.perRound.low)}–${pct(r.perRound.high)})`,
    )
  }
  return {
    stream: {
      bytes: rec.bytes,
      chunks: rec.chunks.length,
      events: rec.events,
      reasoningTokens: rec.reasoningTokens,
      contentTokens: rec.contentTokens,
    },
    rows,
  }
}

/** Virtual time at which the first byte, and the first content text, reached the reader. */
async function firstTimes(
  stream: ReadableStream<Uint8Array>,
  clock: VirtualClock,
  start: number,
): Promise<{ firstByteMs: number; firstContentMs: number }> {
  let firstByteMs = Number.NaN
  let firstContentMs = Number.NaN
  const stamped = stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (Number.isNaN(firstByteMs)) firstByteMs = clock.now() - start
        controller.enqueue(chunk)
      },
    }),
  )
  const reader = stamped.pipeThrough(sseDecoder()).getReader()
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    if (Number.isNaN(firstContentMs) && parseFrame(value).texts.content) {
      firstContentMs = clock.now() - start
    }
  }
  return { firstByteMs, firstContentMs }
}

interface TtfbRow {
  source: string
  /** The guard's `streamRelease` policy. */
  policy: 'verified' | 'async'
  rate: number
  reasoningTokens: number
  runs: number
  unguarded: { firstByteMs: number; firstContentMs: number }
  guarded: { firstByteMs: number; firstContentMs: number }
  /** Extra time to first byte, ms and decode tokens (ms × rate). */
  extraFirstByteMs: number
  extraFirstByteTokens: number
  /** Extra time to the first content text. */
  extraFirstContentMs: number
  extraFirstContentTokens: number
}

function ttfbRow(
  source: string,
  policy: TtfbRow['policy'],
  rate: number,
  reasoningTokens: number,
  u: { firstByteMs: number; firstContentMs: number }[],
  g: { firstByteMs: number; firstContentMs: number }[],
): TtfbRow {
  const m = (list: { firstByteMs: number; firstContentMs: number }[]) => ({
    firstByteMs: Math.round(median(list.map((x) => x.firstByteMs))),
    firstContentMs: Math.round(median(list.map((x) => x.firstContentMs))),
  })
  const unguarded = m(u)
  const guarded = m(g)
  const extraFirstByteMs = guarded.firstByteMs - unguarded.firstByteMs
  const extraFirstContentMs = guarded.firstContentMs - unguarded.firstContentMs
  return {
    source,
    policy,
    rate,
    reasoningTokens,
    runs: u.length,
    unguarded,
    guarded,
    extraFirstByteMs,
    extraFirstByteTokens: Math.round((extraFirstByteMs * rate) / 1000),
    extraFirstContentMs,
    extraFirstContentTokens: Math.round((extraFirstContentMs * rate) / 1000),
  }
}

/**
 * The simulator's own model at `rate`: a short reasoning paragraph quoting the prompt, then the answer;
 * `habits` (e.g. restating the directive, code included, first thing in the reasoning) on top.
 */
async function simulatorRow(
  label: string,
  policy: TtfbRow['policy'],
  rate: number,
  seeds: number,
  habits: Record<string, number>,
  directive: EchoWording = 'reply-first',
): Promise<TtfbRow> {
  const u: { firstByteMs: number; firstContentMs: number }[] = []
  const g: { firstByteMs: number; firstContentMs: number }[] = []
  let reasoning = 0
  for (let seed = 1; seed <= seeds; seed++) {
    const config = { seed, decodeTokensPerSecond: rate, prefillTokensPerSecond: 50_000, ...habits }
    const inputs = chat(ledger('ACME', 4_000), { stream: true })
    const clockU = new VirtualClock()
    const engineU = new SimEngine(config, { clock: clockU })
    let start = clockU.now()
    const outU = await engineU
      .binding('worker')
      .run(MODEL, withLookalikeDirective(inputs, directive))
    u.push(await firstTimes(outU as ReadableStream<Uint8Array>, clockU, start))
    const clockG = new VirtualClock()
    const engineG = new SimEngine(config, { clock: clockG })
    // A guard of its own per sample (its own clock, nothing learnt from the samples before it).
    const guarded = createGuard({
      secret: BENCH_SECRET,
      hooks: { now: () => clockG.now() },
      stream: { release: policy },
      models: { [MODEL]: { directive } },
    }).wrap(engineG.binding('worker'), { tenant: TENANT })
    start = clockG.now()
    const outG = await guarded.run(MODEL, inputs)
    g.push(await firstTimes(outG as ReadableStream<Uint8Array>, clockG, start))
    reasoning += Math.round(((u.at(-1)!.firstContentMs - u.at(-1)!.firstByteMs) * rate) / 1000)
  }
  return ttfbRow(label, policy, rate, Math.round(reasoning / seeds), u, g)
}

/** A recorded 1,000-token thinker at `rate`, unguarded and guarded with this directive wording. */
async function longThinkerRow(
  canary: string,
  rate: number,
  directive: EchoWording,
): Promise<TtfbRow> {
  const rec = recordStream({
    echo: canary,
    reasoningTokens: 1_000,
    contentTokens: 200,
    decodeTokensPerSecond: rate,
    prefillMs: 80,
    noteFirst: directive === 'note-first',
  })
  const clockU = new VirtualClock()
  let start = clockU.now()
  const ru = await firstTimes(replay(rec, clockU), clockU, start)
  const clockG = new VirtualClock()
  const guarded = guardOver({ run: async () => replay(rec, clockG) }, () => clockG.now(), directive)
  start = clockG.now()
  const outG = await guarded.run(MODEL, { ...SHORT_PROMPT, stream: true })
  const rg = await firstTimes(outG as ReadableStream<Uint8Array>, clockG, start)
  const label =
    directive === 'note-first' ? '1,000-token reasoning, note-first' : '1,000-token reasoning'
  return ttfbRow(label, 'verified', rate, 1_000, [ru], [rg])
}

async function holdBack(quick: boolean): Promise<TtfbRow[]> {
  const rows: TtfbRow[] = []
  const seeds = quick ? 3 : 9
  const canary = await benchCanary()
  for (const rate of RATES) {
    rows.push(await simulatorRow('simulator model', 'verified', rate, seeds, {}))
    // Released on the first proof: the model restates the directive, code included, as it starts.
    const restating = { directiveQuoteRate: 1 }
    rows.push(await simulatorRow('simulator, restating', 'verified', rate, seeds, restating))
    // The operator's latency policy: released from the first token, proof and evidence checked after.
    rows.push(await simulatorRow('simulator model', 'async', rate, seeds, {}))
    rows.push(await simulatorRow('simulator, restating', 'async', rate, seeds, restating))
    // The `note-first` wording on a model that follows it: it notes the code as it starts.
    const noting = { thinkingNoteRate: 1 }
    rows.push(
      await simulatorRow('simulator, note-first', 'verified', rate, seeds, noting, 'note-first'),
    )
    // A long thinker: 1,000 reasoning tokens before the answer (GLM-5.3 cannot switch reasoning off),
    // and the same thinker following the `note-first` wording.
    rows.push(await longThinkerRow(canary, rate, 'reply-first'))
    rows.push(await longThinkerRow(canary, rate, 'note-first'))
  }
  for (const r of rows) {
    console.log(
      `  ${r.source.padEnd(22)} ${String(r.rate).padStart(3)} tok/s  first byte ${r.unguarded.firstByteMs} → ${r.guarded.firstByteMs} ms (+${r.extraFirstByteTokens} tok)  first content ${r.unguarded.firstContentMs} → ${r.guarded.firstContentMs} ms (+${r.extraFirstContentTokens} tok)`,
    )
  }
  return rows
}

function pct(share: number): string {
  return `${(share * 100).toFixed(0)}%`
}

function table(t: Awaited<ReturnType<typeof throughput>>, hold: TtfbRow[], quick: boolean): string {
  const m = machineInfo()
  const guard = t.rows.find((r) => r.name === 'guard')!
  const lines = [
    `Throughput: one recorded answer (${t.stream.reasoningTokens.toLocaleString('en-US')} reasoning + ` +
      `${t.stream.contentTokens.toLocaleString('en-US')} content tokens, ${t.stream.events.toLocaleString('en-US')} SSE events, ` +
      `${(t.stream.bytes / 1e6).toFixed(2)} MB in ${t.stream.chunks.toLocaleString('en-US')} chunks split at the simulator's awkward byte boundaries), ` +
      `replayed as identical bytes through each path, side by side; Node ${m.node}, ${m.cpu} (${m.cores} cores)${quick ? ', quick run' : ''}. ` +
      `Target ≥ 60% of pass-through: ${guard.ofPassThrough >= 0.6 ? 'met' : 'not met'} (${(guard.ofPassThrough * 100).toFixed(0)}%).`,
    '',
    '| path | median time | throughput | of pass-through | per round: median (middle half) |',
    '|---|---:|---:|---:|---:|',
    ...t.rows.map(
      (r) =>
        `| ${r.description} | ${ms(r.time.median)} | ${(r.bytesPerSecond / 1e6).toFixed(2)} MB/s | ${(r.ofPassThrough * 100).toFixed(0)}% | ${pct(r.perRound.median)} (${pct(r.perRound.low)}–${pct(r.perRound.high)}) |`,
    ),
    '',
    'Hold-back: time to the first byte and to the first answer (content) text a client receives, unguarded ' +
      'and guarded, on a virtual clock shared by upstream and guard (exact simulated time; ±2 SSE events of ' +
      'read-ahead). The guard releases nothing — reasoning included — until its canary has shown up: at the ' +
      'start of the content (the echo), so the first byte waits for the whole reasoning, or restated in the ' +
      'reasoning by a model that restates its instructions (“restating”) or notes it first where the ' +
      "directive asks (“note-first”, the profile's `directive: 'note-first'`), released from there; after that the " +
      'foreign-content check holds back the last 9 words of a channel until it has judged them (21 while ' +
      'any of the last 21 matched another tenant), so the first content words wait for about 9 more (a ' +
      'quote-heavy answer: more tokens per word). Under the ' +
      'opt-in `async` policy the stream is released as soon as its first token is timed and the ' +
      'foreign-canary scan passed, with no foreign-content hold-back: the proof and the evidence are ' +
      'checked as the text leaves, and a failure ends the stream in-stream (detection matrix: what that ' +
      'lets through).',
    '',
    '| upstream | policy | decode | reasoning tokens | first byte: unguarded → guarded | extra (tokens) | first content: unguarded → guarded | extra (tokens) |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...hold.map(
      (r) =>
        `| ${r.source} | ${r.policy} | ${r.rate} tok/s | ${r.reasoningTokens.toLocaleString('en-US')} | ${ms(r.unguarded.firstByteMs)} → ${ms(r.guarded.firstByteMs)} | +${ms(r.extraFirstByteMs)} (${r.extraFirstByteTokens}) | ${ms(r.unguarded.firstContentMs)} → ${ms(r.guarded.firstContentMs)} | +${ms(Math.max(0, r.extraFirstContentMs))} (${r.extraFirstContentTokens}) |`,
    ),
  ]
  return lines.join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const t = await throughput(quick)
  const hold = await holdBack(quick)
  const path = await writeResult('streaming', {
    suite: 'streaming',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    note:
      'Throughput times in ms for the whole recorded stream; bytesPerSecond = upstream bytes / median ' +
      'time. Hold-back times are virtual (simulated) ms; extra tokens = extra ms × decode rate.',
    throughput: t,
    holdBack: hold,
  })
  console.log(table(t, hold, quick))
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'streaming', run }
export default suite
