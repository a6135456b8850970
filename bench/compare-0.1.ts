/**
 * @module What the guard's hot path costs now next to 0.1 (a git worktree of its last commit), in one
 * session: (1) the hot path's parts, 0.1's modules and today's imported into one Node process and timed
 * alternately on the same prompts; (2) the overhead suite's quick run on both trees, alternating.
 * Prints its tables and writes `bench/results/overhead-vs-0.1.json`.
 *
 * Usage (from the repository root):
 *   git worktree add /tmp/base 5217d87 && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   npx tsx bench/compare-0.1.ts --base /tmp/base --pairs 6
 *   git worktree remove --force /tmp/base
 * `--now <dir>` runs another tree's overhead suite as "now" (default: this one); `--from <dir>` takes
 * overhead results already collected there (`ov-base-<i>.json`, `ov-now-<i>.json`) instead of running them.
 * `--no-parts` skips (1), whose base calls are 0.1's signatures: for a base tree other than 0.1 (run it with
 * that tree's worktree as the working directory so the results it writes are the worktree's).
 */
import { spawn } from 'node:child_process'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { isolateTenantDirectory, TenantAttribution } from '../src/core/attribution'
import { importCanaryKey } from '../src/core/canary'
import { decideCeiling } from '../src/core/ceiling/ceiling'
import { countTokens, pieceTokenizer } from '../src/core/ceiling/count'
import { estimateTexts } from '../src/core/ceiling/estimate'
import { type PromptPieces, promptPieces } from '../src/core/ceiling/prompt'
import { readRequest } from '../src/core/plan/request'
import {
  machineInfo,
  median,
  ms,
  percentile,
  ROOT,
  type Summary,
  sideBySide,
  writeResult,
} from './lib'
import { BENCH_SECRET, chat } from './support/prompts'
import { english } from './texts'

/** One cell of an overhead results file (the fields this comparison reads). */
interface Cell {
  runtime: 'workerd' | 'node'
  tokens: number
  stream: boolean
  direct: { median: number }
  added: { median: number; p99: number; runs: number }
  /** Per-round guarded − direct (ms); absent in files written before it was recorded. */
  addedSamples?: number[]
}

interface Results {
  date: string
  cells: Cell[]
}

type Side = 'base' | 'now'

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}

function runQuickOverhead(tree: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', '--quick', 'overhead'],
      {
        cwd: tree,
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    )
    child.on('error', reject)
    child.on('close', (status) =>
      status === 0 ? resolve() : reject(new Error(`overhead in ${tree} exited with ${status}`)),
    )
  })
}

/** Runs `pairs` pairs, alternating which tree goes first, and copies each results file to `dir`. */
async function collect(trees: Record<Side, string>, pairs: number, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true })
  for (let i = 1; i <= pairs; i++) {
    const order: Side[] = i % 2 ? ['base', 'now'] : ['now', 'base']
    for (const side of order) {
      console.log(`▶ pair ${i}/${pairs}: ${side} (${trees[side]})`)
      await runQuickOverhead(trees[side])
      const json = await readFile(join(trees[side], 'bench', 'results', 'overhead.json'), 'utf8')
      await writeFile(join(dir, `ov-${side}-${i}.json`), json)
    }
  }
}

async function load(dir: string): Promise<Record<Side, Results[]>> {
  const files = (await readdir(dir)).filter((f) => /^ov-(base|now)-\d+\.json$/.test(f)).sort()
  const out: Record<Side, Results[]> = { base: [], now: [] }
  for (const file of files) {
    const side: Side = file.startsWith('ov-base') ? 'base' : 'now'
    out[side].push(JSON.parse(await readFile(join(dir, file), 'utf8')) as Results)
  }
  return out
}

/** One row of the comparison: one runtime, size and mode, both trees. */
interface Row {
  runtime: Cell['runtime']
  tokens: number
  stream: boolean
  /** Pooled per-round added time of every run (ms). */
  base: { median: number; p99: number; rounds: number; runMedians: number[] }
  now: { median: number; p99: number; rounds: number; runMedians: number[] }
  /** now ÷ base of the pooled medians. */
  ratio: number
  /** The simulator's own time (direct median, median over runs): Qwen3 now, cl100k in 0.1. */
  directBase: number
  directNow: number
}

function pool(runs: Results[], key: (c: Cell) => boolean) {
  const cells = runs.flatMap((r) => r.cells.filter(key))
  const samples = cells.flatMap((c) => c.addedSamples ?? [])
  const runMedians = cells.map((c) => c.added.median)
  // Files without per-round samples fall back to their run medians (p99: the median of run p99s).
  const pooled = samples.length > 0
  return {
    median: pooled ? median(samples) : median(runMedians),
    p99: pooled ? percentile(samples, 99) : median(cells.map((c) => c.added.p99)),
    rounds: pooled ? samples.length : cells.reduce((n, c) => n + c.added.runs, 0),
    runMedians,
    direct: median(cells.map((c) => c.direct.median)),
  }
}

function rows(results: Record<Side, Results[]>): Row[] {
  const first = results.now[0]
  if (!first || results.base.length === 0) throw new Error('no results to compare')
  return first.cells.map((cell) => {
    const key = (c: Cell) =>
      c.runtime === cell.runtime && c.stream === cell.stream && c.tokens === cell.tokens
    const base = pool(results.base, key)
    const now = pool(results.now, key)
    return {
      runtime: cell.runtime,
      tokens: cell.tokens,
      stream: cell.stream,
      base: {
        median: base.median,
        p99: base.p99,
        rounds: base.rounds,
        runMedians: base.runMedians,
      },
      now: { median: now.median, p99: now.p99, rounds: now.rounds, runMedians: now.runMedians },
      ratio: Math.round((now.median / base.median) * 100) / 100,
      directBase: base.direct,
      directNow: now.direct,
    }
  })
}

function signed(value: number): string {
  return value < 0 ? `−${ms(-value)}` : ms(value)
}

function range(values: number[]): string {
  const s = [...values].sort((a, b) => a - b)
  return `${signed(s[0] ?? 0)} – ${signed(s.at(-1) ?? 0)}`
}

function table(all: Row[], runs: Record<Side, number>): string {
  const m = machineInfo()
  return [
    `The overhead suite (\`--quick\`) on 0.1's last commit (5217d87) and on this tree, ${runs.base} + ${runs.now} ` +
      'runs alternating in one session (base, now, now, base, …), Node ' +
      `${m.node}, ${m.cpu} (${m.cores} cores, shared with other work). “added” pools every round's ` +
      'guarded − direct difference of all runs of a tree (median; p99 nearest-rank); “run medians” is the ' +
      'range of the single runs’ medians — the noise to read every other column against. The simulator ' +
      'counts with cl100k in 0.1 and Qwen3 now (its own time: “direct”), the same on both routes of a run, so ' +
      'it cancels out of “added” but not out of the noise.',
    '',
    '| runtime | prompt tokens | stream | added 0.1 | added now | now ÷ 0.1 | p99 0.1 | p99 now | run medians 0.1 | run medians now | direct 0.1 → now |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...all.map(
      (r) =>
        `| ${r.runtime} | ${r.tokens.toLocaleString('en-US')} | ${r.stream ? 'yes' : 'no'} | ${signed(r.base.median)} | ${signed(r.now.median)} | ${r.ratio.toFixed(2)} | ${signed(r.base.p99)} | ${signed(r.now.p99)} | ${range(r.base.runMedians)} | ${range(r.now.runMedians)} | ${ms(r.directBase)} → ${ms(r.directNow)} |`,
    ),
  ].join('\n')
}

// ---------------------------------------------------------------------------------------------------
// (1) The hot path's parts, 0.1's and today's, in one process

/** The few 0.1 exports the parts comparison calls (0.1's source, loaded from the worktree). */
interface Base {
  readRequest(inputs: unknown): unknown
  promptPieces(inputs: Record<string, unknown>): PromptPieces
  decideCeiling(pieces: PromptPieces, ceiling: number, drift: number): Promise<unknown>
  countTokens(texts: readonly string[]): Promise<number>
  importCanaryKey(secret: string): Promise<unknown>
  tenantTag(key: unknown, tenant: string): Promise<string>
}

async function loadBase(base: string): Promise<Base> {
  const from = async (path: string): Promise<Record<string, unknown>> =>
    (await import(pathToFileURL(join(base, path)).href)) as Record<string, unknown>
  const request = await from('src/request.ts')
  const ceiling = await from('src/core/ceiling/ceiling.ts')
  const prompt = await from('src/core/ceiling/prompt.ts')
  const count = await from('src/core/ceiling/count.ts')
  const canary = await from('src/core/canary/token.ts')
  return {
    readRequest: request.readRequest as Base['readRequest'],
    promptPieces: prompt.promptPieces as Base['promptPieces'],
    decideCeiling: ceiling.decideCeiling as Base['decideCeiling'],
    countTokens: count.countTokens as Base['countTokens'],
    importCanaryKey: canary.importCanaryKey as Base['importCanaryKey'],
    tenantTag: canary.tenantTag as Base['tenantTag'],
  }
}

/** glm-5.3's ceiling: pool 681,280 − 4,096 reserve; 0.1 charged o200k + 10%, now the family bound + 3%. */
const CEILING = 681_280 - 4_096
const OLD_DRIFT = 0.1
const MARGIN = 0.03

/** One part of the hot path at one size: 0.1 and now, alternating in one process. */
interface Part {
  part: string
  tokens: number
  base: Summary
  now: Summary
  /** Whether a released request of this size does this work (the timing count is skipped at times). */
  onPath: boolean
}

const PART_SIZES = [1_000, 32_000, 256_000]

/** Median and p99 to the nanosecond: some parts take a few microseconds. */
function fine(samples: number[]): Summary {
  const round = (v: number) => Math.round(v * 1e6) / 1e6
  return {
    median: round(median(samples)),
    p99: round(percentile(samples, 99)),
    runs: samples.length,
  }
}

async function partRows(base: Base, runs: number): Promise<Part[]> {
  await pieceTokenizer()
  const key = await importCanaryKey(BENCH_SECRET)
  const baseKey = await base.importCanaryKey(BENCH_SECRET)
  const attribution = new TenantAttribution(() => Promise.resolve(key), isolateTenantDirectory())
  const sample = english(7, 50_000)
  const perToken = sample.length / (await countTokens([sample]))
  const out: Part[] = []
  for (const target of PART_SIZES) {
    const inputs = chat(english(7, Math.round(target * perToken)))
    const pieces = promptPieces(inputs)
    const basePieces = base.promptPieces(inputs)
    const tokens = await countTokens(pieces.texts)
    // The timing check counts a prompt whose admitted bound (its bytes, when the ceiling admitted it by
    // bytes) would take ≥ 200 ms to prefill at 200,000 tok/s (the defaults), unless the ceiling counted
    // it already; 0.1's evidence.ts and today's share that rule.
    const decision = await decideCeiling(pieces, CEILING, () => MARGIN)
    const admittedByBytes = decision.method === 'bytes'
    const timed = decision.estimatedTokens / 200_000 >= 0.2
    const parts: [string, () => unknown, () => unknown][] = [
      [
        'read the request (0.1: envelope; now: + depth scan of every JSON value)',
        () => base.readRequest(inputs),
        () => readRequest(inputs),
      ],
      [
        'ceiling decision (0.1: bytes or o200k count; now: bytes per script class or family bound)',
        () => base.decideCeiling(basePieces, CEILING, OLD_DRIFT),
        () => decideCeiling(pieces, CEILING, () => MARGIN),
      ],
      [
        'count for timing (0.1: o200k count; now: family estimate)',
        () => base.countTokens(basePieces.texts),
        () => estimateTexts(pieces.texts),
      ],
      [
        'tenant tag for attribution (0.1: HMAC per request; now: memoised, off the path)',
        () => base.tenantTag(baseKey, 'bench'),
        () => attribution.remember('bench'),
      ],
    ]
    for (const [part, old, now] of parts) {
      const t = await sideBySide({ base: old, now }, runs, 2)
      const onPath = !part.startsWith('count for timing') || (timed && admittedByBytes)
      out.push({ part, tokens, base: fine(t.base), now: fine(t.now), onPath })
      console.log(
        `  ${String(tokens).padStart(7)}  ${part.slice(0, 40).padEnd(40)}  0.1 ${ms(median(t.base)).padStart(9)}  now ${ms(median(t.now)).padStart(9)}`,
      )
    }
  }
  return out
}

function partsTable(parts: Part[]): string {
  const names = [...new Set(parts.map((p) => p.part))]
  const sizes = [...new Set(parts.map((p) => p.tokens))]
  const cell = (p: Part | undefined) =>
    p ? `${ms(p.base.median)} → ${ms(p.now.median)}${p.onPath ? '' : ' (not on the path)'}` : '—'
  return [
    "The hot path's parts, 0.1's modules (from the worktree) and today's imported into one Node process and " +
      'timed alternately on the same English prompt (medians, 0.1 → now). The timing check counts a prompt ' +
      'the ceiling admitted by bytes when those bytes would take ≥ 200 ms to prefill at 200,000 tok/s (the ' +
      "defaults, in 0.1 as now): 32k here; at 256k the ceiling's own count is reused.",
    '',
    `| part | ${sizes.map((t) => `${t.toLocaleString('en-US')} tokens`).join(' | ')} |`,
    `|---|${sizes.map(() => '---:').join('|')}|`,
    ...names.map(
      (name) =>
        `| ${name} | ${sizes.map((t) => cell(parts.find((p) => p.part === name && p.tokens === t))).join(' | ')} |`,
    ),
  ].join('\n')
}

// ---------------------------------------------------------------------------------------------------
// Both, rendered

function delta(value: number): string {
  return value < 0 ? `−${ms(-value)}` : `+${ms(value)}`
}

/** One line per size: the end-to-end differences beside what the parts on the path add up to. */
function reading(all: Row[], parts: Part[]): string {
  const sizes = [...new Set(all.map((r) => r.tokens))]
  const lines = sizes.map((tokens, i) => {
    const diffs = all.filter((r) => r.tokens === tokens).map((r) => r.now.median - r.base.median)
    const near = parts.filter((p) => p.onPath && Math.abs(p.tokens - tokens) / tokens < 0.01)
    const sum = near.reduce((n, p) => n + p.now.median - p.base.median, 0)
    const size = `${Math.round(tokens / 1000)}k${i === 0 ? ' tokens' : ''}`
    return (
      `${size}: ${delta(Math.min(...diffs))} to ${delta(Math.max(...diffs))} per request ` +
      `(the four cells), against ${delta(sum)} for the parts on the path`
    )
  })
  return (
    `Reading (now − 0.1, pooled medians): ${lines.join('; ')}. Differences smaller than the spread of ` +
    'the run medians are noise; the parts, timed alternately in one process, are the steadier figure.'
  )
}

/** What changed on the path between 0.1 and now (the figures above measure it). */
const CHANGES = [
  'What changed on the request path since 0.1:',
  '',
  '- **Ceiling**: 0.1 charged an o200k count × 1.10; now each script class is charged the family bound (per ' +
    'o200k token, the most any of Qwen3, DeepSeek-V3, Llama 3 and Gemma 3 spends on it, from a table) + 3%. ' +
    'Prompts whose UTF-8 bytes already fit are still admitted by bytes, now counted per script class (1k and ' +
    '32k English above); longer ones walk o200k tokens and look each up in the table (256k).',
  '- **Count for timing**: a timed prompt the ceiling admitted by bytes is estimated once for the timing ' +
    'check while the upstream prefills — 0.1 counted it with o200k, now it gets the family estimate (the ' +
    'same walk plus the table and the script classes): the 32k prompts above.',
  "- **Request reading**: every field's JSON value is walked for depth and opt-out fields are read per " +
    "request kind. (The Worker's raw-body scan, which counts JSON values without building them, is on the " +
    'HTTP path only, not on this `guardAi` path: `npm run bench -- body` measures it.)',
  '- **Attribution**: 0.1 computed the tenant tag (an HMAC) on every request; now a per-isolate memo holds ' +
    'it and the directory write runs in `waitUntil`, once per tenant.',
  '- **Off the released path**: incident folding (only when an answer is withheld) and learning (the prefix ' +
    'record, per-class calibration and per-tenant timing baselines are taught only after an answer was ' +
    'verified and released).',
].join('\n')

async function main(): Promise<void> {
  const args: string[] = process.argv.slice(2)
  const from = flag(args, '--from')
  const baseTree = flag(args, '--base')
  if (!baseTree) throw new Error('--base <0.1 worktree> is required')
  let parts: Part[] = []
  if (!args.includes('--no-parts')) {
    console.log('▶ parts, in one process')
    parts = await partRows(await loadBase(baseTree), Number(flag(args, '--runs') ?? '15'))
  }
  const dir = from ?? join(ROOT, 'node_modules', '.cache', 'workers-ai-guard', 'overhead-vs-0.1')
  if (!from) {
    const pairs = Number(flag(args, '--pairs') ?? '6')
    await collect({ base: baseTree, now: flag(args, '--now') ?? ROOT }, pairs, dir)
  }
  const results = await load(dir)
  const all = rows(results)
  const runs = { base: results.base.length, now: results.now.length }
  for (const r of all) {
    console.log(
      `  ${r.runtime.padEnd(7)} ${String(r.tokens).padStart(7)} ${r.stream ? 'stream' : 'whole '}  0.1 ${signed(r.base.median).padStart(9)} (p99 ${signed(r.base.p99)})  now ${signed(r.now.median).padStart(9)} (p99 ${signed(r.now.p99)})  ×${r.ratio}`,
    )
  }
  const path = await writeResult('overhead-vs-0.1', {
    suite: 'overhead-vs-0.1',
    date: new Date().toISOString(),
    machine: machineInfo(),
    base: '5217d87 (0.1)',
    runs,
    note:
      "Times in ms. parts: 0.1 and today's modules in one process, alternating. rows: pooled per-round " +
      'added time (guarded − direct) over every quick overhead run of each tree, runs alternating.',
    parts,
    rows: all,
  })
  console.log(`${table(all, runs)}\n\n${partsTable(parts)}\n\n${reading(all, parts)}\n\n${CHANGES}`)
  console.log(`  wrote ${path}`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
