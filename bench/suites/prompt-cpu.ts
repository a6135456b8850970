/**
 * @module Benchmark: where one maximal admissible prompt's CPU goes, per stage of the guard's
 * per-prompt work (byte bound, o200k pre-tokenizer split, o200k count, family estimate, the whole
 * ceiling decision, fingerprint units and print, secrets scan), for English, Russian, Chinese and
 * Thai side by side in one run (issue 46, item 2).
 */
import { ceilingFor, decideCeiling, type Margins } from '../../src/ceiling/ceiling'
import { countTokens, pieceTokenizer, setMergeMemoEntries } from '../../src/ceiling/count'
import { estimateTexts } from '../../src/ceiling/estimate'
import { type PromptPieces, promptPieces } from '../../src/ceiling/prompt'
import { addClassBytes, SCRIPT_CLASSES } from '../../src/ceiling/script'
import { FINGERPRINT_DEFAULTS, fingerprintKey, printPrompt } from '../../src/fingerprint'
import { UnitReader } from '../../src/fingerprint/units'
import { builtInDetectors, findSecrets } from '../../src/secrets'
import { sized, udhrText } from '../../test/node/ceiling-corpus'
import {
  machineInfo,
  ms,
  type Suite,
  type SuiteOptions,
  type Summary,
  summarize,
  timeOnce,
  writeResult,
} from '../lib'
import { english } from '../texts'

/** glm-5.3's pool, a 4k output reserve and the recommended 3% drift: the ceiling suite's profile. */
const CEILING = ceilingFor({ contextWindow: 1_048_576, kvPoolTokens: 681_280 }, 4_096)
const MARGINS: Margins = () => 0.03

const SCRIPTS: Record<string, (chars: number) => string> = {
  english: (chars) => english(7, chars),
  russian: (chars) => sized(udhrText('rus'), chars),
  chinese: (chars) => sized(udhrText('cmn_hans'), chars),
  thai: (chars) => sized(udhrText('tha'), chars),
}

function piecesOf(text: string): PromptPieces {
  return promptPieces({ messages: [{ role: 'user', content: text }] })
}

/**
 * A prompt of `make` text just under the ceiling on the count path (for English the byte bound
 * admits only a quarter of what the count does): scaled from the family bound of a sample, then
 * moved in 0.5% steps to the longest the ceiling admits.
 */
async function maximal(make: (chars: number) => string): Promise<string> {
  const sample = make(200_000)
  const perChar = ((await estimateTexts([sample])).bound * 1.03) / sample.length
  let chars = Math.floor(CEILING / perChar)
  const long = make(Math.ceil(chars * 1.2))
  const fits = async (n: number) =>
    (await decideCeiling(piecesOf(long.slice(0, n)), CEILING, MARGINS)).fits
  if (await fits(chars)) {
    while (await fits(Math.floor(chars * 1.005))) chars = Math.floor(chars * 1.005)
  } else {
    while (!(await fits(chars))) chars = Math.floor(chars * 0.995)
  }
  return long.slice(0, chars)
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
  const key = fingerprintKey(new Uint8Array(32).fill(7))
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
    decideCeiling: (text) => decideCeiling(piecesOf(text), CEILING, MARGINS),
    'fingerprint units': (text) => {
      let n = 0
      new UnitReader().read(text, true, () => {
        n++
      })
      return n
    },
    'fingerprint print': (text) => printPrompt(key, [text], FINGERPRINT_DEFAULTS),
    'secrets scan': (text) => findSecrets(text, detectors),
  }
  // A maximal prompt repeats its translation many times, so every pre-token after the first pass is
  // found in the merge memo; novel text of a spaceless script (one pre-token per phrase) mostly is
  // not. The tokenizer stages are timed again with the memo off: every pre-token merged. The
  // 'per prompt' rows are what one maximal prompt costs the isolate: the ceiling decision, the
  // fingerprint print and the secrets scan of the same text, run one after another.
  const perPrompt = async (text: string) => {
    await decideCeiling(piecesOf(text), CEILING, MARGINS)
    await printPrompt(key, [text], FINGERPRINT_DEFAULTS)
    return findSecrets(text, detectors)
  }
  const warm: Record<string, (text: string) => unknown> = { ...stages, 'per prompt': perPrompt }
  const cold: Record<string, (text: string) => unknown> = {
    'o200k count, cold': (text) => countTokens([text]),
    'family estimate, cold': (text) => estimateTexts([text]),
    'decideCeiling, cold': (text) => decideCeiling(piecesOf(text), CEILING, MARGINS),
    'per prompt, cold': perPrompt,
  }
  const samples: Record<string, Record<string, number[]>> = {}
  for (const script of Object.keys(texts)) {
    samples[script] = Object.fromEntries(
      [warm, cold].flatMap((set) => Object.keys(set)).map((s) => [s, []]),
    )
  }
  // One warm-up round, then `runs` timed ones; each round goes through every script and stage, the
  // script order reversed every other round so drift falls on all alike.
  for (const [set, memo] of [
    [warm, 10_000],
    [cold, 0],
  ] as const) {
    setMergeMemoEntries(memo)
    for (let round = 0; round <= runs; round++) {
      const order = Object.keys(texts)
      if (round % 2) order.reverse()
      for (const script of order) {
        const text = texts[script] ?? ''
        for (const [stage, fn] of Object.entries(set)) {
          const took = await timeOnce(() => fn(text))
          if (round > 0) samples[script]?.[stage]?.push(took)
        }
      }
    }
  }
  setMergeMemoEntries(10_000)
  for (const [script, text] of Object.entries(texts)) {
    const decision = await decideCeiling(piecesOf(text), CEILING, MARGINS)
    let pieces = 0
    for (const _ of text.matchAll(split)) pieces++
    const row: Row = {
      script,
      chars: text.length,
      o200k: await countTokens([text]),
      charged: decision.adjustedTokens,
      pieces,
      units: printPrompt(key, [text], FINGERPRINT_DEFAULTS).units,
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
  // Issue 46's line: each script's CPU per maximal prompt against English's, in this one run. Novel
  // text is the case that counts (the memo off); the ceiling alone is shown beside it.
  const median = (script: string, stage: string) =>
    rows.find((r) => r.script === script)?.stages[stage]?.median ?? Number.NaN
  const ratios = Object.fromEntries(
    rows.map((r) => [
      r.script,
      {
        perPromptCold: median(r.script, 'per prompt, cold') / median('english', 'per prompt, cold'),
        decideCeilingCold:
          median(r.script, 'decideCeiling, cold') / median('english', 'decideCeiling, cold'),
      },
    ]),
  )
  for (const [script, r] of Object.entries(ratios)) {
    console.log(
      `  ${script.padEnd(8)} × English per prompt (cold) ${r.perPromptCold.toFixed(2)}, ` +
        `ceiling alone ${r.decideCeilingCold.toFixed(2)}`,
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
      '"per prompt" is the ceiling, the fingerprint print and the secrets scan in turn; "cold": ' +
      'the merge memo off, every pre-token merged (novel text).',
    rows,
    ratios,
  })
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'prompt-cpu', run }
export default suite
