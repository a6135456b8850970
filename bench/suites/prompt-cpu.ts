/**
 * @module Benchmark: where one maximal admissible prompt's CPU goes, per stage of the guard's
 * per-prompt work (byte bound, o200k pre-tokenizer split, o200k count, family estimate, the whole
 * ceiling decision, fingerprint units and print, secrets scan), for English, Russian, Chinese and
 * Thai side by side in one run.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { countTokens, pieceTokenizer } from '../../src/core/ceiling/count'
import { estimateTexts } from '../../src/core/ceiling/estimate'
import { addClassBytes, SCRIPT_CLASSES } from '../../src/core/ceiling/script'
import { FINGERPRINT_DEFAULTS } from '../../src/plugins/foreign-content'
import { UnitReader } from '../../src/plugins/foreign-content/units'
import { builtInDetectors, findSecrets } from '../../src/plugins/secrets'
import { sized, udhrText } from '../../test/node/ceiling-corpus'
import {
  BENCH_DIR,
  machineInfo,
  ms,
  type Suite,
  type SuiteOptions,
  type Summary,
  summarize,
  timeOnce,
  writeResult,
} from '../lib'
import { maximal } from '../support/maximal-prompts'
import { runScript } from '../support/processes'
import { CEILING, decide, FRESH_STAGES, perPrompt, print } from '../support/prompt-stages'
import { english } from '../texts'

const SCRIPTS: Record<string, (chars: number) => string> = {
  english: (chars) => english(7, chars),
  russian: (chars) => sized(udhrText('rus'), chars),
  chinese: (chars) => sized(udhrText('cmn_hans'), chars),
  thai: (chars) => sized(udhrText('tha'), chars),
}

interface Row {
  script: string
  chars: number
  o200k: number
  charged: number
  pieces: number
  units: number
  stages: Record<string, Summary>
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const runs = quick ? 1 : 3
  const { split } = await pieceTokenizer()
  const detectors = builtInDetectors()
  const rows: Row[] = []
  const texts: Record<string, string> = {}
  for (const [script, make] of Object.entries(SCRIPTS)) texts[script] = await maximal(make)
  const stages: Record<string, (text: string) => unknown> = {
    'byte bound': (text) => addClassBytes(text, new Float64Array(SCRIPT_CLASSES.length)),
    'o200k split': (text) => {
      let n = 0
      for (const _ of text.matchAll(split)) n++
      return n
    },
    'o200k count': (text) => countTokens([text]),
    'family estimate': (text) => estimateTexts([text]),
    decideCeiling: decide,
    'fingerprint units': (text) => {
      let n = 0
      new UnitReader().read(text, true, () => {
        n++
      })
      return n
    },
    'fingerprint print': print,
    'secrets scan': (text) => findSecrets(text, detectors),
  }
  // A maximal prompt repeats its translation many times, so after its first pass every pre-token is
  // in the merge memo. The 'fresh' rows are the same calls as a new process's first work on the text
  // (bench/fresh-prompt.ts): every distinct pre-token merged once, as a cold isolate's first maximal
  // prompt has it. 'per prompt' is what one maximal prompt costs the isolate.
  const warm: Record<string, (text: string) => unknown> = { ...stages, 'per prompt': perPrompt }
  const freshStages = Object.keys(FRESH_STAGES)
  const samples: Record<string, Record<string, number[]>> = {}
  for (const script of Object.keys(texts)) {
    samples[script] = Object.fromEntries(
      [...Object.keys(warm), ...freshStages.map((s) => `${s}, fresh`)].map((s) => [s, []]),
    )
  }
  // One warm-up round, then `runs` timed ones; each round goes through every script and stage, the
  // script order reversed every other round so drift falls on all alike.
  for (let round = 0; round <= runs; round++) {
    const order = Object.keys(texts)
    if (round % 2) order.reverse()
    for (const script of order) {
      const text = texts[script] ?? ''
      for (const [stage, fn] of Object.entries(warm)) {
        const took = await timeOnce(() => fn(text))
        if (round > 0) samples[script]?.[stage]?.push(took)
      }
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'prompt-cpu-'))
  try {
    for (const [script, text] of Object.entries(texts)) await writeFile(join(dir, script), text)
    for (let round = 0; round < runs; round++) {
      const order = Object.keys(texts)
      if (round % 2) order.reverse()
      for (const script of order) {
        for (const stage of freshStages) {
          samples[script]?.[`${stage}, fresh`]?.push(await freshRun(stage, join(dir, script)))
        }
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  for (const [script, text] of Object.entries(texts)) {
    const decision = await decide(text)
    let pieces = 0
    for (const _ of text.matchAll(split)) pieces++
    const row: Row = {
      script,
      chars: text.length,
      o200k: await countTokens([text]),
      charged: decision.adjustedTokens,
      pieces,
      units: print(text).units,
      stages: Object.fromEntries(
        Object.entries(samples[script] ?? {}).map(([stage, s]) => [stage, summarize(s)]),
      ),
    }
    rows.push(row)
    console.log(
      `  ${script.padEnd(8)} ${row.chars} chars, ${row.o200k} o200k, charged ${row.charged}, ` +
        `${row.pieces} pre-tokens, ${row.units} units`,
    )
    for (const [stage, s] of Object.entries(row.stages)) {
      console.log(`    ${stage.padEnd(18)} ${ms(s.median).padStart(10)}`)
    }
  }
  // The target: each script's CPU per maximal prompt against English's, in this one run; a fresh
  // isolate's first is the case that counts; the ceiling alone is shown beside it.
  const median = (script: string, stage: string) =>
    rows.find((r) => r.script === script)?.stages[stage]?.median ?? Number.NaN
  const ratios = Object.fromEntries(
    rows.map((r) => [
      r.script,
      {
        perPromptFresh:
          median(r.script, 'per prompt, fresh') / median('english', 'per prompt, fresh'),
        decideCeilingFresh:
          median(r.script, 'decideCeiling, fresh') / median('english', 'decideCeiling, fresh'),
      },
    ]),
  )
  for (const [script, r] of Object.entries(ratios)) {
    console.log(
      `  ${script.padEnd(8)} × English per prompt (fresh) ${r.perPromptFresh.toFixed(2)}, ` +
        `ceiling alone ${r.decideCeilingFresh.toFixed(2)}`,
    )
  }
  const path = await writeResult(quick ? 'prompt-cpu-quick' : 'prompt-cpu', {
    suite: 'prompt-cpu',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: { ceiling: CEILING, margin: 0.03, fingerprint: FINGERPRINT_DEFAULTS },
    note:
      'Times in ms per maximal admissible prompt (the longest the ceiling admits, within 0.5%). ' +
      'Stages are timed apart; decideCeiling includes the byte bound and the family estimate; ' +
      '"per prompt" is the ceiling, the fingerprint print and the secrets scan in turn; "fresh": ' +
      "a new process's first work on the text (bench/fresh-prompt.ts), every distinct pre-token merged once.",
    rows,
    ratios,
  })
  console.log(`  wrote ${path}`)
}

/** Times `stage` on the text in `file` in a new process of this Node (bench/fresh-prompt.ts). */
async function freshRun(stage: string, file: string): Promise<number> {
  const { report } = await runScript<{ ms: number }>(join(BENCH_DIR, 'fresh-prompt.ts'), [
    stage,
    file,
  ])
  return report.ms
}

const suite: Suite = { name: 'prompt-cpu', run }
export default suite
