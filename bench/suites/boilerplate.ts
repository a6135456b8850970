/**
 * @module Benchmark: false quarantines of the foreign-content check (and every other check) on honest
 * traffic where tenants share boilerplate — the same licences, the same public READMEs, one app's
 * system prompt — beside private prose, in multi-turn conversations, through one guard. Any
 * quarantine here is false. A second part replays orders the simulator's quoting model cannot
 * produce: a model reciting a public text from memory to a tenant that did not send it.
 */
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import type { ModelProfile } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { Guard } from '../../src/core/guard'
import { DEFAULT_PLUGINS } from '../../src/default-plugins'
import { machineInfo, ROOT, type Suite, type SuiteOptions, writeResult } from '../lib'
import { type Kind, type Part, type Planned, TrafficPlan } from '../support/boilerplate-traffic'
import { contentOf, type Delivered, deliver, recordAnswers } from '../support/deliver'
import { BENCH_SECRET, chat, MODEL } from '../support/prompts'
import { LEAK_RUN } from '../support/stale-middle'
import {
  privateProse,
  RunMeter,
  type SharedText,
  sharedTexts,
  tenantMarker,
} from '../support/tenant-texts'
import { rng } from '../texts'

const POOL = 32_768
const WINDOW = 49_152
const SIM = {
  tokenizer: 'qwen3',
  poolTokens: POOL,
  contextWindow: WINDOW,
  prefillTokensPerSecond: 20_000,
  decodeTokensPerSecond: 2_000,
  jitter: 0.1,
  echoIgnoreRate: 0.02,
} as const
/** Scaled like the detection suite's; the guard's defaults for a Workers AI name (foreign content on). */
const PROFILE: ModelProfile = {
  contextWindow: WINDOW,
  kvPoolTokens: POOL,
  maxPrefillTokensPerSecond: 40_000,
  tokenizerDrift: 0.1,
  defaultOutputReserve: 512,
  echo: 'require',
  directive: 'reply-first',
  cacheIsolation: 'prefix',
}
const MAX_TOKENS = 512
/** Mean gap between requests (virtual): the run spans more than the fingerprints' one-hour ttl. */
const GAP_MS = 1_500

function guardFor(clock: VirtualClock): Guard {
  return new Guard(
    {
      secret: BENCH_SECRET,
      models: { [MODEL]: PROFILE },
      hooks: { now: () => clock.now(), onVerdict: () => {} },
    },
    DEFAULT_PLUGINS,
  )
}

type Delivery = 'released' | 'quarantined' | 'refused' | 'error'

function deliveryOf(d: Delivered): Delivery {
  if (!d.error) return d.status === 200 ? 'released' : 'error'
  if (d.error.code === 'response_quarantined') return 'quarantined'
  return d.error.code === 'context_length_exceeded' ? 'refused' : 'error'
}

/** One false quarantine, and the text that made it. */
interface Withheld {
  request: number
  tenant: string
  kind: Kind
  stream: boolean
  shared: string[]
  reasons: string[]
  sourceTenants: string[]
  figures: Record<string, unknown>
  /** The source tenant's sent text the answer shares most with: its label and the run (units). */
  cause: { source: string; label: string; run: number }[]
}

/** How answers quoted one shared text, by where the quoted text came from. */
interface SharedUse {
  firstSender: string
  firstAt: number | null
  /** The request at which a second tenant sent it (the guard then counts it as boilerplate). */
  secondAt: number | null
  sent: number
  /** Answers quoting ≥ LEAK_RUN units of it, by case; quarantines among them; the longest run. */
  quoted: Record<string, { answers: number; quarantined: number; longest: number }>
}

interface TrafficStats {
  requests: number
  streams: number
  tenants: number
  virtualMinutes: number
  released: number
  quarantined: number
  refused: number
  errors: number
  retried: number
  reasons: Record<string, number>
  byKind: Record<string, { requests: number; quarantined: number }>
  byShared: Record<string, { requests: number; quarantined: number }>
  shared: Record<string, SharedUse>
  withheld: Withheld[]
}

function bump(
  map: Record<string, { requests: number; quarantined: number }>,
  key: string,
  q: boolean,
) {
  const entry = map[key] ?? { requests: 0, quarantined: 0 }
  entry.requests++
  if (q) entry.quarantined++
  map[key] = entry
}

/** Texts each tenant sent (deduplicated), labelled: where a false quarantine's source text is found. */
class SentLog {
  private readonly byTenant = new Map<string, Map<string, string>>()

  add(tenant: string, parts: readonly Part[]): void {
    const known = this.byTenant.get(tenant) ?? new Map<string, string>()
    for (const p of parts) known.set(p.text, p.label)
    this.byTenant.set(tenant, known)
  }

  /** The text of `source` that `answer` shares the longest run with. */
  cause(source: string, answer: string): { source: string; label: string; run: number } {
    let best = { source, label: '(nothing sent)', run: 0 }
    for (const [text, label] of this.byTenant.get(source) ?? []) {
      const run = new RunMeter(text).longestRun(answer)
      if (run > best.run) best = { source, label, run }
    }
    return best
  }
}

/** Which case a quote of a shared text is: who else had sent it, and whether this prompt holds it. */
function quoteCase(inPrompt: boolean, others: number): string {
  if (!inPrompt) return 'not in this prompt (an assistant turn or a pasted answer)'
  if (others === 0) return 'in the prompt; no other tenant had sent it (its first sender)'
  if (others === 1) return 'in the prompt; one other tenant had sent it'
  return 'in the prompt; two or more others had sent it'
}

interface SharedTracker {
  meters: Map<string, RunMeter>
  senders: Map<string, Set<string>>
}

function trackShared(
  stats: TrafficStats,
  tracker: SharedTracker,
  planned: Planned,
  index: number,
  answer: string,
  quarantined: boolean,
): void {
  const tenant = planned.tenant.name
  for (const [name, meter] of tracker.meters) {
    const use = stats.shared[name]!
    const senders = tracker.senders.get(name) ?? new Set<string>()
    const inPrompt = planned.shared.includes(name)
    const others = [...senders].filter((s) => s !== tenant).length
    const run = meter.longestRun(answer)
    if (run >= LEAK_RUN) {
      const key = quoteCase(inPrompt, others)
      const entry = use.quoted[key] ?? { answers: 0, quarantined: 0, longest: 0 }
      entry.answers++
      entry.longest = Math.max(entry.longest, run)
      if (quarantined) entry.quarantined++
      use.quoted[key] = entry
    }
    if (!inPrompt) continue
    use.sent++
    use.firstAt ??= index
    if (others > 0 && !senders.has(tenant) && senders.size === 1) use.secondAt ??= index
    senders.add(tenant)
    tracker.senders.set(name, senders)
  }
}

function emptyStats(shared: SharedText[], plan: TrafficPlan, tenants: number): TrafficStats {
  const uses: Record<string, SharedUse> = {}
  for (const s of shared) {
    uses[s.name] = {
      firstSender: plan.firstSender(s.name),
      firstAt: null,
      secondAt: null,
      sent: 0,
      quoted: {},
    }
  }
  return {
    requests: 0,
    streams: 0,
    tenants,
    virtualMinutes: 0,
    released: 0,
    quarantined: 0,
    refused: 0,
    errors: 0,
    retried: 0,
    reasons: {},
    byKind: {},
    byShared: {},
    shared: uses,
    withheld: [],
  }
}

/**
 * The honest traffic: `total` requests of `tenants` tenants, one engine (`fixed`, prefix cache on)
 * and one guard for the whole run, requests one after another on a virtual clock.
 */
async function traffic(
  shared: SharedText[],
  total: number,
  tenants: number,
): Promise<TrafficStats> {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...SIM, mode: 'fixed', seed: 4_242 }, { clock })
  const guard = guardFor(clock)
  const plan = new TrafficPlan(shared, tenants, total, 77)
  const stats = emptyStats(shared, plan, tenants)
  const sent = new SentLog()
  const tracker: SharedTracker = {
    meters: new Map(shared.map((s) => [s.name, new RunMeter(s.text)])),
    senders: new Map(),
  }
  const gap = rng(5_151)
  const started = clock.now()
  for (let i = 0; i < total; i++) {
    clock.advance(-Math.log(1 - gap()) * GAP_MS)
    const planned = plan.next(i, clock.now())
    // Half the answers quote 240 characters: quotes of quotes (an assistant turn's quote of a shared text
    // the prompt no longer holds) then reach past the 22-unit span the check always catches.
    engine.configure({ quoteChars: gap() < 0.5 ? 90 : 240 })
    const rec = recordAnswers(engine.binding('gateway'))
    const inputs = { messages: planned.messages, max_tokens: MAX_TOKENS, stream: planned.stream }
    const d = await deliver(guard.runner(rec.runner, planned.tenant.name), inputs)
    const answer = (await rec.answers()).join('\n')
    const delivery = deliveryOf(d)
    const quarantined = delivery === 'quarantined'
    trackShared(stats, tracker, planned, i, answer, quarantined)
    sent.add(planned.tenant.name, planned.parts)
    await count(stats, guard, d, planned, i, answer, sent)
    plan.answered(planned, delivery === 'released' ? contentOf(d) : '', clock.now())
    if ((i + 1) % 500 === 0) {
      console.log(`    ${i + 1} requests, ${stats.quarantined} quarantined`)
    }
  }
  stats.virtualMinutes = Math.round((clock.now() - started) / 60_000)
  return stats
}

async function count(
  stats: TrafficStats,
  guard: Guard,
  d: Delivered,
  planned: Planned,
  request: number,
  answer: string,
  sent: SentLog,
): Promise<void> {
  const delivery = deliveryOf(d)
  const quarantined = delivery === 'quarantined'
  stats.requests++
  if (planned.stream) stats.streams++
  if (d.attempts > 1) stats.retried++
  if (delivery === 'released') stats.released++
  else if (quarantined) stats.quarantined++
  else if (delivery === 'refused') stats.refused++
  else stats.errors++
  bump(stats.byKind, planned.kind, quarantined)
  for (const name of planned.shared) bump(stats.byShared, name, quarantined)
  if (!quarantined || !d.error?.incidentId) return
  const record = await guard.quarantine.get(d.error.incidentId)
  const reasons = record?.reasons ?? ['(no record)']
  for (const r of reasons) stats.reasons[r] = (stats.reasons[r] ?? 0) + 1
  const sourceTenants = record?.sourceTenants ?? []
  const withheld: Withheld = {
    request,
    tenant: planned.tenant.name,
    kind: planned.kind,
    stream: planned.stream,
    shared: planned.shared,
    reasons,
    sourceTenants,
    figures: { ...(record?.figures ?? {}) },
    cause: sourceTenants.map((source) => sent.cause(source, answer)),
  }
  stats.withheld.push(withheld)
  console.log(`    withheld: ${JSON.stringify(withheld)}`)
}

/** One order of the recital scenario. */
interface Order {
  name: string
  /** Recited to a tenant before anyone sent the text (the guard may learn it as the model's words). */
  recitedBefore: boolean
  /** Tenants that send the text first, in order. */
  senders: string[]
  /** Who the model recites it to. */
  to: string
}

const ORDERS: Order[] = [
  { name: 'nobody had sent it', recitedBefore: false, senders: [], to: 'r' },
  {
    name: 'one tenant (its first sender) had sent it',
    recitedBefore: false,
    senders: ['f'],
    to: 'r',
  },
  { name: 'two tenants had sent it', recitedBefore: false, senders: ['f', 'g'], to: 'r' },
  { name: 'its only sender is recited it', recitedBefore: false, senders: ['f'], to: 'f' },
  {
    name: 'recited to another tenant first, then one sender',
    recitedBefore: true,
    senders: ['f'],
    to: 'r',
  },
]

/** The engine's answer with `recital` appended to its content (a model quoting a text it knows). */
function reciting(upstream: AiRunner, recital: () => string | undefined): AiRunner {
  return {
    run: async (model, inputs, options) => {
      const out = await upstream.run(model, inputs, options)
      const text = recital()
      const message = (out as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]
        ?.message
      if (text !== undefined && message && typeof message.content === 'string') {
        message.content += `\n\nFrom memory, the text reads:\n${text}`
      }
      return out
    },
  }
}

/** An excerpt of about 700 characters starting at a line of `text` picked by `seed`. */
function excerpt(text: string, seed: number): string {
  const lines = text.split('\n')
  const start = Math.floor(rng(seed)() * Math.max(1, lines.length - 8))
  return lines.slice(start).join('\n').slice(0, 700)
}

interface RecitalCell {
  order: string
  text: string
  samples: number
  released: number
  quarantined: number
  reasons: Record<string, number>
  /** Quarantines naming the text's sender as the source. */
  namedSender: number
}

async function recitalSample(
  s: SharedText,
  order: Order,
  seed: number,
): Promise<Delivered & { named: boolean; reasons: string[] }> {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...SIM, mode: 'fixed', seed, echoIgnoreRate: 0 }, { clock })
  const guard = guardFor(clock)
  let recite: string | undefined
  const upstream = reciting(engine.binding('gateway'), () => recite)
  const names = (who: string) => `${who}-${seed}`
  // Each tenant's own prose: distinct per tenant and per sample.
  const own = (who: string) => {
    const id = seed * 1_000 + who.charCodeAt(0) * 10 + who.length
    return privateProse(id, 900, tenantMarker(id))
  }
  const ask = (who: string) =>
    chat(`${own(who)}\n\nQuote the ${s.name} for me.`, { max_tokens: MAX_TOKENS })
  const send = (who: string) => {
    const text = own(who)
    const inputs =
      s.name === 'app system prompt'
        ? {
            messages: [
              { role: 'system', content: s.text },
              { role: 'user', content: text },
            ],
            max_tokens: MAX_TOKENS,
          }
        : chat(`${s.text}\n\n${text}`, { max_tokens: MAX_TOKENS })
    return deliver(guard.runner(upstream, names(who)), inputs)
  }
  // The same excerpt both times: a model recites a text it knows the same way.
  const text = excerpt(s.text, seed)
  recite = text
  if (order.recitedBefore) await deliver(guard.runner(upstream, names('r0')), ask('r0'))
  recite = undefined
  for (const who of order.senders) {
    clock.advance(60_000)
    await send(who)
  }
  clock.advance(60_000)
  recite = text
  const d = await deliver(guard.runner(upstream, names(order.to)), ask(order.to))
  const record = d.error?.incidentId ? await guard.quarantine.get(d.error.incidentId) : undefined
  const sourceTenants = record?.sourceTenants ?? []
  return {
    ...d,
    named: order.senders.some((w) => sourceTenants.includes(names(w))),
    reasons: record?.reasons ?? [],
  }
}

async function recitals(shared: SharedText[], reps: number): Promise<RecitalCell[]> {
  const cells: RecitalCell[] = []
  const texts = shared.filter((s) => s.name !== 'Hono README')
  for (const order of ORDERS) {
    for (const [ti, s] of texts.entries()) {
      const cell: RecitalCell = {
        order: order.name,
        text: s.name,
        samples: 0,
        released: 0,
        quarantined: 0,
        reasons: {},
        namedSender: 0,
      }
      for (let i = 0; i < reps; i++) {
        const o = await recitalSample(s, order, 9_000 + ti * 100 + i)
        cell.samples++
        const delivery = deliveryOf(o)
        if (delivery === 'released') cell.released++
        if (delivery === 'quarantined') cell.quarantined++
        if (o.named) cell.namedSender++
        for (const r of o.reasons) cell.reasons[r] = (cell.reasons[r] ?? 0) + 1
      }
      cells.push(cell)
    }
    const row = cells.slice(-texts.length)
    console.log(
      `  recital, ${order.name}: ${row.map((c) => `${c.text} ${c.quarantined}/${c.samples} withheld`).join(', ')}`,
    )
  }
  return cells
}

/**
 * The one-sided 95% Clopper–Pearson upper bound of a rate seen `k` times in `n` trials: the largest
 * rate under which seeing `k` or fewer still has a 5% chance.
 *
 * @example
 * upperBound95(0, 3_000) // 0.000998…
 */
export function upperBound95(k: number, n: number): number {
  const cdf = (p: number) => {
    let logTerm = n * Math.log1p(-p)
    let sum = Math.exp(logTerm)
    for (let i = 1; i <= k; i++) {
      logTerm += Math.log(n - i + 1) - Math.log(i) + Math.log(p) - Math.log1p(-p)
      sum += Math.exp(logTerm)
    }
    return sum
  }
  let lo = k / n
  let hi = 1
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2
    if (cdf(mid) > 0.05) lo = mid
    else hi = mid
  }
  return hi
}

const pct = (n: number, of: number, digits = 2) =>
  of === 0 ? '—' : `${((n / of) * 100).toFixed(digits)}%`
const esc = (text: string) => text.replace(/_/g, '\\_')

function sharedRows(stats: TrafficStats): string[] {
  const cases = [
    'in the prompt; no other tenant had sent it (its first sender)',
    'in the prompt; one other tenant had sent it',
    'in the prompt; two or more others had sent it',
    'not in this prompt (an assistant turn or a pasted answer)',
  ]
  return Object.entries(stats.shared).map(([name, use]) => {
    const cells = cases.map((c) => {
      const q = use.quoted[c]
      return q ? `${q.answers} (${q.quarantined}) ≤ ${q.longest}` : '0'
    })
    return `| ${name} | ${use.firstSender} | ${use.firstAt ?? '—'} | ${use.secondAt ?? '—'} | ${use.sent} | ${cells.join(' | ')} |`
  })
}

function recitalRows(cells: RecitalCell[]): string[] {
  const texts = [...new Set(cells.map((c) => c.text))]
  const orders = [...new Set(cells.map((c) => c.order))]
  return [
    `| order (then the model recites an excerpt of ~700 characters to a tenant whose prompt lacks it) | ${texts.join(' | ')} |`,
    `|---|${texts.map(() => '---:').join('|')}|`,
    ...orders.map((order) => {
      const row = texts.map((t) => {
        const c = cells.find((x) => x.order === order && x.text === t)!
        return `${c.quarantined} / ${c.samples}`
      })
      return `| ${order} | ${row.join(' | ')} |`
    }),
  ]
}

function table(stats: TrafficStats, cells: RecitalCell[], quick: boolean): string {
  const m = machineInfo()
  const bound = upperBound95(stats.quarantined, stats.requests)
  const reasons = Object.entries(stats.reasons)
    .map(([r, n]) => `${esc(r)} ${n}`)
    .join(', ')
  const kinds = Object.entries(stats.byKind).map(
    ([kind, k]) => `| ${kind} | ${k.requests} | ${k.quarantined} |`,
  )
  const withheld = stats.withheld.map(
    (w) =>
      `- request ${w.request} (${w.tenant}, ${w.kind}, ${w.stream ? 'stream' : 'whole'}): ${esc(w.reasons.join(', '))}` +
      `${w.cause.map((c) => `; shares a run of ${c.run} units with “${c.label}” as sent by ${c.source}`).join('')}`,
  )
  return [
    `Honest traffic: **${stats.requests.toLocaleString('en-US')} requests** of ${stats.tenants} tenants through one guard and ` +
      `one engine (\`fixed\`, prefix cache on, echo ignored 2% of the time, quotes of 90 or 240 characters; ${stats.streams} streamed; ${stats.virtualMinutes} ` +
      'virtual minutes; fingerprints live an hour). Tenants share the MIT licence (each with its own copyright ' +
      "line), the Apache-2.0 licence, Zod's README, Hono's README (rarely: 2% of chats) and one app's long system prompt " +
      '(60% of tenants), beside private prose; conversations of 1–5 turns whose assistant turns are the answers the client ' +
      'received; 40% of conversations of 3+ turns drop their first user turn from the third on; 15% of finished ' +
      'conversations of 2+ turns resume 65 minutes later with their first user turn dropped (the answers quoting it ' +
      'kept, its fingerprints expired); 6% of new chats paste an earlier answer into the user turn. ' +
      'Every shared text has a first sender that uses it alone (for the first 8–50% of the run) before the others start. ' +
      `Node ${m.node}${quick ? ', quick run' : ''}.`,
    '',
    `**False quarantines: ${stats.quarantined} of ${stats.requests} (${pct(stats.quarantined, stats.requests)}; ` +
      `95% upper bound ${pct(bound * stats.requests, stats.requests, 3)}, target ≤ 0.1%)**` +
      `${reasons ? ` — ${reasons}` : ''}; ${stats.refused} refused, ${stats.errors} errors, ${stats.retried} released after an echo retry.`,
    ...(withheld.length > 0 ? ['', ...withheld] : []),
    '',
    '| request | count | quarantined |',
    '|---|---:|---:|',
    ...kinds,
    '',
    `Shared texts: when each was first sent (request #) and when a second tenant sent it (from then on the guard counts it ` +
      `as boilerplate); answers quoting ≥ ${LEAK_RUN} consecutive units of it, by where the quote came from: answers (quarantined) ≤ the longest run in units:`,
    '',
    '| shared text | first sender | first sent | second sender at | prompts holding it | first sender alone | second sender | ≥ 2 other senders | not in the prompt |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...sharedRows(stats),
    '',
    "A model reciting public text from memory (the simulator's model only quotes its pages, so this is replayed: the " +
      "engine's answer plus a verbatim excerpt of the text, whole answers, a fresh guard per sample). Withheld / samples:",
    '',
    ...recitalRows(cells),
  ].join('\n')
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const shared = await sharedTexts(ROOT)
  const total = quick ? 400 : 6_000
  const tenants = quick ? 40 : 150
  const stats = await traffic(shared, total, tenants)
  const bound = upperBound95(stats.quarantined, stats.requests)
  console.log(
    `  honest: ${stats.requests} requests, ${stats.quarantined} quarantined (${pct(stats.quarantined, stats.requests)}, ` +
      `95% upper bound ${(bound * 100).toFixed(3)}%), ${stats.virtualMinutes} virtual minutes`,
  )
  const cells = await recitals(shared, quick ? 2 : 6)
  const path = await writeResult('boilerplate', {
    suite: 'boilerplate',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: {
      simulator: SIM,
      profile: PROFILE,
      maxTokens: MAX_TOKENS,
      gapMs: GAP_MS,
      total,
      tenants,
    },
    note:
      'Every quarantine of the honest traffic is false. upperBound95 is one-sided Clopper–Pearson. ' +
      'shared[*].quoted counts answers quoting ≥ 8 consecutive units of the text, by case, with quarantines.',
    falseQuarantineRate: stats.quarantined / stats.requests,
    upperBound95: bound,
    traffic: stats,
    recitals: cells,
  })
  console.log(table(stats, cells, quick))
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'boilerplate', run }
export default suite
