/**
 * @module Benchmark: what the text memo saves and what it costs (src/core/memo). Per prompt size, side by
 * side in one run on Node: the family count and the print of a prompt computed from nothing (what a
 * new text costs, memo or not), the same taken from the memo (a resent text: its digest, then the
 * facts found by it), and the digest alone (what a miss adds before it computes).
 */
import { estimateTexts, type TextTally } from '../../src/core/ceiling/estimate'
import { memoSlot, TextMemo } from '../../src/core/memo/text-memo'
import {
  FINGERPRINT_DEFAULTS,
  fingerprintKey,
  printPrompt,
  type TextPrint,
} from '../../src/plugins/foreign-content'
import {
  machineInfo,
  median,
  ms,
  p99,
  type Suite,
  type SuiteOptions,
  sideBySide,
  writeResult,
} from '../lib'
import { BENCH_SECRET } from '../support/prompts'
import { english } from '../texts'

/** Characters of English prose for about 1k, 32k and 256k o200k tokens (4.1 a token). */
const SIZES = [
  { name: '1k tokens', chars: 4_100 },
  { name: '32k tokens', chars: 131_000 },
  { name: '256k tokens', chars: 1_050_000 },
]
const TALLY = memoSlot<TextTally>('tally')
const PRINT = memoSlot<TextPrint>('print')
const KEY = fingerprintKey(new Uint8Array(32).fill(3))
const PARAMS = { n: FINGERPRINT_DEFAULTS.n, w: FINGERPRINT_DEFAULTS.w }

interface Row {
  size: string
  chars: number
  computed: { median: number; p99: number }
  remembered: { median: number; p99: number }
  digest: { median: number; p99: number }
  /** What the memo holds for the text (its count and its print). */
  heldBytes: number
}

async function measure(size: (typeof SIZES)[number], runs: number): Promise<Row> {
  const text = english(17, size.chars)
  const texts = ['user', text]
  const memo = new TextMemo(BENCH_SECRET, { budgetBytes: 64 * 1024 * 1024 })
  // The resent text: remembered once, before timing.
  const first = memo.forRequest('bench')
  await first.know(texts)
  await estimateTexts(texts, first.facts(TALLY))
  printPrompt(KEY, texts, PARAMS, first.facts(PRINT))
  const samples = await sideBySide(
    {
      computed: async () => {
        await estimateTexts(texts)
        printPrompt(KEY, texts, PARAMS)
      },
      remembered: async () => {
        const request = memo.forRequest('bench')
        await request.know(texts)
        await estimateTexts(texts, request.facts(TALLY))
        printPrompt(KEY, texts, PARAMS, request.facts(PRINT))
      },
      digest: async () => {
        await memo.forRequest('bench').know(texts)
      },
    },
    runs,
    2,
  )
  const figures = (values: number[]) => ({ median: median(values), p99: p99(values) })
  return {
    size: size.name,
    chars: size.chars,
    computed: figures(samples.computed),
    remembered: figures(samples.remembered),
    digest: figures(samples.digest),
    heldBytes: memo.stats().bytes,
  }
}

function table(rows: Row[], quick: boolean): string {
  const m = machineInfo()
  return [
    `The family count and the foreign-content print of one English prompt, computed from nothing and ` +
      `taken from the memo (the text resent by the same tenant: its digest, then its facts), and the ` +
      `digest alone (what a new text pays on top), alternating in one run. Node ${m.node}, ${m.cpu} ` +
      `(${m.cores} cores)${quick ? ', quick run' : ''}.`,
    '',
    '| prompt | characters | computed (median) | remembered (median) | computed ÷ remembered | digest alone (median) | held by the memo |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.size} | ${r.chars.toLocaleString('en-US')} | ${ms(r.computed.median)} | ${ms(r.remembered.median)} | ${(r.computed.median / r.remembered.median).toFixed(1)} | ${ms(r.digest.median)} | ${(r.heldBytes / 1024).toFixed(0)} KiB |`,
    ),
  ].join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const rows: Row[] = []
  for (const size of SIZES) {
    const runs = size.chars > 500_000 ? (quick ? 4 : 20) : quick ? 10 : 60
    const row = await measure(size, runs)
    console.log(
      `  ${row.size.padEnd(12)} computed ${ms(row.computed.median).padStart(9)}  remembered ${ms(row.remembered.median).padStart(9)}  digest ${ms(row.digest.median).padStart(9)}  held ${(row.heldBytes / 1024).toFixed(0)} KiB`,
    )
    rows.push(row)
  }
  const path = await writeResult('memo', {
    suite: 'memo',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    note: 'Times in ms. computed: estimateTexts + printPrompt; remembered: digest + the same from the memo.',
    rows,
  })
  console.log(table(rows, quick))
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'memo', run }
export default suite
