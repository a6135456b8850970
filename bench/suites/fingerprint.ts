/**
 * @module Benchmark: what foreign-content fingerprints cost on the hot path, side by side in one run —
 * printing a 1k / 32k / 256k-token prompt (English prose, and CJK at 256k), scanning an answer per SSE
 * event (~3 tokens each) and whole, and the table's add and lookup — plus the memory each holds: the
 * table at its default budget (per isolate) and a prompt print (per request in flight).
 */
import { CANARY_LENGTH, quickHold } from '../../src/core/canary'
import { countTokens } from '../../src/core/ceiling/count'
import {
  ContentWatch,
  FINGERPRINT_DEFAULTS,
  FingerprintTable,
  fingerprintKey,
  fingerprintOf,
  printPrompt,
  scanAnswer,
} from '../../src/plugins/foreign-content'
import {
  machineInfo,
  median,
  ms,
  type Suite,
  type SuiteOptions,
  type Summary,
  sideBySide,
  summarize,
  writeResult,
} from '../lib'
import { cjk, english } from '../texts'

const MODEL = '@cf/zai-org/glm-5.3'
const KEY = fingerprintKey(new Uint8Array(32).map((_, i) => (i * 29 + 3) & 255))
const PARAMS = FINGERPRINT_DEFAULTS
/** Tokens per SSE event of a streamed answer (a typical decode chunk). */
const TOKENS_PER_EVENT = 3

/** Characters of `make`'s text that make about `tokens` o200k tokens. */
async function charsFor(make: (seed: number, chars: number) => string, tokens: number) {
  const sample = make(7, 40_000)
  const perToken = sample.length / (await countTokens([sample]))
  return Math.round(tokens * perToken)
}

interface Texts {
  prompts: Record<string, string>
  answer: string
  events: string[]
}

async function texts(): Promise<Texts> {
  const en = (tokens: number) => charsFor(english, tokens).then((chars) => english(21, chars))
  const prompts = {
    'print 1k (English)': await en(1_000),
    'print 32k (English)': await en(32_000),
    'print 256k (English)': await en(256_000),
    'print 256k (CJK)': cjk(22, await charsFor(cjk, 256_000)),
  }
  const answer = english(23, await charsFor(english, 1_000))
  const perEvent = Math.round(answer.length / (1_000 / TOKENS_PER_EVENT))
  const events: string[] = []
  for (let i = 0; i < answer.length; i += perEvent) events.push(answer.slice(i, i + perEvent))
  return { prompts, answer, events }
}

/** A table as a busy isolate has it: filled to a generation's worth by 200 tenants. */
function busyTable(): FingerprintTable {
  const table = new FingerprintTable(PARAMS)
  const per = Math.floor(table.stats().entriesPerGeneration / 200)
  for (let t = 0; t < 200; t++) {
    const hashes = Array.from({ length: per }, (_, i) => fingerprintOf(KEY, t * 1e6 + i))
    table.add(MODEL, `tenant-${t}`, hashes, 0)
  }
  return table
}

interface Row {
  name: string
  time: Summary
  /** What one call handled (for per-unit figures). */
  note: string
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const t = await texts()
  const table = busyTable()
  const own = printPrompt(
    KEY,
    ['You are a helpful assistant.', t.prompts['print 1k (English)']!],
    PARAMS,
  )
  const options = { key: KEY, table, model: MODEL, tenant: 'reader', own, now: 1, params: PARAMS }
  const small = printPrompt(KEY, [t.prompts['print 1k (English)']!], PARAMS).selected
  const probes = Array.from({ length: 10_000 }, (_, i) => fingerprintOf(KEY, 7e9 + i))
  let at = 10
  const contenders: Record<string, () => unknown> = {}
  for (const [name, text] of Object.entries(t.prompts)) {
    contenders[name] = () => printPrompt(KEY, [text], PARAMS)
    // Beside it, the work the guard already does on a timed prompt: its exact o200k count.
    contenders[name.replace('print', 'o200k count')] = () => countTokens([text])
  }
  contenders['watch 1k answer, per event'] = () => {
    const watch = new ContentWatch(options)
    for (const event of t.events) {
      watch.push('content', event, false)
      watch.safeFrom('content')
    }
    watch.push('content', '', true)
    return watch.evidence()
  }
  contenders['canary hold-back 1k answer, per event'] = () => {
    // The release stage's canary check on the same events (its fast path: no `cnry_` in them).
    let context = ''
    for (const event of t.events) {
      const text = context + event
      quickHold(text, false)
      context = text.slice(-(CANARY_LENGTH - 1))
    }
  }
  contenders['scan 1k answer, whole'] = () => scanAnswer(options, { content: t.answer })
  contenders['table add, 1k prompt'] = () => table.add(MODEL, 'adder', small, at++)
  contenders['table lookup ×10,000'] = () => {
    for (const probe of probes) table.lookup(MODEL, probe, 1)
  }
  const samples = await sideBySide(contenders, quick ? 5 : 25, 2)
  const rows: Row[] = Object.entries(samples).map(([name, times]) => ({
    name,
    time: summarize(times),
    note: noteOf(name, t),
  }))
  const perEvent = median(samples['watch 1k answer, per event']!) / t.events.length
  const memory = memoryFigures(t, table)
  const markdown = table_(rows, perEvent, memory)
  await writeResult('fingerprint', {
    suite: 'fingerprint',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    params: PARAMS,
    tokensPerEvent: TOKENS_PER_EVENT,
    events: t.events.length,
    rows,
    perEventMedianMs: Math.round(perEvent * 1e6) / 1e6,
    memory,
    note: 'Times in ms, medians and p99 of runs alternated in one session (bench/lib.ts sideBySide). The table lookups run against a table filled to one generation by 200 tenants.',
  })
  console.log(markdown)
}

function noteOf(name: string, t: Texts): string {
  const text = t.prompts[name]
  if (text !== undefined) return `${text.length.toLocaleString('en')} chars`
  const counted = t.prompts[name.replace('o200k count', 'print')]
  if (counted !== undefined) return `${counted.length.toLocaleString('en')} chars`
  if (name.startsWith('watch') || name.startsWith('canary')) return `${t.events.length} events`
  if (name.startsWith('scan')) return `${t.answer.length.toLocaleString('en')} chars`
  return ''
}

function memoryFigures(t: Texts, table: FingerprintTable) {
  const big = printPrompt(KEY, [t.prompts['print 256k (English)']!], PARAMS)
  const full = new FingerprintTable(PARAMS)
  for (let g = 0; g < 3; g++) {
    for (let i = 0; i < 20; i++) {
      const hashes = Array.from({ length: 20_000 }, (_, j) =>
        fingerprintOf(KEY, g * 1e8 + i * 1e5 + j),
      )
      full.add(MODEL, `t${g}-${i}`, hashes, g * 1000)
    }
  }
  return {
    budgetBytes: PARAMS.budgetBytes,
    tableBytesFull: full.stats().bytes,
    entriesPerGeneration: table.stats().entriesPerGeneration,
    entriesPerMiB: Math.round(
      (2 * table.stats().entriesPerGeneration) / (PARAMS.budgetBytes / 2 ** 20),
    ),
    print256kEnglish: {
      fingerprints: big.selected.length,
      shingles: big.shingles,
      containsBytes: big.bytes,
    },
  }
}

function table_(rows: Row[], perEvent: number, memory: ReturnType<typeof memoryFigures>): string {
  const lines = [
    '| work | median | p99 | what |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${ms(r.time.median)} | ${ms(r.time.p99)} | ${r.note} |`),
    `| one SSE event (${TOKENS_PER_EVENT} tokens) | ${ms(perEvent)} | | median of the whole answer ÷ events |`,
  ]
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`
  return `${lines.join('\n')}\n\nMemory: the table holds at most ${mib(memory.budgetBytes)} per isolate (${mib(memory.tableBytesFull)} once both generations are allocated), ${memory.entriesPerMiB.toLocaleString('en')} fingerprints per MiB; a 256k-token English prompt leaves ${memory.print256kEnglish.fingerprints.toLocaleString('en')} fingerprints and holds ${mib(memory.print256kEnglish.containsBytes)} for its own-text check while its request runs.`
}

const suite: Suite = { name: 'fingerprint', run }
export default suite
