/**
 * @module Benchmark: what the token ceiling costs per script and prompt size, next to 0.1's decision
 * (UTF-8 bytes, else a plain o200k count), how much of the pool each script can use, what a crafted
 * prompt costs, and what a cold process pays to decide with and without loading the tokenizer.
 */
import { join } from 'node:path'
import { ceilingFor, decideCeiling, type Margins } from '../../src/core/ceiling/ceiling'
import {
  chunkEnd,
  countTokens,
  LONG_PIECE_UNITS,
  pieceTokenizer,
} from '../../src/core/ceiling/count'
import { estimateTexts } from '../../src/core/ceiling/estimate'
import { type PromptPieces, promptPieces, templateOverhead } from '../../src/core/ceiling/prompt'
import { utf8Length } from '../../src/core/ceiling/utf8'
import { sized, udhrText } from '../../test/node/ceiling-corpus'
import {
  BENCH_DIR,
  machineInfo,
  ms,
  type Suite,
  type SuiteOptions,
  type Summary,
  sideBySide,
  summarize,
  timeOnce,
  writeResult,
} from '../lib'
import { runScript } from '../support/processes'
import { code, english } from '../texts'

/** The incident's model: the real pool, not the window, a 4k output reserve, the default margin. */
const PROFILE = { contextWindow: 1_048_576, kvPoolTokens: 681_280 }
const POOL = Math.min(PROFILE.contextWindow, PROFILE.kvPoolTokens)
const RESERVE = 4_096
/** The recommended built-in `tokenizerDrift` for glm-5.3 on top of the family bound. */
const MARGIN = 0.03
const MARGINS: Margins = () => MARGIN
const CEILING = ceilingFor(PROFILE, RESERVE)
/** 0.1's rule: o200k count × 1.10 + overhead ≤ ceiling. */
const OLD_DRIFT = 0.1

/** Texts per script: generators, or a UDHR translation repeated to length. */
const SCRIPTS: Record<string, (chars: number) => string> = {
  english: (chars) => english(7, chars),
  code: (chars) => code(7, chars),
  norwegian: (chars) => sized(udhrText('nob'), chars),
  russian: (chars) => sized(udhrText('rus'), chars),
  arabic: (chars) => sized(udhrText('arb'), chars),
  hindi: (chars) => sized(udhrText('hin'), chars),
  georgian: (chars) => sized(udhrText('kat'), chars),
  thai: (chars) => sized(udhrText('tha'), chars),
  chinese: (chars) => sized(udhrText('cmn_hans'), chars),
}

/** Sizes in o200k tokens; `near-pool` is the largest prompt of the script the ceiling admits. */
const SIZES = [1_000, 32_000, 256_000] as const

interface Row {
  script: string
  size: string
  o200k: number
  bound: number
  chars: number
  bytes: number
  method: string
  fits: boolean
  decide: Summary
  /** 0.1's decision of the same prompt ({@link decide01}). */
  old: Summary
  /** How 0.1 decided it. */
  oldMethod: string
  /** decide median ÷ 0.1's median. */
  ratio: number
}

/** Characters per o200k token of a script, from a 40k-character sample. */
async function charsPerToken(script: string): Promise<number> {
  const sample = SCRIPTS[script]?.(40_000) ?? ''
  return sample.length / (await countTokens([sample]))
}

function piecesOf(text: string): PromptPieces {
  return promptPieces({ messages: [{ role: 'user', content: text }] })
}

/** The longest prefix (in characters) of `text` that the ceiling admits, by bisection. */
async function largestAdmitted(text: string, admit: (t: string) => Promise<boolean>) {
  let low = 0
  let high = text.length
  while (high - low > 64) {
    const mid = Math.floor((low + high) / 2)
    if (await admit(text.slice(0, mid))) low = mid
    else high = mid
  }
  return text.slice(0, low)
}

/**
 * 0.1's `decideCeiling`, step for step (its code at 5217d87, on today's o200k counter): o200k × 1.10
 * plus the template overhead against the ceiling; admitted by UTF-8 bytes when even the bytes fit,
 * else counted, stopping once the count passes the limit.
 */
async function decide01(pieces: PromptPieces): Promise<{ fits: boolean; method: string }> {
  const overhead = templateOverhead(pieces)
  const limit = Math.floor((CEILING - overhead) / (1 + OLD_DRIFT))
  let units = 0
  let bytes = 0
  for (const text of pieces.texts) units += text.length
  if (units <= limit) for (const text of pieces.texts) bytes += utf8Length(text)
  if (units <= limit && bytes <= limit) return { fits: true, method: 'bytes' }
  return (await withinO200k(pieces.texts, limit))
    ? { fits: true, method: 'count' }
    : { fits: false, method: 'early-exit' }
}

/**
 * 0.1's count with early exit: o200k pre-tokens (long ones in chunks, as today's counter does),
 * stopping as soon as the count passes `limit`.
 */
async function withinO200k(texts: readonly string[], limit: number): Promise<boolean> {
  const { split, countPiece } = await pieceTokenizer()
  let tokens = 0
  for (const text of texts) {
    for (const [piece] of text.matchAll(split)) {
      if (piece.length <= LONG_PIECE_UNITS) tokens += countPiece(piece)
      else {
        // One pre-token can be megabytes long: the limit is checked per chunk.
        for (let start = 0, end = 0; start < piece.length; start = end) {
          end = chunkEnd(piece, start)
          tokens += countPiece(piece.slice(start, end))
          if (tokens > limit) return false
        }
      }
      if (tokens > limit) return false
    }
  }
  return true
}

async function oldRuleFits(text: string): Promise<boolean> {
  const pieces = piecesOf(text)
  const tokens = await countTokens(pieces.texts)
  return Math.ceil(tokens * (1 + OLD_DRIFT)) + 7 <= CEILING
}

interface Usable {
  script: string
  /** Admitted o200k tokens ÷ pool, under the family bound with the default margin. */
  usable: number
  /** The same under 0.1's rule (o200k × 1.10). */
  usableOld: number
  /** Family bound ÷ o200k on the largest admitted prompt. */
  boundPerO200k: number
}

async function sizeRows(runs: number, quick: boolean) {
  await pieceTokenizer() // steady state: the cold load is measured separately below
  const rows: Row[] = []
  const usable: Usable[] = []
  for (const script of Object.keys(SCRIPTS)) {
    const make = SCRIPTS[script]
    if (!make) continue
    const perToken = await charsPerToken(script)
    const long = make(Math.round(1_300_000 * perToken))
    const admitted = await largestAdmitted(long, async (t) => {
      return (await decideCeiling(piecesOf(t), CEILING, MARGINS)).fits
    })
    const admittedOld = await largestAdmitted(long, oldRuleFits)
    const estimate = await estimateTexts(piecesOf(admitted).texts)
    const oldTokens = await countTokens([admittedOld])
    usable.push({
      script,
      usable: estimate.o200k / POOL,
      usableOld: oldTokens / POOL,
      boundPerO200k: estimate.bound / Math.max(1, estimate.o200k),
    })
    const sizes: [string, string][] = SIZES.filter((s) => !quick || s !== 32_000).map((s) => [
      `${s / 1000}k`,
      long.slice(0, Math.round(s * perToken)),
    ])
    sizes.push(['near-pool', admitted])
    for (const [size, text] of sizes) {
      const pieces = piecesOf(text)
      const o200k = await countTokens(pieces.texts)
      const decision = await decideCeiling(pieces, CEILING, MARGINS)
      const oldDecision = await decide01(pieces)
      const t = await sideBySide(
        {
          decide: () => decideCeiling(pieces, CEILING, MARGINS),
          old: () => decide01(pieces),
        },
        runs,
        // Microsecond rows timed from their first calls time the interpreter, not the steady state:
        // english 1k, the suite's first row on the byte path, read 129–270 µs where code 1k read 20.
        text.length < 100_000 ? 50 : 1,
      )
      const decide = summarize(t.decide)
      const old = summarize(t.old)
      const row: Row = {
        script,
        size,
        o200k,
        bound: decision.estimatedTokens,
        chars: text.length,
        bytes: utf8Length(text),
        method: decision.method,
        fits: decision.fits,
        decide,
        old,
        oldMethod: oldDecision.fits ? oldDecision.method : `${oldDecision.method} (reject)`,
        ratio: Math.round((decide.median / old.median) * 1000) / 1000,
      }
      rows.push(row)
      console.log(
        `  ${script.padEnd(9)} ${size.padStart(9)} ${String(o200k).padStart(9)} o200k  decide ${ms(decide.median).padStart(9)} (${row.method}${row.fits ? '' : ', reject'})  0.1 ${ms(old.median).padStart(9)} (${row.oldMethod})  ×${row.ratio}`,
      )
    }
    const u = usable.at(-1)
    if (u) {
      console.log(
        `  ${script.padEnd(9)} usable ${(u.usable * 100).toFixed(1)}% of the pool (0.1: ${(u.usableOld * 100).toFixed(1)}%), bound ${u.boundPerO200k.toFixed(3)}× o200k`,
      )
    }
  }
  return { rows, usable }
}

interface Crafted {
  prompt: string
  chars: number
  method: string
  fits: boolean
  decide: Summary
}

/** A seeded string over `alphabet` (no merge cache hits: every chunk is new). */
function randomOver(alphabet: string, chars: number, seed: number): string {
  let x = seed
  const out: string[] = []
  for (let i = 0; i < chars; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    out.push(alphabet[(x >>> 8) % alphabet.length] ?? 'a')
  }
  return out.join('')
}

/** Prompts built to cost the most CPU per charged token; each is far over the ceiling. */
async function craftedRows(runs: number): Promise<Crafted[]> {
  const size = 8_000_000
  const lower = 'abcdefghijklmnopqrstuvwxyz'
  // Each run gets a fresh draw (seed + run): a repeated text would find its pieces in the tokenizer's
  // merge cache and time a lookup, not what a new crafted request costs.
  const prompts: Record<string, (seed: number) => string> = {
    'one letter, one run': () => 'a'.repeat(size),
    'two letters, random, one run': (seed) => randomOver('ab', size, 100 + seed),
    'lowercase, random, one run': (seed) => randomOver(lower, size, 200 + seed),
    'lowercase, random, 32-letter words': (seed) =>
      randomOver(lower, size, 300 + seed)
        .match(/.{1,32}/g)
        ?.join(' ') as string,
    'dashes, one run': () => '-'.repeat(size),
    'spaces, one run': () => `${' '.repeat(size)}x`,
    'Thai letters, random': (seed) =>
      randomOver('กขคงจฉชซญดตถทนบปผพฟภมยรลวศสหอะาิีึืุูเแโใไ่้๊๋', size / 2, 400 + seed),
    'digits and letters, random': (seed) => randomOver('0123456789abcdefghij', size, 500 + seed),
  }
  const rows: Crafted[] = []
  for (const [prompt, make] of Object.entries(prompts)) {
    const samples: number[] = []
    let decision: Awaited<ReturnType<typeof decideCeiling>> | undefined
    let chars = 0
    // One untimed warm-up run, then `runs` timed ones, each on its own draw.
    for (let run = 0; run <= runs; run++) {
      const text = make(run)
      chars = text.length
      const pieces = piecesOf(text)
      const took = await timeOnce(async () => {
        decision = await decideCeiling(pieces, CEILING, MARGINS)
      })
      if (run > 0) samples.push(took)
    }
    const row = {
      prompt,
      chars,
      method: decision?.method ?? 'none',
      fits: decision?.fits ?? false,
      decide: summarize(samples),
    }
    rows.push(row)
    console.log(
      `  crafted ${prompt.padEnd(36)} ${ms(row.decide.median).padStart(9)} (${row.method})`,
    )
  }
  return rows
}

interface ColdRun {
  kind: 'small' | 'large'
  wallMs: number
  bootMs: number
  importMs: number
  decideMs: number
  method: string
  tokenizerLoaded: boolean
}

async function coldRun(kind: 'small' | 'large'): Promise<ColdRun> {
  const { report, wallMs } = await runScript<Omit<ColdRun, 'wallMs'>>(
    join(BENCH_DIR, 'cold-start.ts'),
    [kind],
  )
  return { ...report, wallMs }
}

async function coldStart(runs: number) {
  const samples: Record<'small' | 'large', ColdRun[]> = { small: [], large: [] }
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, as sideBySide does.
    for (const kind of i % 2 ? (['large', 'small'] as const) : (['small', 'large'] as const)) {
      samples[kind].push(await coldRun(kind))
    }
  }
  const of = (kind: 'small' | 'large') => {
    const list = samples[kind]
    return {
      method: list[0]?.method,
      tokenizerLoaded: list.every((r) => r.tokenizerLoaded),
      wall: summarize(list.map((r) => r.wallMs)),
      boot: summarize(list.map((r) => r.bootMs)),
      import: summarize(list.map((r) => r.importMs)),
      decide: summarize(list.map((r) => r.decideMs)),
    }
  }
  return { small: of('small'), large: of('large') }
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`
const n = (x: number) => x.toLocaleString('en-US')

function table(
  sizes: Awaited<ReturnType<typeof sizeRows>>,
  crafted: Crafted[],
  cold: Awaited<ReturnType<typeof coldStart>> | undefined,
  quick: boolean,
): string {
  const lines = [
    `Node ${process.version}, ${machineInfo().cpu} (${machineInfo().cores} cores)${quick ? ', quick run' : ''}. ` +
      `Ceiling ${n(CEILING)} tokens (pool 681,280 − 4,096 reserve); each script class charged the family bound ` +
      `(at least what o200k, Qwen3, DeepSeek-V3, Llama 3 and Gemma 3 count) + ${MARGIN * 100}%. Medians; ` +
      "`decideCeiling` and 0.1's decision (o200k × 1.10: admitted by UTF-8 bytes when the bytes fit, else an " +
      "o200k count that stops past the limit; its code at 5217d87 on today's counter) of the same text, " +
      'side by side in one run. Sizes in o200k tokens; near-pool: the largest prompt of the script ' +
      'the ceiling admits. Charged estimate: the family bound where the ceiling counted, the UTF-8 bytes ' +
      'where the bytes alone fit (no byte-level BPE has more tokens than bytes).',
    '',
    '| script | size | o200k tokens | charged estimate | decideCeiling | method | 0.1 decision | 0.1 method | now ÷ 0.1 |',
    '|---|---|---:|---:|---:|---|---:|---|---:|',
    ...sizes.rows.map(
      (r) =>
        `| ${r.script} | ${r.size} | ${n(r.o200k)} | ${n(r.bound)}${r.method === 'bytes' ? ' bytes' : ''} | ${ms(r.decide.median)} | ${r.method}${r.fits ? '' : ' (reject)'} | ${ms(r.old.median)} | ${r.oldMethod} | ${r.ratio.toFixed(2)} |`,
    ),
    '',
    'Usable context: the largest prompt of each script the ceiling admits, in o200k tokens ÷ the 681,280-token pool ' +
      '(0.1 admitted o200k × 1.10 in every script, so its figure is the same for all and too high for most):',
    '',
    `| script | usable (family bound + ${MARGIN * 100}%) | usable (0.1: o200k + 10%) | family bound ÷ o200k |`,
    '|---|---:|---:|---:|',
    ...sizes.usable.map(
      (u) =>
        `| ${u.script} | ${pct(u.usable)} | ${pct(u.usableOld)} | ${u.boundPerO200k.toFixed(3)} |`,
    ),
    '',
    `Crafted prompts (8M characters, all far over the ceiling; long pre-tokens are merged in ${LONG_PIECE_UNITS}-unit chunks; ` +
      'a fresh random draw per run, so no run finds its pieces in the merge cache):',
    '',
    '| prompt | decideCeiling | method |',
    '|---|---:|---|',
    ...crafted.map((c) => `| ${c.prompt} | ${ms(c.decide.median)} | ${c.method} |`),
  ]
  if (cold) {
    lines.push(
      '',
      'Cold start (fresh `node --import tsx` process; in-process time from importing the ceiling to the decision):',
      '',
      '| prompt | method | tokenizer loaded | import + decide | whole process (wall) |',
      '|---|---|---|---:|---:|',
      ...(['small', 'large'] as const).map((kind) => {
        const c = cold[kind]
        const label = kind === 'small' ? '~1k tokens' : '~200k tokens'
        return `| ${label} | ${c.method} | ${c.tokenizerLoaded ? 'yes' : 'no'} | ${ms(c.import.median + c.decide.median)} | ${ms(c.wall.median)} |`
      }),
    )
  }
  return lines.join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const sizes = await sizeRows(quick ? 1 : 5, quick)
  console.log('  crafted prompts…')
  const crafted = await craftedRows(quick ? 1 : 3)
  console.log('  cold start…')
  let cold: Awaited<ReturnType<typeof coldStart>> | undefined
  try {
    cold = await coldStart(quick ? 2 : 7)
    console.log(
      `  cold small: ${ms(cold.small.import.median + cold.small.decide.median)} (${cold.small.method}); ` +
        `large: ${ms(cold.large.import.median + cold.large.decide.median)} (${cold.large.method})`,
    )
  } catch (error) {
    console.log(
      `  cold start failed (${String(error)}): bench/cold-start.ts needs decideCeiling's margins`,
    )
  }
  const path = await writeResult(quick ? 'ceiling-quick' : 'ceiling', {
    suite: 'ceiling',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: { profile: PROFILE, reserve: RESERVE, margin: MARGIN, ceiling: CEILING },
    note:
      "Times in ms. ratio = decide median / 0.1's decision median (decide01: bytes, else an o200k count " +
      'with early exit). ' +
      'usable = admitted o200k tokens / pool. Runs alternate decide/count order.',
    sizes: sizes.rows,
    usable: sizes.usable,
    crafted,
    coldStart: cold,
  })
  console.log(table(sizes, crafted, cold, quick))
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'ceiling', run }
export default suite
