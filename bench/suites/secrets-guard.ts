/**
 * @module Benchmark: what secrets substitution adds to a guarded request — detect and substitute in the
 * prompt, restore in the answer, the stream's stand-in hold-back — measured through `guardAi` in
 * Node, side by side in one run with the same guard without it, over an upstream that answers
 * instantly (so only the guard's work shows). Prompts of 1k, 32k and 256k o200k tokens, English prose
 * then source code, with a realistic secret line every ~2,000 characters (as bench/suites/secrets.ts
 * builds them); whole and streamed answers.
 */
import { spawn } from 'node:child_process'
import { chatCompletion, chatEvents, concatBytes, splitEvent, sseBytes } from '../../sim/wire'
import { type AiGuard, createGuard } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { countTokens } from '../../src/core/ceiling/count'
import { parseFrame } from '../../src/core/format/frames'
import { sseDecoder } from '../../src/core/format/sse'
import { builtInDetectors, findSecrets } from '../../src/plugins/secrets'
import type { SecretsOptions } from '../../src/plugins/secrets/policy'
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
import { BENCH_SECRET, MODEL } from '../support/prompts'
import { code, english, rng } from '../texts'
import { charsFor, sprinkle } from './secrets'

const TENANT = 'bench'
/** One request id for every request: the canary and the stand-ins are then the same each time. */
const REQUEST_ID = 'secrets-guard-bench'
/** Every built-in kind substituted (the Worker's default substitutes only the high ones). */
const SECRETS_ON: SecretsOptions = { high: 'substitute', medium: 'substitute' }
const SIZES = [1_000, 32_000, 256_000]
/** The answer's own prose, in tokens (its quotes of the prompt come on top). */
const ANSWER_TOKENS = 1_000
/** Characters per content event: about 3 tokens, a decoder's usual delta. */
const EVENT_CHARS = 12

/** Rounds per size (each round: the three contenders once, order alternating). */
function roundsFor(tokens: number, quick: boolean): number {
  if (tokens <= 1_000) return quick ? 20 : 200
  if (tokens <= 32_000) return quick ? 6 : 100
  return quick ? 3 : 40
}

/** The canary the guard mints for attempt 1 of REQUEST_ID: the upstream echoes it. */
async function benchCanary(): Promise<string> {
  return mintCanary(await importCanaryKey(BENCH_SECRET), {
    requestId: `${REQUEST_ID}/1`,
    tenant: TENANT,
  })
}

/** One answer as a whole object and as SSE bytes split at the simulator's awkward boundaries. */
interface Scripted {
  content: string
  promptTokens: number
  chunks: Uint8Array[]
  events: number
  bytes: number
}

function script(content: string, promptTokens: number, seed: number): Scripted {
  const contentDeltas: string[] = []
  for (let i = 0; i < content.length; i += EVENT_CHARS) {
    contentDeltas.push(content.slice(i, i + EVENT_CHARS))
  }
  const events = chatEvents(answerOf(contentDeltas, promptTokens), 0, [], true)
  const rand = rng(seed)
  const chunks: Uint8Array[] = []
  let carry: Uint8Array | undefined
  for (const event of events) {
    const split = splitEvent(concatBytes(carry, sseBytes(event.data)), rand, 0.5)
    chunks.push(...split.now)
    carry = split.carry
  }
  if (carry) chunks.push(carry)
  let bytes = 0
  for (const c of chunks) bytes += c.length
  return { content, promptTokens, chunks, events: events.length, bytes }
}

function answerOf(contentDeltas: string[], promptTokens: number) {
  const completion = Math.ceil(contentDeltas.join('').length / 4)
  return {
    id: 'chatcmpl-secrets-bench',
    created: 1_787_788_800,
    model: MODEL,
    reasoningDeltas: [],
    contentDeltas,
    finishReason: 'stop' as const,
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completion,
      total_tokens: promptTokens + completion,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  }
}

/** The prefill rate the upstream pretends to (the guard refuses a first token faster than physics). */
const PREFILL_TOKENS_PER_MS = 100

/**
 * The guards' clock: real time plus the prefill time every upstream call pretends to have taken, so
 * the timing checks see a plausible first token and nobody waits for it.
 */
let skewMs = 0
const clock = (): number => performance.now() + skewMs

/** An upstream that answers at once: a fresh object, or a fresh pull stream of the recorded bytes. */
function upstreamOf(answer: () => Scripted): AiRunner {
  return {
    run: async (_model, inputs) => {
      const a = answer()
      skewMs += a.promptTokens / PREFILL_TOKENS_PER_MS
      if (inputs.stream !== true) return chatCompletion(answerOf([a.content], a.promptTokens))
      let next = 0
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          const chunk = a.chunks[next++]
          if (chunk) controller.enqueue(chunk)
          else controller.close()
        },
      })
    },
  }
}

/** A guard created once, as a Worker creates it per isolate: every request shares its state. */
function guardOf(secrets: SecretsOptions | undefined): AiGuard {
  return createGuard({
    secret: BENCH_SECRET,
    tenant: TENANT,
    hooks: { requestId: () => REQUEST_ID, now: clock },
    ...(secrets ? { secrets } : {}),
  })
}

let guards: { off: AiGuard; on: AiGuard } | undefined

/** `upstream` behind one of the run's two guards: secrets off (the default) or every kind substituted. */
function guardOver(upstream: AiRunner, secrets: 'off' | 'on'): AiRunner {
  guards ??= { off: guardOf(undefined), on: guardOf(SECRETS_ON) }
  return guards[secrets].wrap(upstream)
}

/** The text of the one user message the upstream received. */
function sentText(inputs: Record<string, unknown>): string {
  const messages = inputs.messages as { role: string; content: unknown }[]
  return messages
    .map((m) => (typeof m.content === 'string' ? m.content : ''))
    .filter((t) => t.length > 0)
    .join('\n')
}

/**
 * The stand-ins the engine received, in order: the prompt sent is the original with each detected
 * span replaced, so the text between two spans is found again after the previous stand-in.
 */
function standInsOf(original: string, sent: string): { standIns: string[]; values: string[] } {
  const spans = findSecrets(original, builtInDetectors())
  const standIns: string[] = []
  const values: string[] = []
  // The guard puts the tenant's cache salt in front of the prompt.
  const head = sent.indexOf(original.slice(0, 64))
  let at = head + (spans[0]?.start ?? 0)
  if (head < 0 || !sent.startsWith(original.slice(0, at - head), head)) {
    throw new Error('the prompt sent does not hold the original')
  }
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i]!
    const between = original.slice(span.end, spans[i + 1]?.start ?? original.length)
    // The next stretch of prompt text, long enough to be found only where it belongs.
    const probe = between.slice(0, 64)
    if (probe.length === 0) throw new Error(`secrets ${i} and ${i + 1} are adjacent`)
    const end = sent.indexOf(probe, at + 1)
    if (end < 0) throw new Error(`stand-in ${i} not found in the prompt sent`)
    standIns.push(sent.slice(at, end))
    values.push(original.slice(span.start, span.end))
    at = end + between.length
  }
  return { standIns, values }
}

/**
 * About {@link ANSWER_TOKENS} tokens of prose opened by the canary echo, with each of `quotes` in
 * backticks at even intervals; `blank` puts prose of the same length in each quote's place instead.
 */
function answerText(canary: string, quotes: readonly string[], blank: boolean, seed: number) {
  const prose = english(seed, ANSWER_TOKENS * 4)
  const parts = [`${canary}\n`]
  let at = 0
  for (let i = 0; i < quotes.length; i++) {
    const cut = prose.indexOf(' ', Math.round(((i + 1) * prose.length) / (quotes.length + 1)))
    const end = cut < 0 ? prose.length : cut + 1
    parts.push(prose.slice(at, end))
    at = end
    const quote = quotes[i]!
    parts.push(`\`${blank ? english(seed + 1 + i, quote.length) : quote}\` `)
  }
  parts.push(prose.slice(at))
  return parts.join('')
}

/** The content a client reads from a guarded answer (streams decoded, events joined). */
async function delivered(out: unknown): Promise<string> {
  if (!(out instanceof ReadableStream)) {
    const o = out as { choices: { message: { content: string } }[] }
    return o.choices[0]?.message.content ?? ''
  }
  let text = ''
  const reader = (out as ReadableStream<Uint8Array>).pipeThrough(sseDecoder()).getReader()
  while (true) {
    const { done, value } = await reader.read()
    if (done) return text
    text += parseFrame(value).texts.content ?? ''
  }
}

/** What a route would do with the guarded output: read every byte, or serialise the object. */
async function consume(out: unknown): Promise<void> {
  if (!(out instanceof ReadableStream)) {
    JSON.stringify(out)
    return
  }
  const reader = (out as ReadableStream<Uint8Array>).getReader()
  while (!(await reader.read()).done) {}
}

const CONTENDERS = [
  'off',
  'on, answer quotes every stand-in',
  'on, answer without stand-ins',
] as const
type Contender = (typeof CONTENDERS)[number]

interface Row {
  targetTokens: number
  tokens: number
  chars: number
  secrets: number
  stream: boolean
  answerChars: number
  events: number
  runs: number
  time: Record<Contender, Summary>
  /** Per-round differences contender − off (ms). */
  added: Record<Exclude<Contender, 'off'>, Summary>
  /** Contender median ÷ off median. */
  ratio: Record<Exclude<Contender, 'off'>, number>
}

interface Prepared {
  target: number
  text: string
  tokens: number
  /** Secret lines put in the prompt. */
  lines: number
  /** Secrets the guard substituted (a line may hold more than one). */
  secrets: number
  quote: Scripted
  blank: Scripted
  values: string[]
  canary: string
}

/** The prompt of a size, what the guard sends for it, and the two answers built on that. */
async function prepare(target: number, canary: string): Promise<Prepared> {
  const proseChars = await charsFor(english, target / 2)
  const codeChars = await charsFor(code, target / 2)
  const build = (scale: number) =>
    sprinkle(
      `${english(11, Math.round(proseChars * scale))}\n\n${code(11, Math.round(codeChars * scale))}`,
      2_000,
      target,
    )
  // The secret lines hold more tokens per character than the text around them: scaled once to size.
  const first = build(1)
  const { text, secrets } = build(target / (await countTokens([first.text])))
  const tokens = await countTokens([text])
  // One request through the guard, to read the prompt it sends.
  let sent = ''
  const capture = guardOver(
    {
      run: async (_model, inputs) => {
        sent = sentText(inputs)
        // Whole answers of long prompts are read from an upstream stream (the guard's one-pass path).
        return upstreamOf(() => script(`${canary}\nok`, tokens, 1)).run(MODEL, inputs)
      },
    },
    'on',
  )
  await capture.run(MODEL, { messages: [{ role: 'user', content: text }] })
  const { standIns, values } = standInsOf(text, sent)
  if (values.some((v) => sent.includes(v))) throw new Error('a secret value reached the upstream')
  const promptTokens = await countTokens([sent])
  return {
    target,
    text,
    tokens,
    lines: secrets,
    secrets: values.length,
    quote: script(answerText(canary, standIns, false, target), promptTokens, target),
    blank: script(answerText(canary, standIns, true, target), promptTokens, target),
    values,
    canary,
  }
}

async function measure(p: Prepared, stream: boolean, quick: boolean): Promise<Row> {
  const inputs = { messages: [{ role: 'user', content: p.text }], ...(stream ? { stream } : {}) }
  const runners: Record<Contender, AiRunner> = {
    // The same answer bytes as the quoting contender: only the guard's work differs.
    off: guardOver(
      upstreamOf(() => p.quote),
      'off',
    ),
    'on, answer quotes every stand-in': guardOver(
      upstreamOf(() => p.quote),
      'on',
    ),
    'on, answer without stand-ins': guardOver(
      upstreamOf(() => p.blank),
      'on',
    ),
  }
  // Sanity: every value comes back where the answer quoted its stand-in, and nothing is withheld.
  const back = await delivered(await runners['on, answer quotes every stand-in'].run(MODEL, inputs))
  const missing = p.values.filter((v) => !back.includes(v))
  if (missing.length > 0) throw new Error(`${missing.length} values not restored`)
  if (back.includes(p.canary)) throw new Error('the canary reached the client')
  const plain = await delivered(await runners['on, answer without stand-ins'].run(MODEL, inputs))
  if (plain !== p.blank.content.slice(p.blank.content.indexOf('\n') + 1)) {
    throw new Error('the answer without stand-ins was changed')
  }
  await delivered(await runners.off.run(MODEL, inputs))

  const runs = roundsFor(p.target, quick)
  const samples = await sideBySide(
    Object.fromEntries(
      CONTENDERS.map((name) => [name, async () => consume(await runners[name].run(MODEL, inputs))]),
    ) as Record<Contender, () => Promise<void>>,
    runs,
    2,
  )
  const off = samples.off
  const on = CONTENDERS.filter((c): c is Exclude<Contender, 'off'> => c !== 'off')
  const answer = p.quote
  return {
    targetTokens: p.target,
    tokens: p.tokens,
    chars: p.text.length,
    secrets: p.secrets,
    stream,
    answerChars: answer.content.length,
    events: answer.events,
    runs,
    time: Object.fromEntries(CONTENDERS.map((c) => [c, summarize(samples[c])])) as Row['time'],
    added: Object.fromEntries(
      on.map((c) => [c, summarize(samples[c].map((v, i) => v - off[i]!))]),
    ) as Row['added'],
    ratio: Object.fromEntries(
      on.map((c) => [c, Math.round((median(samples[c]) / median(off)) * 1000) / 1000]),
    ) as Row['ratio'],
  }
}

interface PerEvent {
  /** Answer tokens and events of the short and the long answer. */
  answerTokens: [number, number]
  events: [number, number]
  runs: number
  off: [Summary, Summary]
  on: [Summary, Summary]
  /** Per-round differences on − off, short and long answer. */
  added: [Summary, Summary]
  /** Events per second of the long answer, off and on. */
  eventsPerSecondOff: number
  eventsPerSecondOn: number
  /** Long answer: on median ÷ off median. */
  ratio: number
  /**
   * µs added per event: the long answer's added median minus the short one's (the per-request part,
   * a book opened for nothing), over the events between them.
   */
  addedMicrosPerEvent: number
}

/**
 * The stand-in hold-back alone: a short prompt with no secret and a streamed answer with no stand-in,
 * secrets off and on — every event judged (where a stand-in could be forming) for nothing. Two
 * answer lengths, so the per-request part drops out of the per-event figure.
 */
async function perEvent(canary: string, quick: boolean): Promise<PerEvent> {
  const lengths: [number, number] = [500, quick ? 4_000 : 12_000]
  const answers = lengths.map((tokens, i) => {
    const content = `${canary}\n${english(5 + i, tokens * 4)}`
    return script(content, 20, 5)
  }) as [Scripted, Scripted]
  const inputs = {
    messages: [{ role: 'user', content: 'Explain the quarterly ledger.' }],
    stream: true,
  }
  const runners = {
    offShort: guardOver(
      upstreamOf(() => answers[0]),
      'off',
    ),
    onShort: guardOver(
      upstreamOf(() => answers[0]),
      'on',
    ),
    offLong: guardOver(
      upstreamOf(() => answers[1]),
      'off',
    ),
    onLong: guardOver(
      upstreamOf(() => answers[1]),
      'on',
    ),
  }
  const back = await delivered(await runners.onLong.run(MODEL, inputs))
  if (back !== answers[1].content.slice(canary.length + 1))
    throw new Error('the answer was changed')
  const runs = quick ? 6 : 40
  const samples = await sideBySide(
    Object.fromEntries(
      Object.entries(runners).map(([name, runner]) => [
        name,
        async () => consume(await runner.run(MODEL, inputs)),
      ]),
    ) as Record<keyof typeof runners, () => Promise<void>>,
    runs,
    2,
  )
  const diff = (on: number[], off: number[]) => summarize(on.map((v, i) => v - off[i]!))
  const added: [Summary, Summary] = [
    diff(samples.onShort, samples.offShort),
    diff(samples.onLong, samples.offLong),
  ]
  const events: [number, number] = [answers[0].events, answers[1].events]
  const mOff = median(samples.offLong)
  const mOn = median(samples.onLong)
  return {
    answerTokens: lengths,
    events,
    runs,
    off: [summarize(samples.offShort), summarize(samples.offLong)],
    on: [summarize(samples.onShort), summarize(samples.onLong)],
    added,
    eventsPerSecondOff: Math.round((events[1] / mOff) * 1000),
    eventsPerSecondOn: Math.round((events[1] / mOn) * 1000),
    ratio: Math.round((mOn / mOff) * 1000) / 1000,
    addedMicrosPerEvent:
      Math.round(((added[1].median - added[0].median) / (events[1] - events[0])) * 1e4) / 10,
  }
}

/** What `git …args` prints ('' when git fails). */
function git(...args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { stdio: ['ignore', 'pipe', 'ignore'] })
    let out = ''
    const decoder = new TextDecoder()
    child.stdout.on('data', (chunk) => {
      out += decoder.decode(chunk, { stream: true })
    })
    child.on('error', () => resolve(''))
    child.on('close', () => resolve(out.trim()))
  })
}

interface SourceState {
  commit: string
  /** src/ had changes not committed yet (they are what was measured). */
  srcChanged: boolean
}

/** The commit measured, and whether src/ had changes not committed yet. */
async function sourceState(): Promise<SourceState> {
  const commit = (await git('rev-parse', '--short', 'HEAD')) || 'unknown'
  return { commit, srcChanged: (await git('status', '--porcelain', 'src')) !== '' }
}

function signed(value: number): string {
  return value < 0 ? `−${ms(-value)}` : `+${ms(value)}`
}

const n = (x: number) => x.toLocaleString('en-US')

function table(
  rows: Row[],
  event: PerEvent,
  quick: boolean,
  command: string,
  source: SourceState,
): string {
  const m = machineInfo()
  const q = 'on, answer quotes every stand-in'
  const b = 'on, answer without stand-ins'
  return [
    `\`${command}\` (\`bench/suites/secrets-guard.ts\`, figures in ` +
      `\`bench/results/secrets-guard${quick ? '-quick' : ''}.json\`; commit ${source.commit}` +
      `${source.srcChanged ? ' with src/ changes not yet committed' : ''}): \`guardAi\` in Node ${m.node}, ` +
      `${m.cpu} (${m.cores} cores, shared)${quick ? ', quick run' : ''}, over an upstream that answers at ` +
      'once, three guards side by side in one run (order alternating per round): secrets **off**; ' +
      "**on** (`secrets: { high: 'substitute', medium: 'substitute' }`) with an answer that quotes " +
      'every stand-in the engine received (the worst case: every one restored); **on** with an answer ' +
      'of the same length holding no stand-in. The off guard gets the quoting answer’s bytes. Prompt: ' +
      'English prose then source code with a realistic secret line every ~2,000 characters; answer: ' +
      `~${n(ANSWER_TOKENS)} tokens of prose plus the quotes, streamed in ${EVENT_CHARS}-character ` +
      'events (SSE bytes split at awkward boundaries). Medians; “added” is the median of the ' +
      'per-round differences on − off, “×” the ratio of medians.',
    '',
    '| prompt tokens | secrets | answer | off | on, quotes every stand-in | added | × | on, no stand-in | added | × |',
    '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${n(r.tokens)} | ${r.secrets} | ${r.stream ? `stream, ${n(r.events)} events` : 'whole'}, ${n(r.answerChars)} chars | ` +
        `${ms(r.time.off.median)} | ${ms(r.time[q].median)} | ${signed(r.added[q].median)} | ${r.ratio[q].toFixed(2)} | ` +
        `${ms(r.time[b].median)} | ${signed(r.added[b].median)} | ${r.ratio[b].toFixed(2)} |`,
    ),
    '',
    "The stream's stand-in hold-back alone: a short prompt with no secret, streamed answers with no " +
      `stand-in of ${n(event.answerTokens[0])} and ${n(event.answerTokens[1])} tokens ` +
      `(${n(event.events[0])} and ${n(event.events[1])} events), off and on side by side ` +
      `(${event.runs} rounds). The long answer: ${n(event.eventsPerSecondOff)} events/s off, ` +
      `${n(event.eventsPerSecondOn)} on (×${event.ratio.toFixed(2)} the time, ` +
      `${signed(event.added[1].median)}); the short one ${signed(event.added[0].median)}. ` +
      `Per event (the difference of the two, over the events between them): ` +
      `**${event.addedMicrosPerEvent.toFixed(1)} µs added per event**.`,
  ].join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const canary = await benchCanary()
  const rows: Row[] = []
  for (const target of SIZES) {
    const p = await prepare(target, canary)
    for (const stream of [false, true]) {
      const row = await measure(p, stream, quick)
      rows.push(row)
      const q = 'on, answer quotes every stand-in'
      const b = 'on, answer without stand-ins'
      console.log(
        `  ${String(row.tokens).padStart(7)} tok ${String(row.secrets).padStart(4)} secrets ` +
          `${stream ? 'stream' : 'whole '}  off ${ms(row.time.off.median)}  ` +
          `quotes ${ms(row.time[q].median)} (${signed(row.added[q].median)}, ×${row.ratio[q]})  ` +
          `none ${ms(row.time[b].median)} (${signed(row.added[b].median)}, ×${row.ratio[b]})`,
      )
    }
  }
  const event = await perEvent(canary, quick)
  console.log(
    `  hold-back: ${event.events[1]} events, off ${ms(event.off[1].median)}, on ${ms(event.on[1].median)} ` +
      `(×${event.ratio}); ${event.events[0]} events ${signed(event.added[0].median)}; ` +
      `${event.addedMicrosPerEvent.toFixed(1)} µs/event added`,
  )
  const command = `npm run bench -- ${quick ? '--quick ' : ''}secrets-guard`
  const source = await sourceState()
  const markdown = table(rows, event, quick, command, source)
  const path = await writeResult(quick ? 'secrets-guard-quick' : 'secrets-guard', {
    suite: 'secrets-guard',
    date: new Date().toISOString(),
    quick,
    command,
    source,
    machine: machineInfo(),
    config: {
      model: MODEL,
      secrets: SECRETS_ON,
      answerTokens: ANSWER_TOKENS,
      eventChars: EVENT_CHARS,
      requestId: 'fixed: the same canary and stand-ins every request',
    },
    note:
      'Times in ms from guardAi.run to the last byte read (streams) or the object serialised ' +
      '(whole). added = per-round differences contender − off; ratio = median ÷ off median. The ' +
      'off guard gets the same answer bytes as the quoting contender.',
    rows,
    perEvent: event,
    markdown,
  })
  console.log(`  wrote ${path}\n\n${markdown}\n`)
}

const suite: Suite = { name: 'secrets-guard', run }
export default suite
