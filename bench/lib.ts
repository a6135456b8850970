/**
 * @module Benchmark helpers: robust statistics, an alternating side-by-side runner, machine info, and
 * the writer of `bench/results/*.json`.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { cpus } from 'node:os'
import { join } from 'node:path'

/** The repository root: `npm run bench` runs from it. */
export const ROOT: string = process.cwd()
/** This folder. */
export const BENCH_DIR = join(ROOT, 'bench')

/** Options every suite receives from `bench/run.ts`. */
export interface SuiteOptions {
  /** A CI-sized run (`npm run bench -- --quick`): fewer runs, same sizes. */
  quick: boolean
}

/** A suite module in `bench/suites/`. */
export interface Suite {
  /** Its name, used on the command line and as the results file name. */
  name: string
  /** Runs it, writes its results (and its table, where a doc keeps its markers). */
  run: (options: SuiteOptions) => Promise<void>
}

/** Where the figures came from. */
export interface MachineInfo {
  node: string
  v8: string
  cpu: string
  cores: number
  platform: string
  arch: string
}

/**
 * The machine a run measured (figures are meaningless without it).
 *
 * @example
 * writeResult('ceiling', { machine: machineInfo(), rows })
 */
export function machineInfo(): MachineInfo {
  const cpu = cpus()
  return {
    node: process.version,
    v8: process.versions.v8,
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    platform: process.platform,
    arch: process.arch,
  }
}

function sorted(samples: readonly number[]): number[] {
  if (samples.length === 0) throw new RangeError('no samples')
  return [...samples].sort((a, b) => a - b)
}

/**
 * The `p`-th percentile (0–100), nearest-rank: with few samples p99 is the maximum, on purpose.
 *
 * @example
 * percentile([1, 2, 3, 4], 50) // 2
 */
export function percentile(samples: readonly number[], p: number): number {
  const s = sorted(samples)
  const rank = Math.max(1, Math.ceil((p / 100) * s.length))
  return s[rank - 1]!
}

/**
 * The median (the mean of the two middle samples for an even count).
 *
 * @example
 * median([3, 1, 2]) // 2
 */
export function median(samples: readonly number[]): number {
  const s = sorted(samples)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/**
 * The 99th percentile.
 *
 * @example
 * p99(samples)
 */
export function p99(samples: readonly number[]): number {
  return percentile(samples, 99)
}

/** Median and p99 of a set of timings, in milliseconds. */
export interface Summary {
  median: number
  p99: number
  runs: number
}

/**
 * Median and p99, rounded to microseconds.
 *
 * @example
 * summarize([1.2, 1.1, 1.3]) // { median: 1.2, p99: 1.3, runs: 3 }
 */
export function summarize(samples: readonly number[]): Summary {
  const round = (ms: number) => Math.round(ms * 1000) / 1000
  return { median: round(median(samples)), p99: round(p99(samples)), runs: samples.length }
}

/**
 * Times `fn` once, in milliseconds.
 *
 * @example
 * const ms = await timeOnce(() => decideCeiling(pieces, ceiling, 0.1))
 */
export async function timeOnce(fn: () => unknown): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

/**
 * Runs each contender `runs` times after `warmup` untimed rounds, alternating the order every round
 * (A B, B A, …) so that drift in the machine (a 2-core box with neighbours, GC, caches warmed by the
 * previous call) falls on both sides equally.
 *
 * @example
 * const t = await sideBySide({ decide: () => decide(), count: () => count() }, 9)
 * median(t.decide) / median(t.count)
 */
export async function sideBySide<K extends string>(
  contenders: Record<K, () => unknown>,
  runs: number,
  warmup = 1,
): Promise<Record<K, number[]>> {
  const names = Object.keys(contenders) as K[]
  const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
    K,
    number[]
  >
  for (let round = 0; round < warmup + runs; round++) {
    const order = round % 2 ? [...names].reverse() : names
    for (const name of order) {
      const ms = await timeOnce(contenders[name])
      if (round >= warmup) samples[name].push(ms)
    }
  }
  return samples
}

/**
 * Writes `bench/results/<name>.json` (pretty, with a trailing newline), returning its path.
 *
 * @example
 * await writeResult('ceiling', { machine: machineInfo(), rows })
 */
export async function writeResult(name: string, json: unknown): Promise<string> {
  const dir = join(BENCH_DIR, 'results')
  await mkdir(dir, { recursive: true })
  const path = join(dir, `${name}.json`)
  await writeFile(path, `${JSON.stringify(json, null, 2)}\n`)
  return path
}

/**
 * Formats milliseconds for a table: 3 significant digits, µs below 1 ms.
 *
 * @example
 * ms(0.0123) // '12.3 µs'
 */
export function ms(value: number): string {
  if (value < 1) return `${(value * 1000).toPrecision(3)} µs`
  if (value < 1000) return `${value.toPrecision(3)} ms`
  return `${(value / 1000).toPrecision(3)} s`
}

/**
 * How a suite's figures were made and how to make them again: a results file's `reproduce` line.
 *
 * @example
 * await writeResult('telemetry', { machine: machineInfo(), reproduce: reproduce('telemetry', quick, started) })
 */
export function reproduce(suite: string, quick: boolean, startedAt: number): string {
  const seconds = Math.round((performance.now() - startedAt) / 1000)
  return (
    `Reproduce: \`npm run bench -- ${suite}\` (this table: ${quick ? 'the `--quick` run' : 'the full run'}, ` +
    `${seconds} s for this suite); \`npm run bench -- --quick ${suite}\` for the CI-sized run. ` +
    `Raw figures and machine: \`bench/results/${suite}.json\`.`
  )
}

/**
 * Counts as "key n, key n" from the largest down (for one-line cell summaries).
 *
 * @example
 * topCounts({ served: 3, placeholder: 27 }) // 'placeholder 27, served 3'
 */
export function topCounts(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')
}
