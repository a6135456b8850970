/**
 * @module Benchmark: what the guard Worker's checks cost a 1k-token request in workerd, next to
 * Portkey's gateway. The reading proxy and the guard Worker — default, and with each switch the Worker
 * has turned off — run in one workerd isolate (bench/support/checks-worker.ts) in front of one
 * simulator process, with Portkey beside them (its default config, and its regex guardrails on). Each guard variant is measured in rounds of its own,
 * each round one request to the simulator, Portkey, the reading proxy and that variant in a fresh
 * seeded order, so every variant's code is as cold as Portkey's is between its requests; variants
 * take turns in blocks of rounds, so the host's drift over the run falls on each alike. A figure is
 * a median of per-round differences.
 *
 * One variant a round, not all of them: with six guard variants in every round, the guard's code and
 * data stay in the CPU's caches while Portkey's are evicted, which put the guard ahead of Portkey
 * where a fair mix puts it behind (docs/benchmarks.md).
 */
import {
  machineInfo,
  median,
  ms,
  percentile,
  type Suite,
  type SuiteOptions,
  writeResult,
} from '../lib'
import { CHECK_VARIANTS, type CheckVariant } from '../support/checks-worker'
import { timedFetch } from '../support/http'
import { PEER_KEY } from '../support/peer-env'
import { portkeyGuardrails, startPortkey, startSimulator } from '../support/peers'
import type { Child } from '../support/processes'
import { BENCH_SECRET, MODEL } from '../support/prompts'
import { type RunningWorker, startWorker } from '../support/workerd'
import { english, rng } from '../texts'

type Variant = keyof typeof CHECK_VARIANTS

type Target = 'direct' | 'portkey' | 'portkey guardrails' | CheckVariant

const VARIANTS = Object.keys(CHECK_VARIANTS) as Variant[]

/** Rounds of one variant in a row before the next variant's turn. */
const BLOCK = 10

interface Row {
  workload: string
  /** The guard variant whose rounds measured this row. */
  rounds: Variant
  target: Target
  /** Median of per-round (target − direct), ms. */
  added: number
  /** Median of per-round (target − reading proxy), ms, and its middle half ([25th, 75th]). */
  overProxy: number
  overProxyIqr: [number, number]
  /**
   * Target − default guard, ms: for Portkey and the reading proxy the median of per-round differences
   * in the default guard's rounds (with its middle half); for a variant the difference of its
   * `overProxy` from the default's, each from its own rounds (the second copy's is the noise).
   */
  vsGuard: number
  vsGuardIqr?: [number, number]
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const children: Child[] = []
  let worker: RunningWorker | undefined
  try {
    const simulator = await startSimulator()
    children.push(simulator.child)
    const simUrl = simulator.url
    const portkey = await startPortkey()
    children.push(portkey.child)
    worker = await startWorker('bench/support/checks-worker.ts', {
      SIM_URL: simUrl,
      GUARD_SECRET: BENCH_SECRET,
      TENANT_KEYS: JSON.stringify({ [PEER_KEY]: 'bench' }),
    })
    const urlOf = (target: Target) =>
      target === 'direct' ? simUrl : target.startsWith('portkey') ? portkey.url : worker!.url
    const headersOf = (target: Target): Record<string, string> => {
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (target === 'portkey') {
        headers['x-portkey-provider'] = 'openai'
        headers['x-portkey-custom-host'] = `${simUrl}/v1`
      } else if (target === 'portkey guardrails') {
        headers['x-portkey-config'] = portkeyGuardrails(`${simUrl}/v1`)
      } else if (target !== 'direct') {
        headers['x-bench-variant'] = target
      }
      const guarded = urlOf(target) === worker!.url && target !== 'reading proxy'
      headers.authorization = `Bearer ${guarded ? PEER_KEY : 'worker'}`
      return headers
    }
    await confirmGuardrailsRun(`${urlOf('portkey guardrails')}/v1/chat/completions`, headersOf)
    const text = english(11, 1_000 * 4.1)
    const rounds = quick ? 60 : 800
    const rows: Row[] = []
    for (const stream of [false, true]) {
      const workload = `1k tokens, ${stream ? 'stream' : 'whole'}`
      const body = JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: text }],
        ...(stream ? { stream: true } : {}),
      })
      const send = async (target: Target): Promise<number> => {
        const r = await timedFetch(`${urlOf(target)}/v1/chat/completions`, {
          method: 'POST',
          headers: headersOf(target),
          body,
        })
        if (r.status !== 200)
          throw new Error(`checks: ${target} answered ${r.status} on ${workload}`)
        return r.totalMs
      }
      // Portkey 1.15.2 fails every stream of this simulator (500, "TypeError: immutable": see the
      // peer suite's failures), so streams compare the Workers alone.
      const peers: Target[] = stream
        ? ['reading proxy']
        : ['portkey', 'portkey guardrails', 'reading proxy']
      const times = await timeVariants(peers, send, rounds, quick ? 10 : 40, rng(stream ? 2 : 1))
      for (const row of rowsOf(workload, peers, times)) {
        rows.push(row)
        console.log(
          `  ${workload.padEnd(17)} ${row.rounds.padEnd(20)} ${row.target.padEnd(20)} added ${signed(row.added).padStart(9)}  over proxy ${signed(row.overProxy).padStart(9)}  vs guard ${signed(row.vsGuard).padStart(9)}`,
        )
      }
    }
    const path = await writeResult('checks', {
      suite: 'checks',
      date: new Date().toISOString(),
      quick,
      machine: machineInfo(),
      rounds,
      block: BLOCK,
      variants: CHECK_VARIANTS,
      note: "Times in ms. Each guard variant's rounds: one request each to the simulator (direct), Portkey and Portkey with its regex guardrails (whole answers only), the reading proxy and that variant, in a fresh order; variants take turns in blocks of `block` rounds. added = median of per-round (target − direct); overProxy = median of per-round (target − reading proxy) with its interquartile range; vsGuard = a peer's (Portkey, with guardrails, the reading proxy) per-round difference from the default guard in the default guard's rounds (with its interquartile range), or a variant's overProxy minus the default guard's. The reading proxy and every guard variant run in one workerd isolate; Portkey and the simulator in their own Node processes.",
      rows,
    })
    console.log(table(rows, rounds, quick))
    console.log(`  wrote ${path}`)
  } finally {
    await worker?.dispose()
    for (const child of children.reverse()) await child.stop()
  }
}

/**
 * Portkey's guardrails must really run, or their row measures nothing: a prompt carrying an AWS key
 * id is denied (446), the same prompt without it is answered.
 */
async function confirmGuardrailsRun(
  url: string,
  headersOf: (target: Target) => Record<string, string>,
): Promise<void> {
  const status = async (content: string) =>
    (
      await timedFetch(url, {
        method: 'POST',
        headers: headersOf('portkey guardrails'),
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }] }),
      })
    ).status
  const [clean, secret] = [await status('Say hi.'), await status('My key is AKIAIOSFODNN7EXAMPLE.')]
  if (clean !== 200 || secret !== 446)
    throw new Error(`checks: Portkey's guardrails answered ${clean} (clean) and ${secret} (a key)`)
}

/** One round's times, ms, by target. */
type Round = Map<Target, number>

/**
 * `rounds` timed rounds per guard variant (after `warm` untimed ones in all): each round one request
 * to the simulator, each of `peers` and the variant, in a fresh order; the variants take turns in
 * blocks of {@link BLOCK} rounds.
 */
async function timeVariants(
  peers: readonly Target[],
  send: (target: Target) => Promise<number>,
  rounds: number,
  warm: number,
  random: () => number,
): Promise<Map<Variant, Round[]>> {
  const times = new Map<Variant, Round[]>(VARIANTS.map((v) => [v, []]))
  const round = async (variant: Variant): Promise<Round> => {
    const took: Round = new Map()
    for (const t of shuffled<Target>(['direct', ...peers, variant], random))
      took.set(t, await send(t))
    return took
  }
  for (let i = 0; i < warm; i++) await round(VARIANTS[i % VARIANTS.length]!)
  for (let done = 0; done < rounds; done += BLOCK) {
    for (const variant of VARIANTS) {
      for (let i = 0; i < Math.min(BLOCK, rounds - done); i++) {
        times.get(variant)!.push(await round(variant))
      }
    }
  }
  return times
}

/** The peers' rows from the default guard's rounds, then one row per variant from its own. */
function rowsOf(workload: string, peers: readonly Target[], times: Map<Variant, Round[]>): Row[] {
  const over = (rounds: readonly Round[], target: Target, base: Target) =>
    rounds.map((r) => r.get(target)! - r.get(base)!)
  const guardRounds = times.get('guard')!
  const guardOverProxy = median(over(guardRounds, 'guard', 'reading proxy'))
  const row = (rounds: Variant, target: Target, list: readonly Round[]) => {
    const overProxy = over(list, target, 'reading proxy')
    return {
      workload,
      rounds,
      target,
      added: median(over(list, target, 'direct')),
      overProxy: median(overProxy),
      overProxyIqr: [percentile(overProxy, 25), percentile(overProxy, 75)] as [number, number],
    }
  }
  const rows: Row[] = peers.map((target) => {
    const vsGuard = over(guardRounds, target, 'guard')
    return {
      ...row('guard', target, guardRounds),
      vsGuard: median(vsGuard),
      vsGuardIqr: [percentile(vsGuard, 25), percentile(vsGuard, 75)],
    }
  })
  for (const variant of VARIANTS) {
    const own = row(variant, variant, times.get(variant)!)
    rows.push({ ...own, vsGuard: own.overProxy - guardOverProxy })
  }
  return rows
}

/**
 * A fresh order each round (seeded): with an alternating one, the first copy of the default guard
 * measured 45–180 µs slower than the second in four runs; shuffled, they agree within the noise.
 */
function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

function signed(value: number): string {
  return value < 0 ? `−${ms(-value)}` : `+${ms(value)}`
}

function table(rows: readonly Row[], rounds: number, quick: boolean): string {
  const m = machineInfo()
  const label: Record<Target, string> = {
    direct: 'direct (simulator)',
    portkey: 'Portkey gateway (Node)',
    'portkey guardrails': 'Portkey gateway (Node), regex guardrails on prompt and answer',
    'reading proxy': 'reading proxy Worker',
    guard: 'guard Worker (default)',
    'guard again': 'guard Worker (default), a second copy',
    'secrets off': 'guard Worker, `GUARD_SECRETS=off`',
    'echo off': 'guard Worker, echo `off`',
    'memo off': 'guard Worker, `GUARD_TEXT_MEMO_BYTES=0`',
    'secrets and echo off': 'guard Worker, secrets and echo off',
  }
  const range = ([low, high]: readonly [number, number]) => `${signed(low)} … ${signed(high)}`
  const line = (r: Row) => {
    const overProxy =
      r.target === 'reading proxy' ? '—' : `${signed(r.overProxy)} (${range(r.overProxyIqr)})`
    const vsGuard =
      r.target === 'guard'
        ? '—'
        : `${signed(r.vsGuard)}${r.vsGuardIqr ? ` (${range(r.vsGuardIqr)})` : ''}`
    return `| ${r.workload} | ${label[r.target]} | ${signed(r.added)} | ${overProxy} | ${vsGuard} |`
  }
  return [
    `What the guard Worker's checks cost one 1k-token request (${m.cpu}, ${m.cores} cores, Node ${m.node}; ${rounds} rounds per guard variant${quick ? ', quick run' : ''}). Each variant is measured in rounds of its own: one request each to the simulator, Portkey twice — its default config, and its in-process guardrails nearest the guard's checks (five secret formats matched by regex on the prompt and on the answer, denying on a match, and a word-count bound on the prompt; it has nothing like a canary or a timing check) — (whole answers: Portkey fails this simulator's streams), the reading proxy and that variant, in a fresh order, with the variants taking turns every ${BLOCK} rounds. So each sees the same share of the traffic and runs as cold as Portkey does (in rounds of every variant at once, the guard's code stayed in the CPU's caches and Portkey's did not). The reading proxy and every guard variant run in **one workerd isolate**; Portkey and the simulator in their own processes. Medians of per-round differences, with the middle half in brackets.`,
    '',
    "**added**: over the simulator direct. **over the reading proxy**: what the guard's own code costs beyond a Worker that only parses and re-serialises. **vs default guard**: for Portkey, Portkey with guardrails and the reading proxy, their difference from the default guard in the same rounds; for a variant, its figure over the reading proxy minus the default guard's, each from its own rounds (the second copy's row is how far two identical variants land apart).",
    '',
    '| workload | target | added (median) | over the reading proxy | vs default guard |',
    '|---|---|---|---|---|',
    ...rows.map(line),
  ].join('\n')
}

const suite: Suite = { name: 'checks', run }
export default suite
