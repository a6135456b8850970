import fc from 'fast-check'
import { SimEngine } from '../../sim/engine'
import { guardAi } from '../../src'
import { importCanaryKey } from '../../src/core/canary'
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import {
  decodeChunks,
  encodeCases,
  expectedEvents,
  judgeHttp,
  judgeRun,
  MODEL,
  rawBody,
  requestValue,
  splitBytes,
  sseCases,
} from '../../test/reliability/properties'
import { machineInfo, type Suite, writeResult } from '../lib'

const SECRET = 'fuzz-canary-secret-0123456789abcdefghij'
const KEY = 'fuzz-key-tenant-a'
const SEED = 20_261_117

interface PropertyResult {
  name: string
  runs: number
  /** How many runs ended in each status (0 = a non-GuardError was thrown). */
  statuses: Record<string, number>
  failed: boolean
  /** The shrunk counterexample, when the property failed. */
  counterexample?: string
  ms: number
}

/** Runs one property with fc.check (no throw), counting the statuses its runs ended in. */
async function run<T>(
  name: string,
  runs: number,
  arbitrary: fc.Arbitrary<T>,
  check: (value: T) => Promise<{ status: number; problem?: string }>,
): Promise<PropertyResult> {
  const statuses: Record<string, number> = {}
  const start = performance.now()
  const details = await fc.check(
    fc.asyncProperty(arbitrary, async (value) => {
      const verdict = await check(value)
      statuses[verdict.status] = (statuses[verdict.status] ?? 0) + 1
      if (verdict.problem) throw new Error(verdict.problem)
    }),
    { numRuns: runs, seed: SEED },
  )
  const result: PropertyResult = {
    name,
    runs: details.numRuns,
    statuses,
    failed: details.failed,
    ms: Math.round(performance.now() - start),
  }
  if (details.failed) {
    result.counterexample = JSON.stringify(details.counterexample)?.slice(0, 2_000)
    console.error(`✗ ${name}: ${String(details.errorInstance).slice(0, 300)}`)
  }
  return result
}

/** The Worker's app in-process (no D1, no Durable Object: in-memory stores) over the simulator. */
function workerApp(): (body: string | Uint8Array) => Promise<Response> {
  const app = createApp()
  const engine = new SimEngine({
    mode: 'fixed',
    prefillTokensPerSecond: Number.POSITIVE_INFINITY,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  })
  const env = {
    AI: engine.binding('worker'),
    GUARD_SECRET: SECRET,
    TENANT_KEYS: JSON.stringify({ [KEY]: 'tenant-a' }),
  } as Env
  const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} }
  return (body) =>
    Promise.resolve(
      app.fetch(
        new Request('http://guard.test/v1/chat/completions', {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body,
        }),
        env,
        ctx as unknown as ExecutionContext,
      ),
    )
}

const suite: Suite = {
  name: 'fuzz',
  async run({ quick }) {
    const key = await importCanaryKey(SECRET)
    const size = quick
      ? { http: 300, run: 300, sse: 1_000 }
      : { http: 5_000, run: 5_000, sse: 20_000 }
    // The guard logs every withheld answer; thousands of lines would drown the bench output.
    const warn = console.warn
    const log = console.log
    console.warn = () => {}
    console.log = () => {}
    const results: PropertyResult[] = []
    try {
      const fetchApp = workerApp()
      results.push(
        await run('HTTP: any body → POST /v1/chat/completions', size.http, rawBody, async (body) =>
          judgeHttp(await fetchApp(body), key),
        ),
      )
      const ai = guardAi(
        new SimEngine({
          mode: 'fixed',
          prefillTokensPerSecond: Number.POSITIVE_INFINITY,
          decodeTokensPerSecond: Number.POSITIVE_INFINITY,
        }).binding('tenant-a'),
        { secret: SECRET, tenant: 'tenant-a' },
      )
      results.push(
        await run('guardAi.run: any inputs', size.run, requestValue, (inputs) =>
          judgeRun(ai, MODEL, inputs, key),
        ),
      )
      results.push(
        await run(
          'SSE decoder: any events, split at any bytes',
          size.sse,
          fc.tuple(sseCases, fc.array(fc.nat(), { maxLength: 16 })),
          async ([cases, cuts]) => {
            const bytes = encodeCases(cases)
            const split = await decodeChunks(splitBytes(bytes, cuts))
            const same = JSON.stringify(split.events) === JSON.stringify(expectedEvents(cases))
            return same && !split.truncated
              ? { status: 200 }
              : { status: 0, problem: 'decoded events differ from the encoded ones' }
          },
        ),
      )
    } finally {
      console.warn = warn
      console.log = log
    }
    const total = results.reduce((n, r) => n + r.runs, 0)
    const failures = results.filter((r) => r.failed).length
    await writeResult('fuzz', {
      machine: machineInfo(),
      quick,
      seed: SEED,
      total,
      failures,
      results,
    })
    const rows = results.map((r) => {
      const statuses = Object.entries(r.statuses)
        .sort(([a], [b]) => Number(a) - Number(b))
        .map(([s, n]) => `${s === '200' ? 'ok' : s}: ${n}`)
        .join(', ')
      return `| ${r.name} | ${r.runs.toLocaleString('en-US')} | ${statuses} | ${r.failed ? '**failed**' : '0'} |`
    })
    console.log(
      [
        `Fuzz run (${quick ? 'quick' : 'full'}; fast-check seed ${SEED}; ${total.toLocaleString('en-US')} cases; Node ${process.version}). Outcomes per status (ok = an answer released or events decoded exactly).`,
        '',
        '| property | cases | outcomes | failures |',
        '|---|---:|---|---:|',
        ...rows,
      ].join('\n'),
    )
    console.log(`fuzz: ${total} cases, ${failures} failing properties`)
    if (failures > 0) process.exitCode = 1
  },
}

export default suite
