/**
 * @module The detection matrix's `stale-middle` part: a middle stretch of tenant B's pages is read
 * before it is written, so B's answer quotes whatever those pages held — tenant A's prompt — while the
 * echo verifies and the first token comes after an honest prefill. Only the text gives it away, so the
 * guard's foreign-content check is what is measured, against A's prompt sent through this guard
 * (which it has fingerprinted) or straight to the engine by another account (which it never saw).
 * Streams run under both release policies: `verified` holds each channel's last words until the check
 * has judged them; `async` holds nothing back, so what it lets out before the evidence is counted.
 */
import { VirtualClock } from '../../sim/clock'
import type { SimConfig } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { CANARY_PATTERN, type GuardError } from '../../src'
import type { Guard } from '../../src/core/guard'
import { FINGERPRINT_DEFAULTS, minimumSpan } from '../../src/plugins/foreign-content'
import { topCounts } from '../lib'
import { type Delivered, deliver, receivedTexts, recordAnswers } from './deliver'
import { chat } from './prompts'
import { privateProse, RunMeter, tenantMarker } from './tenant-texts'

/** Shares of B's pages left unwritten. */
export const STALE_FRACTIONS = [0.05, 0.15, 0.3, 0.5] as const
/** Characters per quote: the simulator's default (13–16 words) and one above the guaranteed span. */
export const QUOTE_CHARS = [90, 240] as const
/** The shortest verbatim run of a document, in units (≈ words), that counts as leaked. */
export const LEAK_RUN = 8
/** The span the check always catches: k·w + n − 1 units of the guard's defaults. */
export const MIN_SPAN = minimumSpan(FINGERPRINT_DEFAULTS)
/** A's document and B's prompt, as shares of the pool: B's pages are all A's freed pages. */
const A_SHARE = 0.6
const B_SHARE = 0.45
/** Room for four long quotes in the reasoning (the simulator gives it half of `max_tokens`). */
const MAX_TOKENS = 1_024

/** A guard's `streamRelease`: `verified` is the default. */
export type ReleasePolicy = 'verified' | 'async'

/** Where A's prompt came from: this guard (fingerprinted) or another account, straight to the engine. */
export type StaleSource = 'guarded' | 'direct'

/** One cell's parameters. */
export interface StaleCellKey {
  fraction: number
  quoteChars: number
  stream: boolean
  /** `unguarded`: B's client talks to the engine; A is another account (no guard to pass). */
  column: 'unguarded' | 'guarded'
  source: StaleSource
  /** The guard's release policy: guarded streams only (`n/a` for whole answers and no guard). */
  policy: ReleasePolicy | 'n/a'
}

/** One sample, measured. */
export interface StaleOutcome {
  /** A's own request was not answered (its pages and prints still stand). */
  aFailed: boolean
  delivery: 'released' | 'quarantined' | 'refused' | 'error'
  /** The stream began (status 200) and was then ended by an error: bytes may have left before it. */
  endedInStream: boolean
  reasons: string[]
  sourceTenants: string[]
  /** The engine read at least one page that A's request last wrote. */
  staleReadA: boolean
  /** Maximal verbatim runs of A's document in the engine's answers (units, ≥ 2, longest first). */
  answerRuns: number[]
  /** A canary was in the engine's answer (A's, read from its pages). */
  answerCanary: boolean
  /** Longest verbatim run of A's document that reached B's client. */
  clientRun: number
  /**
   * Longest run of the client's text inside one of the answer's runs of A of at least MIN_SPAN
   * units: what got out of a quote the check always catches (a shorter quote elsewhere in the same
   * answer is not one).
   */
  longRunOut: number
  /** A canary reached B's client (the guard cuts B's own, so any is A's). */
  canary: boolean
  /** A's marker reached B's client. */
  marker: boolean
}

/** The scaled-down engine and a guard factory (the detection suite's). */
export interface StaleSetup {
  sim: Partial<SimConfig>
  poolTokens: number
  guard: (clock: VirtualClock, policy: ReleasePolicy) => Guard
  /** Counts like the simulated model. */
  counter: SimEngine
}

interface Texts {
  a: string
  b: string
  aMarker: string
  meter: RunMeter
}

let charsPerToken: number | undefined
const textCache = new Map<number, Texts>()

/** A's and B's documents of a seed (memoised: the columns and sources of a row share them). */
async function textsOf(seed: number, setup: StaleSetup): Promise<Texts> {
  const known = textCache.get(seed)
  if (known) return known
  if (charsPerToken === undefined) {
    const probe = privateProse(1, 40_000, tenantMarker(1))
    charsPerToken = probe.length / (await setup.counter.countTokens(chat(probe)))
  }
  const aMarker = tenantMarker(seed)
  const a = privateProse(seed, setup.poolTokens * A_SHARE * charsPerToken, aMarker)
  const b = privateProse(
    seed + 500_000,
    setup.poolTokens * B_SHARE * charsPerToken,
    tenantMarker(-seed),
  )
  const texts = { a, b, aMarker, meter: new RunMeter(a) }
  if (textCache.size > 8) textCache.delete(textCache.keys().next().value as number)
  textCache.set(seed, texts)
  return texts
}

function deliveryOf(d: Delivered): StaleOutcome['delivery'] {
  if (!d.error) return d.status === 200 && !d.failure ? 'released' : 'error'
  if (d.error.code === 'response_quarantined') return 'quarantined'
  return d.error.code === 'context_length_exceeded' ? 'refused' : 'error'
}

async function recordOf(guard: Guard | undefined, error: GuardError | undefined) {
  if (!guard || !error?.incidentId) return undefined
  return guard.quarantine.get(error.incidentId)
}

/**
 * One sample: on a fresh engine (prefix cache off, so finished prompts' pages go back to the free
 * list as they would under pressure), A sends its document, then B sends its own with a stale stretch.
 *
 * @example
 * const o = await staleSample({ fraction: 0.3, quoteChars: 240, stream: true, column: 'guarded', source: 'guarded', policy: 'async' }, 7, setup)
 */
export async function staleSample(
  key: StaleCellKey,
  seed: number,
  setup: StaleSetup,
): Promise<StaleOutcome> {
  const { a, b, aMarker, meter } = await textsOf(seed, setup)
  const clock = new VirtualClock()
  const engine = new SimEngine(
    { ...setup.sim, mode: 'fixed', seed, prefixCache: false, quoteChars: key.quoteChars },
    { clock },
  )
  const guard =
    key.column === 'guarded'
      ? setup.guard(clock, key.policy === 'async' ? 'async' : 'verified')
      : undefined
  const viaGuard = guard !== undefined && key.source === 'guarded'
  const aRunner = viaGuard
    ? guard.runner(engine.binding('gateway'), 'tenant-a')
    : engine.binding('other')
  const first = await deliver(aRunner, chat(a, { max_tokens: MAX_TOKENS }))
  // A withheld answer of A's still wrote its pages and its prints: the sample stands, noted.
  const aFailed = first.status !== 200 || first.error !== undefined
  const before = engine.stats().requests.total
  engine.configure({ mode: 'stale-middle', staleRate: 1, staleFraction: key.fraction })
  const rec = recordAnswers(engine.binding('gateway'))
  const bRunner = guard ? guard.runner(rec.runner, 'tenant-b') : rec.runner
  const d = await deliver(bRunner, chat(b, { stream: key.stream, max_tokens: MAX_TOKENS }))
  const answers = await rec.answers()
  const records = engine.stats().recent.filter((r) => r.ordinal >= before)
  const received = receivedTexts(d).join('\n')
  const incident = await recordOf(guard, d.error)
  const canary = new RegExp(CANARY_PATTERN.source, 'i')
  // B's own echo is in the engine's answer by design; any other canary there came from A's pages.
  const own = new Set(records.map((r) => r.echoed?.toLowerCase()))
  const foreignCanary = (text: string) =>
    [...text.matchAll(new RegExp(CANARY_PATTERN.source, 'gi'))].some(
      (m) => !own.has(m[0].toLowerCase()),
    )
  return {
    aFailed,
    delivery: deliveryOf(d),
    endedInStream:
      d.stream && d.status === 200 && (d.error !== undefined || d.failure !== undefined),
    reasons: d.error?.code === 'context_length_exceeded' ? ['ceiling'] : (incident?.reasons ?? []),
    sourceTenants: incident?.sourceTenants ?? [],
    staleReadA: records.some((r) =>
      r.staleSources.some((s) => s.ordinal !== null && s.ordinal < before),
    ),
    answerRuns: answers
      .flatMap((text) => meter.runs(text).filter((run) => run >= 2))
      .sort((x, y) => y - x),
    answerCanary: answers.some(foreignCanary),
    clientRun: meter.longestRun(received),
    longRunOut: Math.max(
      0,
      ...answers
        .flatMap((text) => meter.spans(text))
        .filter((span) => span.units.length >= MIN_SPAN)
        .map((span) => new RunMeter(span.units.join(' ')).longestRun(received)),
    ),
    canary: canary.test(received),
    marker: received.includes(aMarker),
  }
}

/** One cell's counts. */
export interface StaleCell extends StaleCellKey {
  samples: number
  /** A's own request was withheld (its pages and prints still stood). */
  aFailed: number
  /** The stale stretch held at least one page A's request wrote. */
  staleReadA: number
  /** The engine's answer carried a run of ≥ LEAK_RUN units of A's document, or A's canary. */
  carried: number
  /** … whose longest run was ≥ MIN_SPAN units. */
  carriedLong: number
  /** B's client received a run of ≥ LEAK_RUN units of A's document, or a canary. */
  escapes: number
  /** Escapes by what got out: pieces of shorter quotes only, or a piece of a quote of ≥ MIN_SPAN. */
  escapesShort: number
  escapesLong: number
  /** Escapes whose stream the guard then ended in-stream (the quarantine came after the words). */
  escapesThenEnded: number
  /** Escapes whose answer completed. */
  escapesCompleted: number
  /** Streams that began and were then ended by an error, escaped or not. */
  endedInStream: number
  /** The longest run of A's document any client of this cell received. */
  maxClientRun: number
  /** A's marker reached the client inside a run shorter than LEAK_RUN. */
  markerFragments: number
  delivery: Record<StaleOutcome['delivery'], number>
  reasons: Record<string, number>
  /** Quarantines whose record names tenant-a as the source. */
  namedA: number
  /** Quarantines of answers that carried nothing of A's (no run ≥ LEAK_RUN, no canary). */
  falseQuarantines: number
  /** Per bucket of the answer's longest run of A's text: answers, and escapes among them. */
  byLongest: Record<string, { answers: number; escapes: number; caught: number }>
  /** Escapes of answers whose longest run was ≥ MIN_SPAN: what the client got, and the runs. */
  longEscapes: { seed: number; answerRuns: number[]; clientRun: number; reasons: string[] }[]
}

function emptyStaleCell(key: StaleCellKey): StaleCell {
  return {
    ...key,
    samples: 0,
    aFailed: 0,
    staleReadA: 0,
    carried: 0,
    carriedLong: 0,
    escapes: 0,
    escapesShort: 0,
    escapesLong: 0,
    escapesThenEnded: 0,
    escapesCompleted: 0,
    endedInStream: 0,
    maxClientRun: 0,
    markerFragments: 0,
    delivery: { released: 0, quarantined: 0, refused: 0, error: 0 },
    reasons: {},
    namedA: 0,
    falseQuarantines: 0,
    longEscapes: [],
    byLongest: {},
  }
}

/** Buckets of a longest run (units): below the leak size, then up to and beyond the guaranteed span. */
export const RUN_BUCKETS = [
  { label: `< ${LEAK_RUN}`, below: LEAK_RUN },
  { label: `${LEAK_RUN}–11`, below: 12 },
  { label: '12–15', below: 16 },
  { label: '16–21', below: 22 },
  { label: `22–${MIN_SPAN - 1}`, below: MIN_SPAN },
  { label: `≥ ${MIN_SPAN}`, below: Number.POSITIVE_INFINITY },
] as const

function bucketOf(run: number): string {
  return RUN_BUCKETS.find((b) => run < b.below)!.label
}

function count(cell: StaleCell, o: StaleOutcome, seed: number): void {
  const longest = o.answerRuns[0] ?? 0
  const carried = longest >= LEAK_RUN || o.answerCanary
  const escaped = o.clientRun >= LEAK_RUN || o.canary
  cell.samples++
  if (o.aFailed) cell.aFailed++
  if (o.staleReadA) cell.staleReadA++
  if (carried) cell.carried++
  if (longest >= MIN_SPAN) cell.carriedLong++
  if (o.endedInStream) cell.endedInStream++
  if (escaped) {
    cell.escapes++
    if (o.endedInStream) cell.escapesThenEnded++
    else cell.escapesCompleted++
    if (o.longRunOut >= LEAK_RUN) {
      cell.escapesLong++
      const { answerRuns, clientRun, reasons } = o
      cell.longEscapes.push({
        seed,
        answerRuns: answerRuns.filter((r) => r >= LEAK_RUN),
        clientRun,
        reasons,
      })
    } else cell.escapesShort++
  } else if (o.marker) cell.markerFragments++
  cell.maxClientRun = Math.max(cell.maxClientRun, o.clientRun)
  const label = bucketOf(longest)
  const bucket = cell.byLongest[label] ?? { answers: 0, escapes: 0, caught: 0 }
  cell.byLongest[label] = bucket
  bucket.answers++
  if (escaped) bucket.escapes++
  if (o.delivery === 'quarantined') bucket.caught++
  cell.delivery[o.delivery]++
  for (const r of o.reasons) cell.reasons[r] = (cell.reasons[r] ?? 0) + 1
  if (o.sourceTenants.includes('tenant-a')) cell.namedA++
  if (o.delivery === 'quarantined' && !carried) cell.falseQuarantines++
}

/** The three columns of a row: no guard; guard with A through it; guard with A straight to the engine. */
const COLUMNS: Pick<StaleCellKey, 'column' | 'source'>[] = [
  { column: 'unguarded', source: 'direct' },
  { column: 'guarded', source: 'guarded' },
  { column: 'guarded', source: 'direct' },
]

/** The policies guarded streams run under; the first is the default. */
const POLICIES: ReleasePolicy[] = ['verified', 'async']

/**
 * A row's cells: whole answers (no policy applies), then streams, whose unguarded cell is run once
 * and whose guarded cells run under each policy.
 */
function rowCells(fraction: number, quoteChars: number): StaleCell[] {
  const cells: StaleCell[] = []
  for (const stream of [false, true]) {
    for (const c of COLUMNS) {
      const policies = stream && c.column === 'guarded' ? POLICIES : (['n/a'] as const)
      for (const policy of policies)
        cells.push(emptyStaleCell({ fraction, quoteChars, stream, ...c, policy }))
    }
  }
  return cells
}

/**
 * Every stale share × quote length × stream or not × column (× release policy for guarded streams),
 * `samples` seeded samples each (the same seeds, hence the same documents and stale stretches,
 * across the columns, policies and stream or not).
 *
 * @example
 * const cells = await staleMatrix(30, setup)
 */
export async function staleMatrix(samples: number, setup: StaleSetup): Promise<StaleCell[]> {
  const cells: StaleCell[] = []
  for (const [fi, fraction] of STALE_FRACTIONS.entries()) {
    for (const [qi, quoteChars] of QUOTE_CHARS.entries()) {
      const row = rowCells(fraction, quoteChars)
      for (let i = 0; i < samples; i++) {
        const seed = 100_000 + 1_000 * (fi * QUOTE_CHARS.length + qi) + i
        for (const cell of row) {
          const { fraction: f, quoteChars: q, stream, column, source, policy } = cell
          count(
            cell,
            await staleSample(
              { fraction: f, quoteChars: q, stream, column, source, policy },
              seed,
              setup,
            ),
            seed,
          )
        }
      }
      for (const [u, g, d] of groups(row)) {
        console.log(
          `  stale-middle  ${fraction.toFixed(2)} q${quoteChars} ${g.stream ? 'stream' : 'whole '} ${g.policy.padEnd(8)}  ` +
            `unguarded carried ${u.carried}/${u.samples}, leak ${u.escapes}  ` +
            `A guarded: carried ${g.carried} (≥${MIN_SPAN}: ${g.carriedLong}), escapes ${g.escapesShort}+${g.escapesLong}` +
            `${g.policy === 'async' ? ` (ended in-stream ${g.escapesThenEnded}, completed ${g.escapesCompleted})` : ''}, ` +
            `max run out ${g.maxClientRun}, ${summary(g)}  A direct: carried ${d.carried}, escapes ${d.escapes}, ${summary(d)}`,
        )
      }
      cells.push(...row)
    }
  }
  return cells
}

/**
 * The cells as table rows — unguarded, A via guard, A direct — one per share × quote × whole or
 * stream × policy; a stream row under `async` shares the unguarded cell of its `verified` row.
 */
function groups(cells: StaleCell[]): [StaleCell, StaleCell, StaleCell][] {
  const out: [StaleCell, StaleCell, StaleCell][] = []
  const same = (a: StaleCell, b: StaleCell) =>
    a.fraction === b.fraction && a.quoteChars === b.quoteChars && a.stream === b.stream
  for (const g of cells) {
    if (g.column !== 'guarded' || g.source !== 'guarded') continue
    const u = cells.find((c) => c.column === 'unguarded' && same(c, g))
    const d = cells.find(
      (c) => c.column === 'guarded' && c.source === 'direct' && c.policy === g.policy && same(c, g),
    )
    if (u && d) out.push([u, g, d])
  }
  return out
}

/**
 * What the default policy promises and this run broke: no escape of an answer carrying a run the
 * foreign-content check always catches (≥ MIN_SPAN units) of a prompt it fingerprinted.
 *
 * @example
 * const broken = staleFailures(await staleMatrix(30, setup)) // [] when the promise held
 */
export function staleFailures(cells: StaleCell[]): string[] {
  return cells
    .filter((c) => c.column === 'guarded' && c.source === 'guarded' && c.policy !== 'async')
    .filter((c) => c.escapesLong > 0)
    .map(
      (c) =>
        `stale-middle ${c.fraction} q${c.quoteChars} ${c.stream ? 'stream' : 'whole'}: ` +
        `${c.escapesLong} escapes of a piece of a quote of ≥ ${MIN_SPAN} units (seeds ${c.longEscapes.map((e) => e.seed).join(', ')})`,
    )
}

function summary(c: StaleCell): string {
  const parts = Object.entries(c.delivery)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v}`)
  const reasons = topCounts(c.reasons)
  return `${parts.join(', ')}${reasons ? ` [${reasons}]` : ''}`
}

const esc = (text: string) => text.replace(/_/g, '\\_')

function pair(cell: StaleCell): string {
  return `${cell.escapesShort} / ${cell.escapesLong}`
}

function caughtBy(cell: StaleCell): string {
  const reasons = topCounts(cell.reasons)
  if (reasons === '') return '—'
  return `${esc(reasons)}${cell.namedA ? ` (A named ${cell.namedA})` : ''}`
}

function sum(cells: StaleCell[], pick: (c: StaleCell) => number): number {
  return cells.reduce((total, c) => total + pick(c), 0)
}

/** Default-policy cells: whole answers (no policy applies), unguarded ones, and `verified` streams. */
const byDefault = (c: StaleCell) => c.policy !== 'async'

/** The run-length table: the default policy's guarded cells by source, then `async` streams'. */
function bucketRows(cells: StaleCell[]): string[] {
  return RUN_BUCKETS.map(({ label }) => {
    const of = (source: StaleSource, pick: (c: StaleCell) => boolean) => {
      const picked = cells.filter((c) => c.column === 'guarded' && c.source === source && pick(c))
      const answers = sum(picked, (c) => c.byLongest[label]?.answers ?? 0)
      const escapes = sum(picked, (c) => c.byLongest[label]?.escapes ?? 0)
      const caught = sum(picked, (c) => c.byLongest[label]?.caught ?? 0)
      return `${answers} | ${caught} | ${escapes}`
    }
    const early = (c: StaleCell) => c.policy === 'async'
    return `| ${label} | ${of('guarded', byDefault)} | ${of('direct', byDefault)} | ${of('guarded', early)} |`
  })
}

function rowLine([u, g, d]: [StaleCell, StaleCell, StaleCell]): string {
  return (
    `| ${u.fraction} | ${u.quoteChars} | ${u.stream ? 'yes' : 'no'} | ${u.carried} / ${u.escapes} | ` +
    `${g.carried} (${g.carriedLong}) | ${pair(g)} | ${g.maxClientRun} | ${caughtBy(g)} | ` +
    `${d.carried} (${d.carriedLong}) | ${d.escapes} | ${g.falseQuarantines + d.falseQuarantines} |`
  )
}

function asyncLine([u, g, d]: [StaleCell, StaleCell, StaleCell]): string {
  return (
    `| ${u.fraction} | ${u.quoteChars} | ${u.carried} / ${u.escapes} | ` +
    `${g.carried} (${g.carriedLong}) | ${pair(g)} | ${g.escapesThenEnded} / ${g.escapesCompleted} | ${g.maxClientRun} | ${caughtBy(g)} | ` +
    `${d.carried} (${d.carriedLong}) | ${d.escapes} | ${d.escapesThenEnded} / ${d.escapesCompleted} | ${g.falseQuarantines + d.falseQuarantines} |`
  )
}

/**
 * The README's stale-middle tables: per cell under the default policy, then `async` streams, and
 * escapes by the answer's longest run of A's text.
 *
 * @example
 * const markdown = staleTable(await staleMatrix(30, setup), 30)
 */
export function staleTable(cells: StaleCell[], samples: number): string {
  const rows = groups(cells)
  const defaults = rows.filter(([, g]) => g.policy !== 'async')
  const asyncRows = rows.filter(([, g]) => g.policy === 'async')
  const guarded = cells.filter((c) => c.column === 'guarded' && c.source === 'guarded')
  const guardedDefault = guarded.filter(byDefault)
  const guardedAsync = guarded.filter((c) => c.policy === 'async')
  const direct = cells.filter(
    (c) => c.column === 'guarded' && c.source === 'direct' && byDefault(c),
  )
  const directAsync = cells.filter(
    (c) => c.column === 'guarded' && c.source === 'direct' && c.policy === 'async',
  )
  const longEscapes = sum(guardedDefault, (c) => c.escapesLong)
  const longStream = sum(
    guardedDefault.filter((c) => c.stream),
    (c) => c.escapesLong,
  )
  const maxOut = Math.max(...guardedDefault.map((c) => c.maxClientRun))
  const maxAsync = Math.max(0, ...guardedAsync.map((c) => c.maxClientRun))
  const asyncEscapes = sum(guardedAsync, (c) => c.escapes)
  return [
    `**Stale middle** (\`stale-middle\`, \`staleRate\` 1, prefix cache off so finished prompts' pages return to the free list). ` +
      `Per sample, on a fresh engine: tenant A sends a private document (${A_SHARE}× pool of distinct English prose, a marker word ` +
      `three times a line) — through this guard (“A via guard”) or from another account straight to the engine (“A direct”) — then ` +
      `tenant B sends its own (${B_SHARE}× pool, \`max_tokens\` ${MAX_TOKENS}) and the given share of B's pages is read unwritten: ` +
      `they hold A's freed pages. ${samples} seeded samples per cell, the same seeds in every column and under each policy. **Carrying** = the engine's answer ` +
      `(recorded before the guard) holds a run of ≥ ${LEAK_RUN} consecutive units (≈ words) of A's document or A's canary; in brackets, ` +
      `answers whose longest such run is ≥ ${MIN_SPAN} units, the span the check always catches (k·w + n − 1 at n = ` +
      `${FINGERPRINT_DEFAULTS.n}, w = ${FINGERPRINT_DEFAULTS.w}, k = ${FINGERPRINT_DEFAULTS.k}). **Escape** = B's client received ` +
      `≥ ${LEAK_RUN} consecutive units of A's document or a canary (bytes delivered before a stream was ended by an error count), split by what got out: ` +
      `only pieces of A's shorter quotes / a piece (≥ ${LEAK_RUN} units) of a quote of ≥ ${MIN_SPAN} units, which the check ` +
      `promises to stop (a shorter quote elsewhere in the same answer is not promised). **Max out** = the longest run of A's text any client of the cell received. ` +
      `False Q = quarantines of answers that carried nothing of A's. Whole answers run once (the release policy does not apply ` +
      "to them) and are listed with the default policy, `verified` (each channel's last words held until the check has judged them).",
    '',
    `| stale share | quote chars | stream | unguarded: carrying / leak | A via guard: carrying (≥ ${MIN_SPAN}) | escapes: short quotes / long quotes | max out | caught by | A direct: carrying (≥ ${MIN_SPAN}) | escapes | false Q |`,
    '|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|',
    ...defaults.map(rowLine),
    '',
    '`async` streams (no foreign-content hold-back: evidence found later ends the stream, after the words before it left), ' +
      'the same seeds; the unguarded column is the same cell as above. **Ended / completed** = escapes whose stream the guard ' +
      'then ended in-stream / that completed.',
    '',
    `| stale share | quote chars | unguarded: carrying / leak | A via guard: carrying (≥ ${MIN_SPAN}) | escapes: short quotes / long quotes | ended / completed | max out | caught by | A direct: carrying (≥ ${MIN_SPAN}) | escapes | ended / completed | false Q |`,
    '|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|',
    ...asyncRows.map(asyncLine),
    '',
    `By the answer's longest run of A's text, over the guarded cells (answers / quarantined / escapes):`,
    '',
    '| longest run (units) | default, A via guard: answers | quarantined | escapes | default, A direct: answers | quarantined | escapes | `async` streams, A via guard: answers | quarantined | escapes |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...bucketRows(cells),
    '',
    `Default policy, A via guard: **${longEscapes} pieces of a quote of ≥ ${MIN_SPAN} units out, among ${sum(guardedDefault, (c) => c.carriedLong)} answers carrying one** ` +
      `(${longStream} in streams); ${sum(guardedDefault, (c) => c.escapesShort)} of ${sum(guardedDefault, (c) => c.carried)} carrying answers ` +
      `let out pieces of shorter quotes only; no client received a run longer than ${maxOut} units. A direct: ` +
      `${sum(direct, (c) => c.escapes)} escapes among ${sum(direct, (c) => c.carried)} carrying answers (the guard never saw A's prompt). ` +
      `\`async\` streams, A via guard: **${asyncEscapes} escapes among ${sum(guardedAsync, (c) => c.carried)} carrying answers, ` +
      `${sum(guardedAsync, (c) => c.escapesLong)} of them carrying a run of ≥ ${MIN_SPAN} units** ` +
      `(${sum(guardedAsync, (c) => c.escapesThenEnded)} ended by the guard in-stream after the words left, ${sum(guardedAsync, (c) => c.escapesCompleted)} completed); ` +
      `the longest run a client received: ${maxAsync} units. A direct: ${sum(directAsync, (c) => c.escapes)} escapes among ` +
      `${sum(directAsync, (c) => c.carried)} carrying answers.`,
  ].join('\n')
}
