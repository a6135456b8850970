/**
 * @module Benchmark: the detection matrix. Every simulator mode × stream or not × prompt sizes around the
 * real pool × ceiling configured right or wrong, many seeded requests each: does another tenant's data
 * reach the client (leak escape), what caught it, and how often healthy traffic is withheld (false
 * quarantine). In-process on Node 22, one virtual clock shared by engine and guard, so timing evidence
 * is the simulated prefill to the millisecond and the run takes no wall time waiting.
 *
 * The incident is scaled down (pool 16,384 tokens, window 24,576 — the incident's 681,280 / 1,048,576
 * is 1 : 1.54) so thousands of requests run in a minute; every ratio the guards reason about is kept.
 *
 * Streams run under both release policies (`streamRelease`): `verified`, the default, must let nothing
 * of another tenant's through in any incident-class cell — the suite throws if it ever does — and
 * `async`, whose escapes are counted byte for byte (anything delivered before an in-stream quarantine
 * counts) and reported, split by whether the guard ended the stream afterwards. A third set of rows
 * runs every check whose evidence is a judgement in observe mode (`observe`: content, timing, echo),
 * whole and streamed: what it releases that enforce withholds, whether each such release was recorded
 * as an observed incident, and that proof (another request's canary) is still withheld.
 */
import { VirtualClock } from '../../sim/clock'
import type { SimMode } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { CANARY_PATTERN, type ModelProfile } from '../../src'
import { Guard } from '../../src/core/guard'
import { DEFAULT_PLUGINS } from '../../src/default-plugins'
import { machineInfo, type Suite, type SuiteOptions, topCounts, writeResult } from '../lib'
import { type Delivered, deliver, receivedTexts } from '../support/deliver'
import { BENCH_SECRET, chat, ledger, MODEL } from '../support/prompts'
import {
  LEAK_RUN,
  MIN_SPAN,
  QUOTE_CHARS,
  type ReleasePolicy,
  STALE_FRACTIONS,
  type StaleCell,
  type StaleSetup,
  staleFailures,
  staleMatrix,
  staleTable,
} from '../support/stale-middle'
import { rng } from '../texts'

const POOL = 16_384
const WINDOW = 24_576
const SIM = {
  tokenizer: 'qwen3',
  poolTokens: POOL,
  contextWindow: WINDOW,
  prefillTokensPerSecond: 20_000,
  decodeTokensPerSecond: 50,
  jitter: 0.1,
} as const
/** The guard's physical bound: 2× the simulated prefill (the built-in glm-5.3 bound is also well above real). */
const PROFILE: ModelProfile = {
  contextWindow: WINDOW,
  kvPoolTokens: POOL,
  maxPrefillTokensPerSecond: 40_000,
  tokenizerDrift: 0.1,
  defaultOutputReserve: 512,
  echo: 'require',
  directive: 'reply-first',
  cacheIsolation: 'off',
}
const CONFIGS = {
  right: PROFILE,
  wrong: { ...PROFILE, kvPoolTokens: WINDOW },
} as const
type Column = 'unguarded' | keyof typeof CONFIGS
/** The release policies streams run under; whole answers and unguarded cells have none (`n/a`). */
const POLICIES: ReleasePolicy[] = ['verified', 'async']
/** `observe`: the default release, every judgement's check observed (`observe` option). */
type GuardPolicy = ReleasePolicy | 'observe'
type CellPolicy = GuardPolicy | 'n/a'
/** Every check that has an observe mode. */
const OBSERVE_ALL = { content: true, timing: true, echo: true } as const
const MODES: SimMode[] = ['fixed', 'pd-abort-leak', 'truncate', 'stale-pages']
const SIZES = [0.5, 0.95, 1.05, 1.25]
/** Each of the victim's two documents, as a share of the pool: together they fill most of it. */
const VICTIM_SHARE = 0.42

type Delivery = 'released' | 'quarantined' | 'refused' | 'upstream_error' | 'other_error'

interface Outcome {
  delivery: Delivery
  /** Any of another tenant's data reached the client (see `leakOf`), whatever came after it. */
  leaked: boolean
  /** What gave the leak away, when it leaked. */
  leak?: LeakKind
  /** A stream that began (status 200) and was then ended by an error: a quarantine arriving in-stream. */
  endedInStream: boolean
  reasons: string[]
  /** Released under observe with an incident recording what enforce would have withheld. */
  observed: boolean
  /** The simulator's outcome for the (last) attempt. */
  simOutcome: string
  attempts: number
}

interface CellCounts {
  mode: SimMode
  size: number
  stream: boolean
  /** The guard's `streamRelease`: streams through a guard only (`n/a` for whole answers and no guard). */
  policy: CellPolicy
  column: Column
  samples: number
  /** Samples whose client received any of A's data (bytes sent before an in-stream error count). */
  leaked: number
  /** … of which the stream was then ended by the guard (the quarantine arrived in-stream). */
  leakedThenEnded: number
  /** … of which the answer completed: the client never learned it was withheld. */
  leakedCompleted: number
  /** What gave each leak away. */
  leakKinds: Partial<Record<LeakKind, number>>
  /** Streams that began (status 200) and were then ended by an error, leaked or not. */
  endedInStream: number
  /** Released under observe, recorded as an observed incident (`observe` rows). */
  observed: number
  /** … of the leaks, those recorded so (the others left no incident at all). */
  leakedObserved: number
  delivery: Record<Delivery, number>
  reasons: Record<string, number>
  simOutcomes: Record<string, number>
  retried: number
  /** Victim requests that went through the guard (the others went to the engine directly). */
  victimGuarded: number
}

/** Counts like the simulated model (its tokenizer, Qwen3 by default): the unit the KV pool holds. */
const COUNTER = new SimEngine(SIM)

/**
 * A ledger of about `tokens` tokens of the simulated model, whatever the label's length (labels cost
 * tokens on every line). Sizes are shares of the real pool, so they are counted in the pool's unit; the
 * guard counts the same text with o200k and its own factors, and the gap between the two (Qwen3 splits
 * the ledger's numbers digit by digit) is part of what the matrix measures.
 */
async function sized(label: string, tokens: number, salt = 0): Promise<string> {
  const probe = ledger(label, 17 * 50, salt)
  const perLine = (await COUNTER.countTokens(chat(probe))) / 50
  const first = Math.round((tokens / perLine) * 17)
  // Later lines carry longer numbers, which Qwen3 splits digit by digit: one correction lands within
  // a fraction of a percent.
  const counted = await COUNTER.countTokens(chat(ledger(label, first, salt)))
  return ledger(label, Math.round((first * tokens) / counted), salt)
}

function guardFor(
  clock: VirtualClock,
  profile: ModelProfile,
  policy: GuardPolicy = 'verified',
): Guard {
  return new Guard(
    {
      secret: BENCH_SECRET,
      models: { [MODEL]: profile },
      hooks: { now: () => clock.now(), onVerdict: () => {} },
      // The default is left implicit, so the default policy is what is measured, not a copy of it.
      ...(policy === 'async' ? { stream: { release: policy } } : {}),
      ...(policy === 'observe' ? { observe: OBSERVE_ALL } : {}),
    },
    DEFAULT_PLUGINS,
  )
}

/** The stale-middle part: same scaled engine, the right ceiling (B's prompts are within the pool). */
const STALE_SETUP: StaleSetup = {
  sim: SIM,
  poolTokens: POOL,
  counter: COUNTER,
  guard: (clock, policy) => guardFor(clock, PROFILE, policy),
}

/** How a leak showed: A's whole marker, a piece of it (a quote cut short), or a canary. */
type LeakKind = 'marker' | 'markerPiece' | 'canary'

/** The shortest piece of A's marker that counts: B's texts never hold 6 of its characters in a row. */
const PIECE = 6

/**
 * Every piece of A's marker of {@link PIECE} characters that B's own marker does not hold: a quote of
 * A's ledger cut short (the simulator starts quotes a few characters into a line and clips them at 90)
 * or a stream ended mid-quote still shows one, where the whole marker may not.
 */
function markerPieces(marker: string, bMarker: string): string[] {
  const pieces = new Set<string>()
  for (let i = 0; i + PIECE <= marker.length; i++) {
    const piece = marker.slice(i, i + PIECE)
    if (!bMarker.includes(piece)) pieces.add(piece)
  }
  return [...pieces]
}

/**
 * Whether any of A's data reached the client, and how it showed: A's marker, or a piece of it in the
 * texts received (not in the raw SSE, whose ids are random), or any canary (B's own is always cut, so
 * any is another request's). Bytes delivered before a stream ended with an error count.
 */
function leakOf(d: Delivered, marker: string, bMarker: string): LeakKind | undefined {
  const canary = new RegExp(CANARY_PATTERN.source, 'i')
  const texts = receivedTexts(d)
  const raw = [d.body, ...texts]
  if (raw.some((t) => t.includes(marker))) return 'marker'
  if (raw.some((t) => canary.test(t))) return 'canary'
  const received = d.stream ? texts.slice(0, 1) : texts
  const pieces = markerPieces(marker, bMarker)
  if (received.some((t) => pieces.some((p) => t.includes(p)))) return 'markerPiece'
  return undefined
}

async function classify(
  guard: Guard | undefined,
  d: Delivered,
  marker: string,
  bMarker: string,
  engine: SimEngine,
): Promise<Outcome> {
  const leak = leakOf(d, marker, bMarker)
  const simOutcome = engine.stats().recent.at(-1)?.outcome ?? 'none'
  let delivery: Delivery = d.status === 200 && !d.error && !d.failure ? 'released' : 'other_error'
  let reasons: string[] = []
  if (d.error) {
    const code = d.error.code
    delivery =
      code === 'response_quarantined'
        ? 'quarantined'
        : code === 'context_length_exceeded'
          ? 'refused'
          : code === 'upstream_error'
            ? 'upstream_error'
            : 'other_error'
    if (code === 'context_length_exceeded') reasons = ['ceiling']
    if (d.error.incidentId && guard) {
      const record = await guard.quarantine.get(d.error.incidentId)
      reasons = record?.reasons ?? ['(no record)']
    }
  } else if (d.status !== 200) {
    delivery = 'upstream_error'
  }
  // Released under observe: the incident that says what enforce would have withheld, if any.
  let observed = false
  if (delivery === 'released' && guard) {
    const [record] = await guard.quarantine.list({ tenant: 'tenant-b', observed: true })
    if (record) {
      observed = true
      reasons = record.reasons
    }
  }
  return {
    delivery,
    leaked: leak !== undefined,
    observed,
    ...(leak ? { leak } : {}),
    endedInStream:
      d.stream && d.status === 200 && (d.error !== undefined || d.failure !== undefined),
    reasons,
    simOutcome,
    attempts: d.attempts,
  }
}

/** One sample: the victim's documents in the pool, then tenant B's request, on a fresh engine. */
async function sample(
  mode: SimMode,
  size: number,
  stream: boolean,
  column: Column,
  policy: CellPolicy,
  seed: number,
): Promise<Outcome & { victimGuarded: boolean }> {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...SIM, mode: 'fixed', seed }, { clock })
  const upstream = engine.binding('worker')
  const guard =
    column === 'unguarded'
      ? undefined
      : guardFor(clock, CONFIGS[column], policy === 'n/a' ? 'verified' : policy)
  const rand = rng(seed * 7919 + 17)
  const marker = `ACCT-A-${seed}-${Math.floor(rand() * 1e9).toString(36)}`
  // Half the victims use this guard too (their canaries can then be recognised in a leak), half do
  // not (another customer of the same model): only the content and timing signals remain.
  const victimGuarded = seed % 2 === 0 && guard !== undefined
  const victim = victimGuarded && guard ? guard.runner(upstream, 'tenant-a') : upstream
  for (let doc = 0; doc < 2; doc++) {
    const d = await deliver(victim, chat(await sized(marker, POOL * VICTIM_SHARE, doc * 10_000)))
    if (d.status !== 200) {
      throw new Error(
        `victim request failed (${mode}, seed ${seed}): ${d.error?.code} ${d.error?.message}`,
      )
    }
  }
  engine.configure({ mode })
  const runner = guard ? guard.runner(upstream, 'tenant-b') : upstream
  const bMarker = `ACCT-B-${seed}`
  const d = await deliver(
    runner,
    chat(await sized(bMarker, POOL * size), stream ? { stream: true } : {}),
  )
  return { ...(await classify(guard, d, marker, bMarker, engine)), victimGuarded }
}

function emptyCell(
  mode: SimMode,
  size: number,
  stream: boolean,
  column: Column,
  policy: CellPolicy,
): CellCounts {
  return {
    mode,
    size,
    stream,
    policy,
    column,
    samples: 0,
    leaked: 0,
    leakedThenEnded: 0,
    leakedCompleted: 0,
    leakKinds: {},
    endedInStream: 0,
    observed: 0,
    leakedObserved: 0,
    delivery: { released: 0, quarantined: 0, refused: 0, upstream_error: 0, other_error: 0 },
    reasons: {},
    simOutcomes: {},
    retried: 0,
    victimGuarded: 0,
  }
}

/** One table row: a mode, size and stream-or-not under one policy; streams share the unguarded cell. */
interface Row {
  policy: CellPolicy
  unguarded: CellCounts
  right: CellCounts
  wrong: CellCounts
}

function count(cell: CellCounts, o: Outcome & { victimGuarded: boolean }): void {
  cell.samples++
  if (o.leaked) {
    cell.leaked++
    if (o.endedInStream) cell.leakedThenEnded++
    else cell.leakedCompleted++
    if (o.leak) cell.leakKinds[o.leak] = (cell.leakKinds[o.leak] ?? 0) + 1
    if (o.observed) cell.leakedObserved++
  }
  if (o.endedInStream) cell.endedInStream++
  if (o.observed) cell.observed++
  cell.delivery[o.delivery]++
  for (const r of o.reasons) cell.reasons[r] = (cell.reasons[r] ?? 0) + 1
  cell.simOutcomes[o.simOutcome] = (cell.simOutcomes[o.simOutcome] ?? 0) + 1
  if (o.attempts > 1) cell.retried++
  if (o.victimGuarded) cell.victimGuarded++
}

async function fill(cell: CellCounts, samples: number): Promise<CellCounts> {
  const { mode, size, stream, column, policy } = cell
  for (let i = 0; i < samples; i++) {
    // Different seeds per cell and sample; the same seeds across the columns and policies.
    const seed = 1 + i + 1000 * (MODES.indexOf(mode) * 10 + SIZES.indexOf(size))
    const started = performance.now()
    const o = await sample(mode, size, stream, column, policy, seed)
    const took = performance.now() - started
    if (took > 2_000)
      console.log(
        `    slow sample: ${mode} ${size} ${stream} ${column} ${policy} seed ${seed} ${Math.round(took)} ms`,
      )
    count(cell, o)
  }
  return cell
}

/**
 * Every mode × size × whole or streamed × column. Whole answers run once (the release policy does
 * not apply to them); streams run the guarded columns under each policy, against one unguarded cell.
 */
async function matrix(samples: number): Promise<Row[]> {
  const rows: Row[] = []
  for (const mode of MODES) {
    for (const size of SIZES) {
      for (const stream of [false, true]) {
        const unguarded = await fill(emptyCell(mode, size, stream, 'unguarded', 'n/a'), samples)
        const policies: CellPolicy[] = stream ? [...POLICIES, 'observe'] : ['n/a', 'observe']
        for (const policy of policies) {
          const right = await fill(emptyCell(mode, size, stream, 'right', policy), samples)
          const wrong = await fill(emptyCell(mode, size, stream, 'wrong', policy), samples)
          rows.push({ policy, unguarded, right, wrong })
          const u = unguarded
          console.log(
            `  ${mode.padEnd(13)} ${size.toFixed(2)}× ${stream ? 'stream' : 'whole '} ${policy.padEnd(8)}  unguarded leak ${u.leaked}/${u.samples} (${topCounts(u.simOutcomes)})  ` +
              `right: leak ${right.leaked}, ${summary(right)}  wrong: leak ${wrong.leaked}, ${summary(wrong)}`,
          )
        }
      }
    }
  }
  return rows
}

/** Every cell once (a stream's unguarded cell serves both policies' rows). */
function cellsOf(rows: Row[]): CellCounts[] {
  const cells = new Set<CellCounts>()
  for (const r of rows) for (const c of [r.unguarded, r.right, r.wrong]) cells.add(c)
  return [...cells]
}

function summary(c: CellCounts): string {
  const parts: string[] = []
  for (const [k, v] of Object.entries(c.delivery)) if (v > 0) parts.push(`${k} ${v}`)
  if (c.endedInStream) parts.push(`ended in-stream ${c.endedInStream}`)
  const reasons = topCounts(c.reasons)
  return `${parts.join(', ')}${reasons ? ` [${reasons}]` : ''}`
}

interface Healthy {
  /** The guard's `streamRelease` (whole answers are unaffected by it). */
  policy: ReleasePolicy
  requests: number
  streams: number
  released: number
  quarantined: number
  /** Quarantines of streams. */
  streamsQuarantined: number
  /** Streams that began and were then ended by an error (a quarantine after some bytes left). */
  endedInStream: number
  refused: number
  errors: number
  retried: number
  prefixHitsOwn: number
  prefixHitsShared: number
  cachedTokenRequests: number
  reasons: Record<string, number>
  falseQuarantineRate: number
  leaked: number
  /** Every healthy request that was withheld, with what explains it. */
  quarantines: {
    session: number
    request: number
    tenant: string
    stream: boolean
    prefix: 'own' | 'shared' | 'fresh'
    promptTokens: number
    cachedTokens: number
    reasons: string[]
  }[]
}

/** Healthy traffic has no victim: a marker no text holds, whose every piece is its own B marker. */
const NO_MARKER = '\u0000no-marker'

/**
 * Healthy traffic: `fixed` engine, every prompt within the real pool, the model ignoring the echo
 * directive 2% of the time, and repeated long prefixes — a tenant's own documents and a handbook
 * every tenant sends — that the simulator serves from its prefix cache (one account, as one Workers AI
 * account serves every tenant of a Worker). Sessions of 100 requests share an engine and a guard, so
 * the pool churns, the cache warms, and the guard's learned timing baseline has history. The same
 * sessions run under each release policy.
 */
async function healthy(total: number, policy: ReleasePolicy): Promise<Healthy> {
  const out: Healthy = {
    policy,
    requests: 0,
    streams: 0,
    released: 0,
    quarantined: 0,
    streamsQuarantined: 0,
    endedInStream: 0,
    refused: 0,
    errors: 0,
    retried: 0,
    prefixHitsOwn: 0,
    prefixHitsShared: 0,
    cachedTokenRequests: 0,
    reasons: {},
    falseQuarantineRate: 0,
    leaked: 0,
    quarantines: [],
  }
  const tenants = ['t1', 't2', 't3', 't4']
  const handbook = await sized('HANDBOOK', POOL * 0.45)
  for (let session = 0; out.requests < total; session++) {
    const clock = new VirtualClock()
    const engine = new SimEngine(
      { ...SIM, mode: 'fixed', seed: 50_000 + session, echoIgnoreRate: 0.02 },
      { clock },
    )
    const guard = guardFor(clock, PROFILE, policy)
    const upstream = engine.binding('worker')
    const rand = rng(90_000 + session)
    const docs = new Map<string, string[]>()
    for (let i = 0; i < 100 && out.requests < total; i++) {
      const tenant = tenants[Math.floor(rand() * tenants.length)]!
      const own = docs.get(tenant) ?? []
      const pick = rand()
      let text: string
      let prefix: 'own' | 'shared' | 'fresh' = 'fresh'
      if (pick < 0.3 && own.length > 0) {
        text = own[Math.floor(rand() * own.length)]!
        out.prefixHitsOwn++
        prefix = 'own'
      } else if (pick < 0.5) {
        text = handbook
        out.prefixHitsShared++
        prefix = 'shared'
      } else {
        text = await sized(`DOC-${tenant}-${session}-${i}`, POOL * (0.02 + rand() * 0.7))
        own.push(text)
        docs.set(tenant, own.slice(-4))
      }
      const stream = rand() < 0.5
      const question = `\n\nQuestion ${i} from ${tenant}: what does the last entry say?`
      const d = await deliver(
        guard.runner(upstream, tenant),
        chat(text + question, stream ? { stream: true } : {}),
      )
      // No other tenant's marker to look for: only canaries count as leaks here.
      const o = await classify(guard, d, NO_MARKER, NO_MARKER, engine)
      out.requests++
      if (stream) out.streams++
      if (o.endedInStream) out.endedInStream++
      if ((engine.stats().recent.at(-1)?.cachedTokens ?? 0) > 0) out.cachedTokenRequests++
      if (o.attempts > 1) out.retried++
      if (o.leaked) out.leaked++
      if (o.delivery === 'released') out.released++
      else if (o.delivery === 'quarantined') {
        out.quarantined++
        if (stream) out.streamsQuarantined++
        const rec = engine.stats().recent.at(-1)
        out.quarantines.push({
          session,
          request: i,
          tenant,
          stream,
          prefix,
          promptTokens: rec?.promptTokens ?? 0,
          cachedTokens: rec?.cachedTokens ?? 0,
          reasons: o.reasons,
        })
      } else if (o.delivery === 'refused') out.refused++
      else out.errors++
      for (const r of o.reasons) out.reasons[r] = (out.reasons[r] ?? 0) + 1
    }
  }
  out.falseQuarantineRate = out.quarantined / out.requests
  console.log(
    `  healthy (${policy}): ${out.requests} requests (${out.streams} streams, ${out.cachedTokenRequests} served partly from the prefix cache), ` +
      `${out.quarantined} quarantined (${(out.falseQuarantineRate * 100).toFixed(2)}%; ${out.streamsQuarantined} streams, ${out.endedInStream} ended in-stream), ${out.refused} refused, ${out.errors} errors, ` +
      `${out.retried} released after an echo retry${out.quarantined ? ` [${topCounts(out.reasons)}]` : ''}`,
  )
  for (const q of out.quarantines) console.log(`    withheld: ${JSON.stringify(q)}`)
  return out
}

const pct = (n: number, of: number) =>
  of === 0 ? '—' : `${((n / of) * 100).toFixed(n === 0 || n === of ? 0 : 1)}%`

function incidentClass(u: CellCounts): boolean {
  return ['placeholder', 'truncated', 'stale'].some((o) => (u.simOutcomes[o] ?? 0) > 0)
}

function guardedCell(c: CellCounts): string {
  const parts: string[] = [`leak ${pct(c.leaked, c.samples)}`]
  if (c.leaked && c.policy === 'async')
    parts[0] += ` (${c.leakedThenEnded} ended in-stream, ${c.leakedCompleted} completed)`
  const d = c.delivery
  if (d.released) parts.push(`released ${d.released}`)
  if (c.observed) parts.push(`observed ${c.observed}`)
  if (d.quarantined)
    parts.push(
      `quarantined ${d.quarantined}${c.policy === 'async' && c.endedInStream ? ` (${c.endedInStream} in-stream)` : ''}`,
    )
  if (d.refused) parts.push(`refused ${d.refused}`)
  if (d.upstream_error + d.other_error) parts.push(`error ${d.upstream_error + d.other_error}`)
  return parts.join(', ')
}

function reasonsOf(c: CellCounts): string {
  return Object.entries(c.reasons)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k.replace(/_/g, '\\_')} ${v}`)
    .join(', ')
}

/** Leak escapes in incident-class cells, over some rows' guarded cells. */
interface Escapes {
  escapes: number
  requests: number
  thenEnded: number
  completed: number
  /** Escapes recorded as an observed incident (observe rows; the rest left no record). */
  observed: number
  kinds: Partial<Record<LeakKind, number>>
  /** The cells that let something through: `mode size× stream policy column`. */
  cells: string[]
}

function escapesOf(rows: Row[]): Escapes {
  const out: Escapes = {
    escapes: 0,
    requests: 0,
    thenEnded: 0,
    completed: 0,
    observed: 0,
    kinds: {},
    cells: [],
  }
  for (const row of rows) {
    if (!incidentClass(row.unguarded)) continue
    for (const c of [row.right, row.wrong]) {
      out.requests += c.samples
      out.escapes += c.leaked
      out.thenEnded += c.leakedThenEnded
      out.completed += c.leakedCompleted
      out.observed += c.leakedObserved
      for (const [k, v] of Object.entries(c.leakKinds))
        out.kinds[k as LeakKind] = (out.kinds[k as LeakKind] ?? 0) + v
      if (c.leaked)
        out.cells.push(
          `${c.mode} ${c.size}× ${c.stream ? 'stream' : 'whole'} ${c.policy} ${c.column}: ${c.leaked}`,
        )
    }
  }
  return out
}

/** The rows of the default policy: whole answers (no policy applies) and `verified` streams. */
const defaultRows = (rows: Row[]) =>
  rows.filter((r) => r.policy === 'n/a' || r.policy === 'verified')

/** The observe rows: whole and streamed, every judgement's check observed. */
const observeRows = (rows: Row[]) => rows.filter((r) => r.policy === 'observe')

function rowLine(row: Row): string {
  const { unguarded: u, right: r, wrong: w } = row
  const incident = incidentClass(u)
  return `| ${u.mode} | ${u.size}× | ${u.stream ? 'yes' : 'no'} | ${topCounts(u.simOutcomes)}${incident ? ' ⚠' : ''} | ${pct(u.leaked, u.samples)} | ${guardedCell(r)} | ${guardedCell(w)} | ${[reasonsOf(r), reasonsOf(w)].filter(Boolean).join(' / ') || '—'} |`
}

function healthyLine(h: Healthy): string {
  const streamed =
    h.policy === 'async'
      ? ` (${h.streamsQuarantined} of ${h.streams} streams, ${h.endedInStream} of them ended in-stream after bytes left)`
      : ''
  return (
    `\`${h.policy}\`: **${h.quarantined} of ${h.requests} quarantined (${(h.falseQuarantineRate * 100).toFixed(2)}%, target < 0.1%)**` +
    `${streamed}${h.quarantined ? ` — ${topCounts(h.reasons).replace(/_/g, '\\_')}` : ''}; ` +
    `${h.refused} refused by the ceiling, ${h.errors} errors, ${h.retried} released after one echo retry, ${h.leaked} with a canary.`
  )
}

/** How the leaks showed, in words: `a piece of A's marker 12, A's whole marker 3`. */
const LEAK_WORDS: Record<LeakKind, string> = {
  marker: "A's whole marker",
  markerPiece: "only a piece of A's marker",
  canary: 'a canary',
}

const kindsText = (kinds: Partial<Record<LeakKind, number>>) =>
  Object.entries(kinds)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${LEAK_WORDS[k as LeakKind]} ${v}`)
    .join(', ')

function table(rows: Row[], hs: Healthy[], samples: number, quick: boolean): string {
  const m = machineInfo()
  const byDefault = escapesOf(defaultRows(rows))
  const asyncRows = rows.filter((r) => r.policy === 'async')
  const early = escapesOf(asyncRows)
  const observed = escapesOf(observeRows(rows))
  const h = hs[0]!
  return [
    `Scaled-down incident: real pool ${POOL.toLocaleString('en-US')} tokens, advertised window ${WINDOW.toLocaleString('en-US')}, ` +
      `simulated prefill 20,000 tok/s ± 10%, guard bound 40,000 tok/s, 10% drift, 512-token output reserve. ` +
      `Per sample: a fresh engine; tenant A sends two documents (${VICTIM_SHARE}× pool each, a unique marker on every line; ` +
      'through the guard for even seeds, directly for odd seeds) in `fixed` mode, then the mode is switched and tenant B sends ' +
      `a prompt of the given size × the real pool, counted in the simulated model's tokens (Qwen3; the guard counts with o200k). ${samples} seeded samples per cell; one virtual clock shared by engine and guard; ` +
      `Node ${m.node}${quick ? ', quick run' : ''}. **Leak** = B's client received any of A's data: A's marker, a piece of it ` +
      `(≥ ${PIECE} characters B's own marker does not hold: a quote cut short), or any canary — bytes delivered before a stream ` +
      'was ended by an error count. ⚠ = incident-class cell (the unguarded engine served a placeholder, truncated or ' +
      `stale answer). Right ceiling: \`kvPoolTokens\` = real pool; wrong: = advertised window. ` +
      'Streams run under each release policy (`streamRelease`, same seeds); whole answers run once, since the policy does not ' +
      'apply to them, and are listed with the default.',
    '',
    `**Default policy (\`verified\`: nothing of a stream leaves before the proof)** — leak escape in incident-class cells: ` +
      `**${byDefault.escapes}** of ${byDefault.requests} guarded requests (target 0; the suite fails if it is not).`,
    '',
    '| mode | B prompt × pool | stream | engine did (unguarded) | unguarded leak | guarded, right ceiling | guarded, wrong ceiling | caught by (right / wrong) |',
    '|---|---:|---|---|---:|---|---|---|',
    ...defaultRows(rows).map(rowLine),
    '',
    `**Asynchronous policy (\`async\`: a stream leaves once its first token is timed and the foreign-canary scan passed; ` +
      `the proof is owed, a missing echo or later evidence ends the stream in-stream)**, streams only, the same seeds — ` +
      `leak escape in incident-class cells: **${early.escapes}** of ${early.requests} guarded streams` +
      (early.escapes
        ? `: ${early.thenEnded} ended by the guard in-stream after the bytes had left, ${early.completed} completed` +
          ` (shown by ${kindsText(early.kinds)})`
        : '') +
      '. The unguarded columns are the same cells as above.',
    '',
    '| mode | B prompt × pool | stream | engine did (unguarded) | unguarded leak | guarded, right ceiling | guarded, wrong ceiling | caught by (right / wrong) |',
    '|---|---:|---|---|---:|---|---|---|',
    ...asyncRows.map(rowLine),
    '',
    `**Observe mode (\`observe: { content, timing, echo }\`: a verdict of those checks alone releases the answer and ` +
      `records the incident enforce would have made; proof — another request's canary — is withheld as ever)**, ` +
      `whole and streamed, the same seeds — released in incident-class cells that leak: **${observed.escapes}** of ` +
      `${observed.requests} guarded requests, **${observed.observed}** of them recorded as observed incidents` +
      (observed.escapes ? ` (shown by ${kindsText(observed.kinds)})` : '') +
      '. “observed N”: answers released with such a record (leaked or not); “quarantined”: withheld on proof, or a ' +
      'reason beside it no mode observes.',
    '',
    '| mode | B prompt × pool | stream | engine did (unguarded) | unguarded leak | guarded, right ceiling | guarded, wrong ceiling | caught by (right / wrong) |',
    '|---|---:|---|---|---:|---|---|---|',
    ...observeRows(rows).map(rowLine),
    '',
    `Healthy traffic (\`fixed\`, every prompt within the real pool, echo ignored 2% of the time, ${h.prefixHitsOwn} repeats of a ` +
      `tenant's own document and ${h.prefixHitsShared} of a handbook every tenant sends — ${h.cachedTokenRequests} requests served partly ` +
      `from the simulator's prefix cache; ${h.streams} of ${h.requests} streamed; the same sessions under each policy): ` +
      hs.map(healthyLine).join(' '),
  ].join('\n')
}

/**
 * The default policy's promises, checked on every run: nothing of another tenant's in any
 * incident-class cell, and no foreign-content escape of a run the check guarantees to catch.
 */
function failures(rows: Row[], stale: StaleCell[]): string[] {
  const out: string[] = []
  const byDefault = escapesOf(defaultRows(rows))
  if (byDefault.escapes > 0)
    out.push(
      `default policy: ${byDefault.escapes} leak escapes in incident-class cells (${byDefault.cells.join('; ')})`,
    )
  out.push(...staleFailures(stale))
  // Observe releases judgements, never proof, and never without a record.
  const observed = escapesOf(observeRows(rows))
  if (observed.kinds.canary)
    out.push(`observe: ${observed.kinds.canary} answers released with a canary (proof is enforced)`)
  if (observed.escapes > observed.observed)
    out.push(`observe: ${observed.escapes - observed.observed} leaks released without an incident`)
  return out
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const samples = quick ? 4 : 30
  const rows = await matrix(samples)
  const stale = await staleMatrix(samples, STALE_SETUP)
  const hs: Healthy[] = []
  for (const policy of POLICIES) hs.push(await healthy(quick ? 300 : 3_000, policy))
  const failed = failures(rows, stale)
  const asyncEscapes = escapesOf(rows.filter((r) => r.policy === 'async'))
  // A quick run's figures go to their own file, never over the full run's.
  const path = await writeResult(quick ? 'detection-quick' : 'detection', {
    suite: 'detection',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: {
      scale: 'incident scaled down: pool 16,384 / window 24,576 (incident 681,280 / 1,048,576)',
      simulator: SIM,
      profiles: CONFIGS,
      sizes: SIZES,
      policies: POLICIES,
      observe: `rows with policy “observe”: the default release with observe ${JSON.stringify(OBSERVE_ALL)}`,
      victim: `two documents of ${VICTIM_SHARE}× pool, guarded for even seeds, direct for odd`,
      samplesPerCell: samples,
    },
    note:
      'leaked counts samples whose client received any of the victim’s data: its marker, a piece of ' +
      `${PIECE}+ characters of it that B’s marker does not hold, or any canary — including bytes delivered ` +
      'before a stream was ended by an error (leakedThenEnded: the guard ended it in-stream afterwards; ' +
      'leakedCompleted: it completed). policy is the guard’s streamRelease for guarded streams; “n/a” for ' +
      'whole answers (run once with the default guard: the policy does not apply) and unguarded cells ' +
      '(one per stream row, shared by both policies). reasons are the quarantine store’s, plus “ceiling” ' +
      'for context_length_exceeded refusals.',
    escapes: {
      note: 'incident-class cells only; default = whole answers and verified streams',
      default: escapesOf(defaultRows(rows)),
      verifiedStreams: escapesOf(rows.filter((r) => r.policy === 'verified')),
      async: asyncEscapes,
      observe: escapesOf(observeRows(rows)),
    },
    failures: failed,
    cells: cellsOf(rows),
    staleMiddle: {
      note:
        'stale-middle cells: A sends a private document (through the guard as tenant-a, or from account ' +
        '“other” straight to the engine), then B’s stale stretch reads A’s freed pages. answerRuns are ' +
        'runs of A’s document in the engine’s answer (units); an escape is a run of ≥ 8 units of it, or ' +
        'a canary, received by B’s client (bytes delivered before an in-stream error count). policy as ' +
        'above; the async rows have no unguarded cell of their own (the verified stream row’s serves).',
      leakRun: LEAK_RUN,
      minimumSpan: MIN_SPAN,
      fractions: STALE_FRACTIONS,
      quoteChars: QUOTE_CHARS,
      cells: stale,
    },
    healthy: hs[0],
    healthyAsync: hs[1],
  })
  if (failed.length > 0) {
    // Loud, and before the tables: a broken promise fails the run, never passes as figures.
    throw new Error(
      `detection: the default policy let another tenant's data through:\n  ${failed.join('\n  ')}\n(figures in ${path})`,
    )
  }
  console.log(`${table(rows, hs, samples, quick)}\n\n${staleTable(stale, samples)}`)
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'detection', run }
export default suite
