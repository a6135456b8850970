/**
 * @module Benchmark: the detection matrix. Every simulator mode × stream or not × prompt sizes around the
 * real pool × ceiling configured right or wrong, many seeded requests each: does another tenant's data
 * reach the client (leak escape), what caught it, and how often healthy traffic is withheld (false
 * quarantine). In-process on Node 22, one virtual clock shared by engine and guard, so timing evidence
 * is the simulated prefill to the millisecond and the run takes no wall time waiting.
 *
 * The incident is scaled down (pool 16,384 tokens, window 24,576 — the incident's 681,280 / 1,048,576
 * is 1 : 1.54) so thousands of requests run in a minute; every ratio the guards reason about is kept.
 */
import { VirtualClock } from '../../sim/clock'
import type { SimMode } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { CANARY_PATTERN, type ModelProfile } from '../../src'
import { Guard } from '../../src/guard'
import {
  machineInfo,
  reproduce,
  type Suite,
  type SuiteOptions,
  topCounts,
  updateReadmeTable,
  writeResult,
} from '../lib'
import { deliver, sseTexts } from '../support/deliver'
import { BENCH_SECRET, chat, ledger, MODEL } from '../support/prompts'
import {
  LEAK_RUN,
  MIN_SPAN,
  QUOTE_CHARS,
  STALE_FRACTIONS,
  type StaleSetup,
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
  cacheIsolation: 'off',
}
const CONFIGS = {
  right: PROFILE,
  wrong: { ...PROFILE, kvPoolTokens: WINDOW },
} as const
type Column = 'unguarded' | keyof typeof CONFIGS
const MODES: SimMode[] = ['fixed', 'pd-abort-leak', 'truncate', 'stale-pages']
const SIZES = [0.5, 0.95, 1.05, 1.25]
/** Each of the victim's two documents, as a share of the pool: together they fill most of it. */
const VICTIM_SHARE = 0.42

type Delivery = 'released' | 'quarantined' | 'refused' | 'upstream_error' | 'other_error'

interface Outcome {
  delivery: Delivery
  /** Another tenant's marker or any canary reached the client. */
  leaked: boolean
  reasons: string[]
  /** The simulator's outcome for the (last) attempt. */
  simOutcome: string
  attempts: number
}

interface CellCounts {
  mode: SimMode
  size: number
  stream: boolean
  column: Column
  samples: number
  leaked: number
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

function guardFor(clock: VirtualClock, profile: ModelProfile): Guard {
  return new Guard({
    secret: BENCH_SECRET,
    models: { [MODEL]: profile },
    now: () => clock.now(),
    onVerdict: () => {},
  })
}

/** The stale-middle part: same scaled engine, the right ceiling (B's prompts are within the pool). */
const STALE_SETUP: StaleSetup = {
  sim: SIM,
  poolTokens: POOL,
  counter: COUNTER,
  guard: (clock) => guardFor(clock, PROFILE),
}

function leakedIn(body: string, marker: string): boolean {
  const canary = new RegExp(CANARY_PATTERN.source, 'i')
  if (body.includes(marker) || canary.test(body)) return true
  const joined = sseTexts(body)
  return joined.includes(marker) || canary.test(joined)
}

async function classify(
  guard: Guard | undefined,
  d: Awaited<ReturnType<typeof deliver>>,
  marker: string,
  engine: SimEngine,
): Promise<Outcome> {
  const leaked = leakedIn(d.body, marker)
  const simOutcome = engine.stats().recent.at(-1)?.outcome ?? 'none'
  let delivery: Delivery = d.status === 200 && !d.error ? 'released' : 'other_error'
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
  return { delivery, leaked, reasons, simOutcome, attempts: d.attempts }
}

/** One sample: the victim's documents in the pool, then tenant B's request, on a fresh engine. */
async function sample(
  mode: SimMode,
  size: number,
  stream: boolean,
  column: Column,
  seed: number,
): Promise<Outcome & { victimGuarded: boolean }> {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...SIM, mode: 'fixed', seed }, { clock })
  const upstream = engine.binding('worker')
  const guard = column === 'unguarded' ? undefined : guardFor(clock, CONFIGS[column])
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
  return { ...(await classify(guard, d, marker, engine)), victimGuarded }
}

function emptyCell(mode: SimMode, size: number, stream: boolean, column: Column): CellCounts {
  return {
    mode,
    size,
    stream,
    column,
    samples: 0,
    leaked: 0,
    delivery: { released: 0, quarantined: 0, refused: 0, upstream_error: 0, other_error: 0 },
    reasons: {},
    simOutcomes: {},
    retried: 0,
    victimGuarded: 0,
  }
}

async function matrix(samples: number): Promise<CellCounts[]> {
  const cells: CellCounts[] = []
  for (const mode of MODES) {
    for (const size of SIZES) {
      for (const stream of [false, true]) {
        for (const column of ['unguarded', 'right', 'wrong'] as Column[]) {
          const cell = emptyCell(mode, size, stream, column)
          for (let i = 0; i < samples; i++) {
            // Different seeds per cell and sample; the same seeds across the three columns.
            const seed = 1 + i + 1000 * (MODES.indexOf(mode) * 10 + SIZES.indexOf(size))
            const started = performance.now()
            const o = await sample(mode, size, stream, column, seed)
            const took = performance.now() - started
            if (took > 2_000)
              console.log(
                `    slow sample: ${mode} ${size} ${stream} ${column} seed ${seed} ${Math.round(took)} ms`,
              )
            cell.samples++
            if (o.delivery === 'released' && o.leaked) cell.leaked++
            else if (o.leaked) cell.leaked++ // bytes released before a mid-stream quarantine count too
            cell.delivery[o.delivery]++
            for (const r of o.reasons) cell.reasons[r] = (cell.reasons[r] ?? 0) + 1
            cell.simOutcomes[o.simOutcome] = (cell.simOutcomes[o.simOutcome] ?? 0) + 1
            if (o.attempts > 1) cell.retried++
            if (o.victimGuarded) cell.victimGuarded++
          }
          cells.push(cell)
        }
        const [u, r, w] = cells.slice(-3) as [CellCounts, CellCounts, CellCounts]
        console.log(
          `  ${mode.padEnd(13)} ${size.toFixed(2)}× ${stream ? 'stream' : 'whole '}  unguarded leak ${u.leaked}/${u.samples} (${topCounts(u.simOutcomes)})  ` +
            `right: leak ${r.leaked}, ${summary(r)}  wrong: leak ${w.leaked}, ${summary(w)}`,
        )
      }
    }
  }
  return cells
}

function summary(c: CellCounts): string {
  const parts: string[] = []
  for (const [k, v] of Object.entries(c.delivery)) if (v > 0) parts.push(`${k} ${v}`)
  const reasons = topCounts(c.reasons)
  return `${parts.join(', ')}${reasons ? ` [${reasons}]` : ''}`
}

interface Healthy {
  requests: number
  streams: number
  released: number
  quarantined: number
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

/**
 * Healthy traffic: `fixed` engine, every prompt within the real pool, the model ignoring the echo
 * directive 2% of the time, and repeated long prefixes — a tenant's own documents and a handbook
 * every tenant sends — that the simulator serves from its prefix cache (one account, as one Workers AI
 * account serves every tenant of a Worker). Sessions of 100 requests share an engine and a guard, so
 * the pool churns, the cache warms, and the guard's learned timing baseline has history.
 */
async function healthy(total: number): Promise<Healthy> {
  const out: Healthy = {
    requests: 0,
    streams: 0,
    released: 0,
    quarantined: 0,
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
    const guard = guardFor(clock, PROFILE)
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
      const o = await classify(guard, d, '\u0000no-marker', engine)
      out.requests++
      if (stream) out.streams++
      if ((engine.stats().recent.at(-1)?.cachedTokens ?? 0) > 0) out.cachedTokenRequests++
      if (o.attempts > 1) out.retried++
      if (o.leaked) out.leaked++
      if (o.delivery === 'released') out.released++
      else if (o.delivery === 'quarantined') {
        out.quarantined++
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
    `  healthy: ${out.requests} requests (${out.streams} streams, ${out.cachedTokenRequests} served partly from the prefix cache), ` +
      `${out.quarantined} quarantined (${(out.falseQuarantineRate * 100).toFixed(2)}%), ${out.refused} refused, ${out.errors} errors, ` +
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
  const d = c.delivery
  if (d.released) parts.push(`released ${d.released}`)
  if (d.quarantined) parts.push(`quarantined ${d.quarantined}`)
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

function table(cells: CellCounts[], h: Healthy, samples: number, quick: boolean): string {
  const m = machineInfo()
  const rows: string[] = []
  let escapes = 0
  let incidentCells = 0
  for (let i = 0; i < cells.length; i += 3) {
    const [u, r, w] = cells.slice(i, i + 3) as [CellCounts, CellCounts, CellCounts]
    const incident = incidentClass(u)
    if (incident) {
      incidentCells++
      escapes += r.leaked + w.leaked
    }
    rows.push(
      `| ${u.mode} | ${u.size}× | ${u.stream ? 'yes' : 'no'} | ${topCounts(u.simOutcomes)}${incident ? ' ⚠' : ''} | ${pct(u.leaked, u.samples)} | ${guardedCell(r)} | ${guardedCell(w)} | ${[reasonsOf(r), reasonsOf(w)].filter(Boolean).join(' / ') || '—'} |`,
    )
  }
  return [
    `Scaled-down incident: real pool ${POOL.toLocaleString('en-US')} tokens, advertised window ${WINDOW.toLocaleString('en-US')}, ` +
      `simulated prefill 20,000 tok/s ± 10%, guard bound 40,000 tok/s, 10% drift, 512-token output reserve. ` +
      `Per sample: a fresh engine; tenant A sends two documents (${VICTIM_SHARE}× pool each, a unique marker on every line; ` +
      'through the guard for even seeds, directly for odd seeds) in `fixed` mode, then the mode is switched and tenant B sends ' +
      `a prompt of the given size × the real pool, counted in the simulated model's tokens (Qwen3; the guard counts with o200k). ${samples} seeded samples per cell; one virtual clock shared by engine and guard; ` +
      `Node ${m.node}${quick ? ', quick run' : ''}. **Leak** = B's client received A's marker or any canary (bytes released ` +
      'before a mid-stream quarantine count). ⚠ = incident-class cell (the unguarded engine served a placeholder, truncated or ' +
      `stale answer). Right ceiling: \`kvPoolTokens\` = real pool; wrong: = advertised window. ` +
      `Leak escape in incident-class cells: **${escapes}** of ${incidentCells * 2 * samples} guarded requests (target 0).`,
    '',
    '| mode | B prompt × pool | stream | engine did (unguarded) | unguarded leak | guarded, right ceiling | guarded, wrong ceiling | caught by (right / wrong) |',
    '|---|---:|---|---|---:|---|---|---|',
    ...rows,
    '',
    `Healthy traffic (\`fixed\`, every prompt within the real pool, echo ignored 2% of the time, ${h.prefixHitsOwn} repeats of a ` +
      `tenant's own document and ${h.prefixHitsShared} of a handbook every tenant sends — ${h.cachedTokenRequests} requests served partly ` +
      `from the simulator's prefix cache; half streamed): **${h.quarantined} of ${h.requests} quarantined ` +
      `(${(h.falseQuarantineRate * 100).toFixed(2)}%, target < 0.1%)**${h.quarantined ? ` — ${topCounts(h.reasons).replace(/_/g, '\\_')}` : ''}; ` +
      `${h.refused} refused by the ceiling, ${h.errors} errors, ${h.retried} released after one echo retry, ${h.leaked} with a marker or canary.`,
  ].join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const started = performance.now()
  const samples = quick ? 4 : 30
  const cells = await matrix(samples)
  const stale = await staleMatrix(samples, STALE_SETUP)
  const h = await healthy(quick ? 300 : 3_000)
  const path = await writeResult('detection', {
    suite: 'detection',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: {
      scale: 'incident scaled down: pool 16,384 / window 24,576 (incident 681,280 / 1,048,576)',
      simulator: SIM,
      profiles: CONFIGS,
      sizes: SIZES,
      victim: `two documents of ${VICTIM_SHARE}× pool, guarded for even seeds, direct for odd`,
      samplesPerCell: samples,
    },
    note:
      'leaked counts samples whose client received the victim marker or any canary (including bytes ' +
      'released before a mid-stream quarantine). reasons are the quarantine store’s, plus “ceiling” for ' +
      'context_length_exceeded refusals.',
    cells,
    staleMiddle: {
      note:
        'stale-middle cells: A sends a private document (through the guard as tenant-a, or from account ' +
        '“other” straight to the engine), then B’s stale stretch reads A’s freed pages. answerRuns are ' +
        'runs of A’s document in the engine’s answer (units); an escape is a run of ≥ 8 units of it, or ' +
        'a canary, received by B’s client.',
      leakRun: LEAK_RUN,
      minimumSpan: MIN_SPAN,
      fractions: STALE_FRACTIONS,
      quoteChars: QUOTE_CHARS,
      cells: stale,
    },
    healthy: h,
  })
  const updated = await updateReadmeTable(
    'detection',
    `${table(cells, h, samples, quick)}\n\n${staleTable(stale, samples)}\n\n${reproduce('detection', quick, started)}`,
  )
  console.log(`  wrote ${path}${updated ? ' and the README table' : ''}`)
}

const suite: Suite = { name: 'detection', run }
export default suite
