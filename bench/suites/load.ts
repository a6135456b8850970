/**
 * @module Load run: `npm start`'s real process (`wrangler dev` with the guard and the simulator) on
 * loopback, driven by N concurrent clients of mixed tenants, streaming and not, with a few intended
 * refusals mixed in. Counts requests, errors (intended and not), cross-talk (an answer carrying any
 * other request's marker) and latency; the child process group is always stopped, by its own id.
 */
import { nodeHost } from '../../test/ecosystem/node-host'
import { startWranglerDev, type WranglerDev } from '../../test/ecosystem/wrangler-dev'
import { chat, document, sseText } from '../../test/support/prompts'
import { machineInfo, median, ms, percentile, type Suite, writeResult } from '../lib'

const MODEL = '@cf/zai-org/glm-5.3'
const KEYS = { A: 'dev-key-tenant-a', B: 'dev-key-tenant-b' } as const
const MARK = /TENANT-[A-Z]-R\d+/g

/** What one request is meant to get. */
type Intent = 'answer' | 'ceiling' | 'unauthorized'

interface Job {
  index: number
  marker: string
  tenant: keyof typeof KEYS
  stream: boolean
  intent: Intent
}

interface Outcome {
  job: Job
  status: number
  ms: number
  /** The request got what it was meant to get (its own answer, or the intended refusal). */
  asIntended: boolean
  /** Markers of other requests found in what this client received. */
  foreign: string[]
}

function plan(count: number): Job[] {
  return Array.from({ length: count }, (_, index) => {
    const tenant = index % 2 ? 'B' : 'A'
    const intent: Intent =
      index % 25 === 24 ? 'unauthorized' : index % 10 === 9 ? 'ceiling' : 'answer'
    return { index, marker: `TENANT-${tenant}-R${index}`, tenant, stream: index % 3 !== 0, intent }
  })
}

async function send(base: string, job: Job): Promise<Outcome> {
  const body = {
    model: MODEL,
    ...chat(document(job.marker, 600), { stream: job.stream }),
    ...(job.intent === 'ceiling' ? { max_tokens: 2 ** 24 } : {}),
  }
  const key = job.intent === 'unauthorized' ? 'not-a-tenant-key' : KEYS[job.tenant]
  const start = performance.now()
  let status = 0
  let text = ''
  try {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    status = res.status
    text = await res.text()
  } catch (error) {
    text = String(error)
  }
  const elapsed = performance.now() - start
  const received =
    job.stream && status === 200
      ? `${sseText(text).reasoning}${sseText(text).content}${text}`
      : text
  const markers = [...new Set(received.match(MARK) ?? [])]
  const foreign = markers.filter((m) => m !== job.marker)
  const expected = { answer: 200, ceiling: 400, unauthorized: 401 }[job.intent]
  const complete = !job.stream || status !== 200 || text.trimEnd().endsWith('data: [DONE]')
  const ownContent = job.intent !== 'answer' || markers.includes(job.marker)
  return {
    job,
    status,
    ms: elapsed,
    asIntended: status === expected && complete && ownContent,
    foreign,
  }
}

/** Runs `jobs` with at most `concurrency` in flight; returns outcomes and the most held at once. */
async function drive(
  base: string,
  jobs: Job[],
  concurrency: number,
): Promise<{ outcomes: Outcome[]; maxInFlight: number }> {
  const outcomes: Outcome[] = []
  let next = 0
  let inFlight = 0
  let maxInFlight = 0
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++]!
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      outcomes.push(await send(base, job))
      inFlight--
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { outcomes, maxInFlight }
}

const suite: Suite = {
  name: 'load',
  async run({ quick }) {
    const size = quick ? { requests: 50, concurrency: 8 } : { requests: 400, concurrency: 32 }
    const host = await nodeHost()
    let started: WranglerDev | undefined
    const stop = async () => {
      if (started) await host.stop(started.child)
    }
    // An interrupted bench must not leave wrangler and workerd behind.
    const onSignal = () => {
      stop().finally(() => process.exit(130))
    }
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    let result: Awaited<ReturnType<typeof drive>>
    const startAt = performance.now()
    try {
      started = await startWranglerDev(host)
      // One warm-up request per tenant (isolate start, tokenizer load) outside the figures.
      await drive(started.base, plan(2), 2)
      result = await drive(started.base, plan(size.requests), size.concurrency)
    } finally {
      await stop()
      process.removeListener('SIGINT', onSignal)
      process.removeListener('SIGTERM', onSignal)
      if (started) host.remove(started.dir)
    }
    const wallMs = performance.now() - startAt
    const stopped = started?.child.exitCode !== null
    const { outcomes, maxInFlight } = result
    const answers = outcomes.filter((o) => o.job.intent === 'answer')
    const intended = outcomes.filter((o) => o.job.intent !== 'answer')
    const unintended = outcomes.filter((o) => !o.asIntended)
    const crossTalk = outcomes.filter((o) => o.foreign.length > 0)
    const latencies = answers.filter((o) => o.status === 200).map((o) => o.ms)
    const byStatus: Record<string, number> = {}
    for (const o of outcomes) byStatus[o.status] = (byStatus[o.status] ?? 0) + 1
    const figures = {
      machine: machineInfo(),
      quick,
      requests: outcomes.length,
      concurrency: size.concurrency,
      maxInFlight,
      streamed: outcomes.filter((o) => o.job.stream).length,
      tenants: 2,
      byStatus,
      intendedRefusals: intended.length,
      unintendedErrors: unintended.length,
      crossTalk: crossTalk.length,
      latencyMs: latencies.length
        ? {
            p50: Math.round(median(latencies)),
            p99: Math.round(percentile(latencies, 99)),
            max: Math.round(Math.max(...latencies)),
          }
        : undefined,
      wrangler: { stopped },
      wallMs: Math.round(wallMs),
      failures: unintended
        .slice(0, 5)
        .map((o) => ({ marker: o.job.marker, intent: o.job.intent, status: o.status })),
    }
    await writeResult('load', figures)
    console.log(
      [
        `Load run (${quick ? 'quick' : 'full'}): \`wrangler dev\` (guard + simulator, the simulator's default 50k tok/s prefill and 200 tok/s decode) on loopback, ${figures.requests} requests of 2 tenants (${figures.streamed} streamed) at concurrency ${size.concurrency}, ${intended.length} of them meant to be refused (output reserve beyond the pool → 400, unknown key → 401). Node ${process.version}.`,
        '',
        '| requests | held at once | answered 200 | intended refusals | unintended errors | cross-talk | p50 | p99 | wrangler stopped |',
        '|---:|---:|---:|---:|---:|---:|---:|---:|---|',
        `| ${figures.requests} | ${maxInFlight} | ${byStatus[200] ?? 0} | ${intended.length} | ${unintended.length} | ${crossTalk.length} | ${latencies.length ? ms(median(latencies)) : '–'} | ${latencies.length ? ms(percentile(latencies, 99)) : '–'} | ${stopped ? 'yes' : '**no**'} |`,
      ].join('\n'),
    )
    console.log(
      `load: ${figures.requests} requests, ${unintended.length} unintended errors, ${crossTalk.length} cross-talk, wrangler stopped: ${stopped}`,
    )
    if (unintended.length > 0 || crossTalk.length > 0 || !stopped) process.exitCode = 1
  },
}

export default suite
