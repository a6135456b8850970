/**
 * @module Benchmark: honest answers withheld, and leaks let through, on traffic built from families of
 * real text the foreign-content check was never tuned on (test/held-apart/corpus.ts, evaluation
 * split: Debian's Perl, Tcl and Vim sources, Vim's help, six licences, manual pages in English and
 * seven more languages), replayed through one guard with the default policy against an engine that
 * knows a third of the pieces by heart (test/held-apart/replay.ts). Rows: the default (second opinion
 * on), an engine whose recall is not word for word, the same traffic with the second opinion off, and
 * the default on the tuning split (the families its cue was set on), for comparison. Node figures
 * (accuracy, not speed).
 */
import { type Family, heldApartFamilies, tuningFamilies } from '../../test/held-apart/corpus'
import { type HeldApartResult, replayHeldApart } from '../../test/held-apart/replay'
import { heldApartTraffic } from '../../test/held-apart/traffic'
import { machineInfo, type Suite, type SuiteOptions, writeResult } from '../lib'
import { upperBound95 } from './boilerplate'

const SEEDS = [1, 2, 3]

/** The rows: how the guard and the engine are set. */
const ROWS = [
  { name: 'second opinion (default)', options: {}, split: 'evaluation' },
  {
    name: 'second opinion, recall 1 word in 25 wrong',
    options: { slipEvery: 25 },
    split: 'evaluation',
  },
  {
    name: 'no second opinion',
    options: { guard: { content: { recall: false as const } } },
    split: 'evaluation',
  },
  { name: 'second opinion (default), tuning split', options: {}, split: 'tuning' },
] as const

interface Row {
  name: string
  /** `evaluation`: families never tuned on (the reported figures); `tuning`: for comparison. */
  split: string
  honest: number
  withheld: number
  upper95: number
  recitals: number
  brokenAfterText: number
  controls: number
  controlsWithheld: number
  quoteEscaped: number
  opinions: number
  byFamily: Record<string, number>
}

function add(row: Row, result: HeldApartResult): void {
  row.honest += result.honest
  row.withheld += result.withheld.length
  row.recitals += result.recitals
  row.brokenAfterText += result.brokenAfterText
  row.controls += result.controls.total
  row.controlsWithheld += result.controls.withheld
  row.quoteEscaped += result.controls.quoteEscaped
  row.opinions += result.opinions
  for (const w of result.withheld) row.byFamily[w.family] = (row.byFamily[w.family] ?? 0) + 1
}

const pct = (k: number, n: number) => `${((100 * k) / n).toFixed(2)}%`

function table(rows: readonly Row[], families: string[], perSeed: number): string {
  const head =
    '| setting | honest withheld (95% upper bound) | streams broken after text | controls withheld | quote delivered | second opinions |\n' +
    '|---|---|---|---|---|---|\n'
  const body = rows
    .map(
      (r) =>
        `| ${r.name} | ${r.withheld} of ${r.honest} = ${pct(r.withheld, r.honest)} (≤ ${pct(r.upper95 * r.honest, r.honest)}) | ${r.brokenAfterText} | ${r.controlsWithheld} of ${r.controls} | ${r.quoteEscaped} | ${r.opinions} (${pct(r.opinions, r.honest)} of answers) |`,
    )
    .join('\n')
  return (
    `${head}${body}\n\n${SEEDS.length} seeds × ${perSeed} honest answers; about a third recite a text ` +
    `one other tenant pasted within the hour. Evaluation families: ${families.join(', ')}.`
  )
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const splits: Record<string, Family[]> = {
    evaluation: heldApartFamilies(),
    tuning: tuningFamilies(),
  }
  const families = splits.evaluation!
  const perSeed = quick ? 500 : 2_000
  const rows: Row[] = []
  for (const { name, options, split } of ROWS) {
    const row: Row = {
      name,
      split,
      honest: 0,
      withheld: 0,
      upper95: 0,
      recitals: 0,
      brokenAfterText: 0,
      controls: 0,
      controlsWithheld: 0,
      quoteEscaped: 0,
      opinions: 0,
      byFamily: {},
    }
    for (const seed of SEEDS) {
      const traffic = heldApartTraffic(splits[split]!, { count: perSeed, seed })
      add(row, await replayHeldApart(traffic, options))
    }
    row.upper95 = upperBound95(row.withheld, row.honest)
    rows.push(row)
    console.log(
      `  ${name}: ${row.withheld} of ${row.honest} withheld, controls ${row.controlsWithheld}/${row.controls}`,
    )
  }
  const path = await writeResult('held-apart', {
    machine: machineInfo(),
    quick,
    seeds: SEEDS,
    perSeed,
    families: families.map((f) => ({ name: f.name, pieces: f.pieces.length })),
    tuningFamilies: splits.tuning!.map((f) => ({ name: f.name, pieces: f.pieces.length })),
    rows,
  })
  console.log(
    table(
      rows,
      families.map((f) => f.name),
      perSeed,
    ),
  )
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'held-apart', run }
export default suite
