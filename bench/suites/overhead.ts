/**
 * @module Benchmark: what the guard adds to each request, with the simulator's delays at zero so only
 * the guard's own work shows, and again with the simulator prefilling fresh prompts at the profile's
 * physical bound (the fastest honest engine), where work done while the engine reads overlaps it — in workerd (a bench Worker timed from Node over loopback HTTP) and
 * in-process on Node 22 (guardAi over SimEngine, timed with performance.now).
 */

import { SimEngine } from '../../sim/engine'
import { loadTokenizer } from '../../sim/tokenizer'
import { guardAi } from '../../src'
import { countTokens } from '../../src/core/ceiling/count'
import {
  machineInfo,
  median,
  ms,
  type Suite,
  type SuiteOptions,
  type Summary,
  summarize,
  writeResult,
} from '../lib'
import { timedFetch } from '../support/http'
import {
  BENCH_SECRET,
  chat,
  freshPrompt,
  MODEL,
  PHYSICAL_PREFILL_TOKENS_PER_SECOND,
  withLookalikeDirective,
} from '../support/prompts'
import { startWorker } from '../support/workerd'
import { english } from '../texts'

const SIZES = [1_000, 32_000, 256_000]
/** Sizes also timed with a fresh prompt every request, on both engines (whole answers). */
const PREFILL_SIZES = [1_000, 32_000]

/**
 * `instant`: prefill and decode take no time, and one prompt is resent by the same tenant, which the
 * prefix cache serves — the only way an engine answers a long prompt at once, and everything the guard
 * does is on the request's path (what it remembers of the tenant's texts included, src/core/memo). `fresh`:
 * the same instant engine, but a new prompt every request — no engine reads a new long prompt in no
 * time, so this is the guard's whole work with nothing to overlap or remember. `prefill`: every prompt
 * is new and the engine reads it at the profile's physical bound, so the guard's after-send work (the
 * prompt's count and print) runs while it does — the latency a client of the fastest honest engine sees.
 */
type Engine = 'instant' | 'fresh' | 'prefill'

/** Rounds per size (each round: one direct and one guarded request, order alternating). */
function roundsFor(tokens: number, quick: boolean, engine: Engine = 'instant'): number {
  if (engine !== 'instant') return quick ? 10 : tokens <= 1_000 ? 150 : 60
  if (tokens <= 1_000) return quick ? 40 : 300
  if (tokens <= 32_000) return quick ? 20 : 150
  return quick ? 6 : 30
}

/** One cell: a size, streaming or not, on one runtime. */
interface Cell {
  runtime: 'workerd' | 'node'
  engine: Engine
  targetTokens: number
  tokens: number
  chars: number
  stream: boolean
  direct: Summary
  guarded: Summary
  /** Per-round differences guarded − direct (ms). */
  added: Summary
  /** Those differences, round by round (ms, to the µs): runs of two trees can be pooled and compared. */
  addedSamples: number[]
  /** guarded median ÷ direct median. */
  ratio: number
  /** Time to first body byte (workerd, streams only). */
  firstByte?: { direct: Summary; guarded: Summary }
  /** Guarded requests that did not come back as a released answer. */
  guardedErrors: number
  directErrors: number
}

/** Characters of English prose that make about `target` o200k tokens. */
async function charsFor(target: number): Promise<{ chars: number; tokens: number }> {
  const sample = english(7, 50_000)
  const perToken = sample.length / (await countTokens([sample]))
  const chars = Math.round(target * perToken)
  return { chars, tokens: await countTokens([english(7, chars)]) }
}

/** Alternates A/B per round, after `warmup` untimed rounds; returns the samples of each side. */
async function alternate<T extends { ms: number; ok: boolean }>(
  rounds: number,
  warmup: number,
  direct: () => Promise<T>,
  guarded: () => Promise<T>,
): Promise<{ direct: T[]; guarded: T[] }> {
  const out = { direct: [] as T[], guarded: [] as T[] }
  for (let round = 0; round < warmup + rounds; round++) {
    const first = round % 2 === 0
    const a = first ? await direct() : await guarded()
    const b = first ? await guarded() : await direct()
    if (round < warmup) continue
    out.direct.push(first ? a : b)
    out.guarded.push(first ? b : a)
  }
  return out
}

function cellOf(
  runtime: Cell['runtime'],
  engine: Engine,
  size: { target: number; tokens: number; chars: number },
  stream: boolean,
  samples: { direct: Sample[]; guarded: Sample[] },
): Cell {
  const d = samples.direct.map((s) => s.ms)
  const g = samples.guarded.map((s) => s.ms)
  const diffs = g.map((v, i) => v - d[i]!)
  const cell: Cell = {
    runtime,
    engine,
    targetTokens: size.target,
    tokens: size.tokens,
    chars: size.chars,
    stream,
    direct: summarize(d),
    guarded: summarize(g),
    added: summarize(diffs),
    addedSamples: diffs.map((v) => Math.round(v * 1000) / 1000),
    ratio: Math.round((median(g) / median(d)) * 1000) / 1000,
    guardedErrors: samples.guarded.filter((s) => !s.ok).length,
    directErrors: samples.direct.filter((s) => !s.ok).length,
  }
  if (stream && samples.direct[0]?.firstByteMs !== undefined) {
    cell.firstByte = {
      direct: summarize(samples.direct.map((s) => s.firstByteMs ?? 0)),
      guarded: summarize(samples.guarded.map((s) => s.firstByteMs ?? 0)),
    }
  }
  return cell
}

interface Sample {
  ms: number
  ok: boolean
  firstByteMs?: number
}

type Size = { target: number; tokens: number; chars: number }

/** The cells a run times: every size both ways on the instant engine, then the prefilling one. */
function plan(sizes: Size[]): { engine: Engine; size: Size; stream: boolean }[] {
  return [
    ...sizes.flatMap((size) =>
      [false, true].map((stream) => ({ engine: 'instant' as const, size, stream })),
    ),
    ...(['fresh', 'prefill'] as const).flatMap((engine) =>
      sizes
        .filter((size) => PREFILL_SIZES.includes(size.target))
        .map((size) => ({ engine, size, stream: false })),
    ),
  ]
}

async function workerdCells(sizes: Size[], quick: boolean): Promise<Cell[]> {
  const worker = await startWorker('bench/support/overhead-worker.ts', {
    GUARD_SECRET: BENCH_SECRET,
  })
  const cells: Cell[] = []
  let round = 0
  try {
    for (const { engine, size, stream } of plan(sizes)) {
      // The simulator's tokenizer loads and learns this prompt's pieces before any timed round.
      const warm = await fetch(`${worker.url}/warm?chars=${size.chars}`)
      if (!warm.ok) throw new Error(`warm-up failed: ${warm.status} ${await warm.text()}`)
      const send = (route: string) => async (): Promise<Sample> => {
        const fresh =
          engine === 'instant' ? '' : `${engine === 'prefill' ? '&prefill=1' : ''}&round=${round++}`
        const t = await timedFetch(
          `${worker.url}/${route}?chars=${size.chars}&stream=${stream ? 1 : 0}${fresh}`,
          { method: 'POST' },
        )
        return { ms: t.totalMs, ok: t.status === 200, firstByteMs: t.firstByteMs }
      }
      const samples = await alternate(
        roundsFor(size.target, quick, engine),
        3,
        send('direct'),
        send('guarded'),
      )
      const cell = cellOf('workerd', engine, size, stream, samples)
      log(cell)
      cells.push(cell)
    }
  } finally {
    await worker.dispose()
  }
  return cells
}

async function nodeCells(sizes: Size[], quick: boolean): Promise<Cell[]> {
  const engines = {
    instant: new SimEngine({
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    }),
    prefill: new SimEngine({
      prefillTokensPerSecond: PHYSICAL_PREFILL_TOKENS_PER_SECOND,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    }),
  }
  const upstreams = {
    instant: engines.instant.binding('worker'),
    prefill: engines.prefill.binding('worker'),
  }
  const guards = {
    instant: guardAi(upstreams.instant, { secret: BENCH_SECRET, tenant: 'bench' }),
    prefill: guardAi(upstreams.prefill, { secret: BENCH_SECRET, tenant: 'bench' }),
  }
  const cells: Cell[] = []
  const tokenizer = await loadTokenizer()
  let round = 0
  for (const { engine, size, stream } of plan(sizes)) {
    const text = english(7, size.chars)
    tokenizer.encode(text) // the simulator's tokenizer warm before timing, as in workerd
    // The fresh rows use the instant engine (and its guard) with a new prompt each request.
    const which = engine === 'prefill' ? 'prefill' : 'instant'
    const upstream = upstreams[which]
    const inputsOf = () => {
      const prompt = engine === 'instant' ? text : freshPrompt(text, round++)
      return chat(prompt, stream ? { stream: true } : {})
    }
    const send = (runner: typeof upstream) => async (): Promise<Sample> => {
      const inputs = inputsOf()
      const start = performance.now()
      try {
        // Direct requests carry the same directive shape the guard appends (withLookalikeDirective).
        const out =
          runner === upstream
            ? await runner.run(MODEL, withLookalikeDirective(inputs))
            : await runner.run(MODEL, inputs)
        // Consume what a route would send: every byte of a stream, the JSON of an object.
        if (out instanceof ReadableStream) await new Response(out).arrayBuffer()
        else JSON.stringify(out)
        return { ms: performance.now() - start, ok: true }
      } catch {
        return { ms: performance.now() - start, ok: false }
      }
    }
    const samples = await alternate(
      roundsFor(size.target, quick, engine),
      3,
      send(upstream),
      send(guards[which]),
    )
    const cell = cellOf('node', engine, size, stream, samples)
    log(cell)
    cells.push(cell)
  }
  return cells
}

function log(c: Cell): void {
  console.log(
    `  ${c.runtime.padEnd(7)} ${c.engine.padEnd(7)} ${String(c.tokens).padStart(7)} tok ${c.stream ? 'stream' : 'whole '}  ` +
      `direct ${ms(c.direct.median).padStart(9)}  guarded ${ms(c.guarded.median).padStart(9)}  ` +
      `added ${ms(Math.max(0, c.added.median)).padStart(9)} (p99 ${ms(Math.max(0, c.added.p99))})  ×${c.ratio}` +
      (c.guardedErrors ? `  ${c.guardedErrors} guarded errors` : ''),
  )
}

function signed(value: number): string {
  return value < 0 ? `−${ms(-value)}` : ms(value)
}

function table(cells: Cell[], quick: boolean): string {
  const m = machineInfo()
  const target = cells.filter(
    (c) => c.targetTokens === 32_000 && c.runtime === 'workerd' && !c.stream,
  )
  const verdict = (c: Cell) =>
    `${c.engine} ${signed(c.added.median)} (${c.added.median <= 2 ? 'met' : 'not met'})`
  const lines = [
    'Added time per request, direct and guarded requests alternating in one run, three ways. ' +
      '**instant**: simulator delays at zero (prefill and decode instant) and one prompt resent by the ' +
      'same tenant, which its prefix cache serves (the only way an engine answers a long prompt at once), ' +
      'so everything the guard does is on the request’s path — with what it remembers of the tenant’s ' +
      'texts (`textMemo`). **fresh**: the same instant engine with a new prompt every request: the ' +
      'guard’s whole work, nothing remembered, nothing to overlap (no engine reads a new long prompt in ' +
      'no time). **prefill**: a new ' +
      `prompt every request (its first line names the round) and the simulator prefilling at ` +
      `${PHYSICAL_PREFILL_TOKENS_PER_SECOND.toLocaleString('en-US')} tokens/s, the profile’s physical ` +
      'bound: the fastest engine the timing check accepts as honest. There the prompt’s count and print, ' +
      'which the guard starts once the call has left, run while the engine reads. ' +
      '**workerd**: a bench Worker (`bench/support/overhead-worker.ts`, ' +
      'simulator in the same isolate) run by Miniflare, timed from Node over loopback HTTP to the last body ' +
      'byte. **node**: `guardAi` over `SimEngine` in-process, `performance.now()`. ' +
      `Node ${m.node}, ${m.cpu} (${m.cores} cores)${quick ? ', quick run' : ''}. ` +
      '“added” is the median (p99) of the per-round differences guarded − direct. Direct requests carry ' +
      'the same echo directive (a fresh look-alike token) so the simulator does identical work on both. ' +
      `Target: ≤ 2 ms median added at 32k tokens, whole, in workerd — ${target.map(verdict).join('; ')}.`,
    '',
    '| runtime | engine | prompt tokens | stream | direct median | guarded median | added median | added p99 | guarded ÷ direct | released |',
    '|---|---|---:|---|---:|---:|---:|---:|---:|---:|',
    ...cells.map(
      (c) =>
        `| ${c.runtime} | ${c.engine} | ${c.tokens.toLocaleString('en-US')} | ${c.stream ? 'yes' : 'no'} | ${ms(c.direct.median)} | ${ms(c.guarded.median)} | ${signed(c.added.median)} | ${signed(c.added.p99)} | ${c.ratio.toFixed(2)} | ${c.guarded.runs - c.guardedErrors}/${c.guarded.runs} |`,
    ),
  ]
  return lines.join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const sizes: { target: number; tokens: number; chars: number }[] = []
  for (const target of SIZES) sizes.push({ target, ...(await charsFor(target)) })
  const cells = [...(await workerdCells(sizes, quick)), ...(await nodeCells(sizes, quick))]
  const path = await writeResult('overhead', {
    suite: 'overhead',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: {
      model: MODEL,
      profile: 'built-in glm-5.3 (pool 681,280, prefill bound 200,000 tok/s)',
      simulator: {
        instant: { prefillTokensPerSecond: 'Infinity', decodeTokensPerSecond: 'Infinity' },
        fresh: 'the instant engine, prompts as for prefill',
        prefill: {
          prefillTokensPerSecond: PHYSICAL_PREFILL_TOKENS_PER_SECOND,
          decodeTokensPerSecond: 'Infinity',
          prompts: 'a new first line every request (bench/support/prompts.ts freshPrompt)',
        },
      },
      prompt: 'English prose (bench/texts.ts english, seed 7), one user message',
      warmupRounds: 3,
      p99: 'nearest rank (with fewer than 100 samples, the maximum)',
    },
    note:
      'Times in ms. added = per-round guarded − direct. workerd times include loopback HTTP and ' +
      "Miniflare's entry Worker for both routes. Both routes share one simulator account, so repeated " +
      'prompts hit its prefix cache alike (instant engine); on the fresh and prefill rows no prompt repeats. Direct requests carry the same echo directive the guard ' +
      'appends, around a fresh canary-shaped token per request (no key minted it), so the simulator ' +
      'does the same work on both paths; the difference is the guard.',
    cells,
  })
  console.log(table(cells, quick))
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'overhead', run }
export default suite
