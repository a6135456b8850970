/**
 * @module Benchmark: what the token ceiling costs against prompt size, next to a plain full count,
 * and what a cold process pays to decide with and without loading the tokenizer.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { ceilingFor, decideCeiling } from '../../src/ceiling/ceiling'
import { countTokens, loadTokenizer } from '../../src/ceiling/count'
import { type PromptPieces, promptPieces } from '../../src/ceiling/prompt'
import { utf8Length } from '../../src/ceiling/utf8'
import {
  BENCH_DIR,
  machineInfo,
  ms,
  ROOT,
  type Suite,
  type SuiteOptions,
  type Summary,
  sideBySide,
  summarize,
  updateReadmeTable,
  writeResult,
} from '../lib'
import { KINDS, type Kind } from '../texts'

/** The incident's model: the real pool, not the window, with a 4k output reserve and 10% drift. */
const PROFILE = { contextWindow: 1_048_576, kvPoolTokens: 681_280 }
const RESERVE = 4_096
const DRIFT = 0.1
const CEILING = ceilingFor(PROFILE, RESERVE)

const SIZES = [1_000, 32_000, 256_000, 681_280, 1_200_000]

interface Row {
  kind: Kind
  targetTokens: number
  tokens: number
  chars: number
  bytes: number
  method: string
  fits: boolean
  decide: Summary
  count: Summary
  /** decide median ÷ count median. */
  ratio: number
}

/** A text of `kind` with about `target` o200k tokens (scaled from a 50k-character sample). */
async function textOf(kind: Kind, target: number): Promise<string> {
  const sample = KINDS[kind](7, 50_000)
  const charsPerToken = sample.length / (await countTokens([sample]))
  return KINDS[kind](7, Math.round(target * charsPerToken))
}

async function sizeRows(runs: number): Promise<Row[]> {
  await loadTokenizer() // steady state: the cold load is measured separately below
  const rows: Row[] = []
  for (const kind of Object.keys(KINDS) as Kind[]) {
    for (const target of SIZES) {
      const text = await textOf(kind, target)
      const pieces: PromptPieces = promptPieces({ messages: [{ role: 'user', content: text }] })
      const tokens = await countTokens(pieces.texts)
      const decision = await decideCeiling(pieces, CEILING, DRIFT)
      const t = await sideBySide(
        {
          decide: () => decideCeiling(pieces, CEILING, DRIFT),
          count: () => countTokens(pieces.texts),
        },
        runs,
      )
      const decide = summarize(t.decide)
      const count = summarize(t.count)
      const row: Row = {
        kind,
        targetTokens: target,
        tokens,
        chars: text.length,
        bytes: utf8Length(text),
        method: decision.method,
        fits: decision.fits,
        decide,
        count,
        ratio: Math.round((decide.median / count.median) * 1000) / 1000,
      }
      rows.push(row)
      console.log(
        `  ${kind.padEnd(7)} ${String(tokens).padStart(9)} tok  decide ${ms(decide.median).padStart(9)} (${row.method})  count ${ms(count.median).padStart(9)}  ×${row.ratio}`,
      )
    }
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

function coldRun(kind: 'small' | 'large'): Promise<ColdRun> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(BENCH_DIR, 'cold-start.ts'), kind],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    )
    let out = ''
    const decoder = new TextDecoder()
    child.stdout.on('data', (chunk: Uint8Array) => {
      out += decoder.decode(chunk, { stream: true })
    })
    child.on('error', reject)
    child.on('close', (status) => {
      const wallMs = performance.now() - start
      if (status !== 0) return reject(new Error(`cold-start ${kind} exited with ${status}`))
      const report = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Omit<ColdRun, 'wallMs'>
      resolve({ ...report, wallMs })
    })
  })
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

function table(rows: Row[], cold: Awaited<ReturnType<typeof coldStart>>, quick: boolean): string {
  const lines = [
    `Node ${process.version}, ${machineInfo().cpu} (${machineInfo().cores} cores)${quick ? ', quick run' : ''}. ` +
      `Ceiling ${CEILING.toLocaleString('en-US')} tokens (pool 681,280 − 4,096 reserve), drift 10%. ` +
      'Medians; `decideCeiling` and a full `countTokens` of the same text, side by side in one run.',
    '',
    '| text | tokens | decideCeiling | method | full count | decide ÷ count |',
    '|---|---:|---:|---|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.kind} | ${r.tokens.toLocaleString('en-US')} | ${ms(r.decide.median)} | ${r.method}${r.fits ? '' : ' (reject)'} | ${ms(r.count.median)} | ${r.ratio.toFixed(3)} |`,
    ),
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
  ]
  return lines.join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const rows = await sizeRows(quick ? 3 : 9)
  console.log('  cold start…')
  const cold = await coldStart(quick ? 3 : 7)
  console.log(
    `  cold small: ${ms(cold.small.import.median + cold.small.decide.median)} (${cold.small.method}); ` +
      `large: ${ms(cold.large.import.median + cold.large.decide.median)} (${cold.large.method})`,
  )
  const path = await writeResult('ceiling', {
    suite: 'ceiling',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: { profile: PROFILE, reserve: RESERVE, drift: DRIFT, ceiling: CEILING },
    note: 'Times in ms. ratio = decide median / count median. Runs alternate decide/count order.',
    sizes: rows,
    coldStart: cold,
  })
  const updated = await updateReadmeTable('ceiling', table(rows, cold, quick))
  console.log(`  wrote ${path}${updated ? ' and the README table' : ''}`)
}

const suite: Suite = { name: 'ceiling', run }
export default suite
