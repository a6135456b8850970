import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  dataOfOthers,
  type Fetcher,
  formatWorkerDemo,
  runWorkerDemo,
  WorkerUnavailable,
} from '../../scripts/demo'
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import type { ChildLike, NodeHost } from '../ecosystem/node-host'
import { nodeHost } from '../ecosystem/node-host'
import { startWranglerDev } from '../ecosystem/wrangler-dev'

/**
 * `npm run demo:worker` against the Worker as `npm start` runs it (the guard and the simulator in one
 * `wrangler dev`, wrangler.dev.toml's values, no extra variable), and against the bare simulator, where
 * nothing stops the leak, so the demo's check of what B received must say so.
 */
const ADMIN = 'dev-only-admin-secret'
const PUBLISHED_POOL = 681_280

let host: NodeHost
let dev: ChildLike | undefined
let dir = ''
let base = ''

beforeAll(async () => {
  host = await nodeHost()
  ;({ base, child: dev, dir } = await startWranglerDev(host))
}, 90_000)

afterAll(async () => {
  if (dev) await host.stop(dev)
  if (dir) host.remove(dir)
}, 15_000)

/** Runs `npm run -s demo:worker` with `args`; resolves with its exit code and both outputs. */
function demoWorker(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return host.capture('npm', ['run', '-s', 'demo:worker', '--', ...args], {
    cwd: host.cwd,
    env: host.env,
  })
}

describe('the leak demo against the running Worker', () => {
  it('should withhold B’s over-pool answer, deliver none of A’s data, and record the incident', async () => {
    const report = await runWorkerDemo(base)
    const [bShort, a, bLong] = report.rows as [
      (typeof report.rows)[0],
      (typeof report.rows)[0],
      (typeof report.rows)[0],
    ]
    expect(report.rows.map((r) => [r.tenant, r.status])).toEqual([
      ['B', '200'],
      ['A', '200'],
      ['B', '422 response_quarantined'],
    ])
    // Checked on the bodies as received: nobody got another tenant's secret or rows.
    for (const row of report.rows) expect(row.receivedDataOf).toBeNull()
    expect(bLong.engine).toBe('placeholder')
    expect([a.engine, bShort.engine]).toEqual(['served', 'served'])

    // Sizes in the simulator's tokens: B's prompt is over the pool the demo set, under the ceiling
    // the Worker states (the published pool less the output reserve: npm start's profile).
    expect(report.simTokenizer).toBe('qwen3')
    expect(report.simPoolTokens).toBe(8_192)
    expect(report.workerPoolTokens).toBe(PUBLISHED_POOL)
    expect(report.workerCeilingTokens).toBe(PUBLISHED_POOL - 4_096)
    expect(bLong.simPromptTokens).toBeGreaterThan(report.simPoolTokens)
    expect(bLong.simPromptTokens).toBeLessThan(report.workerCeilingTokens!)
    expect(a.simPromptTokens).toBeLessThan(report.simPoolTokens)

    // The incident is in the admin API, and the size is the simulator's own count (its usage figure).
    const incident = report.incident!
    expect(incident.id).toBe(bLong.incidentId)
    expect(incident.consoleUrl).toBe(`${base}/admin/incidents/${incident.id}`)
    const res = await fetch(`${base}/admin/incidents/${incident.id}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    })
    expect(res.status).toBe(200)
    const record = (await res.json()) as {
      tenant: string
      reasons: string[]
      figures: { promptTokensReported?: number }
    }
    expect(record.tenant).toBe('tenant-b')
    expect(record.reasons).toEqual(incident.reasons)
    expect(record.reasons.length).toBeGreaterThan(0)
    expect(record.figures.promptTokensReported).toBe(bLong.simPromptTokens)
    // There was a leak to stop: the withheld text holds A's data.
    expect(incident.withheldDataOf).toBe('A')

    // The simulator's settings are restored.
    const stats = (await (await fetch(`${base}/sim/stats`)).json()) as {
      config: { poolTokens: number }
    }
    expect(stats.config.poolTokens).toBe(PUBLISHED_POOL)

    const text = formatWorkerDemo(report)
    expect(text).toContain('prompt (qwen3 tokens)')
    expect(text).toContain(`reasons ${incident.reasons.join(', ')}`)
    expect(text).toContain(incident.consoleUrl)
    expect(text).not.toContain('YES')
  }, 60_000)

  it('should print the same report as JSON from npm run demo:worker -- --json', async () => {
    const { code, out } = await demoWorker(['--json', '--worker', base])
    expect(code).toBe(0)
    const report = JSON.parse(out) as Awaited<ReturnType<typeof runWorkerDemo>>
    expect(report.rows.at(-1)).toMatchObject({
      tenant: 'B',
      status: '422 response_quarantined',
      receivedDataOf: null,
    })
    expect(report.incident?.id).toMatch(/^inc_/)
  }, 60_000)

  it('should report a leak when what B receives carries A’s data (the bare simulator)', async () => {
    // No guard in front: the engine's answer to B's over-pool prompt, built from A's stale pages,
    // is what B receives. The demo must say YES, from the body alone.
    const handle = simFetchHandler(new SimEngine())
    const bare: Fetcher = async (url, init) =>
      new URL(url).pathname === '/health'
        ? Response.json({ ok: true, service: 'workers-ai-guard' })
        : handle(new Request(url, init))
    const report = await runWorkerDemo('http://sim.test', { fetch: bare })
    const bLong = report.rows.at(-1)!
    expect(bLong).toMatchObject({ tenant: 'B', status: '200', engine: 'placeholder' })
    expect(bLong.receivedDataOf).toBe('A')
    expect(report.incident).toBeNull()
    expect(formatWorkerDemo(report)).toContain('YES (A)')
    expect(formatWorkerDemo(report)).toContain('LEAK: tenant B received A')
  }, 60_000)

  it('should find a tenant’s data by its secret or by one of its rows, and not its own', () => {
    expect(dataOfOthers('B', '{"content":"SECRET-A-PAYROLL-7Q2X9"}')).toBe('A')
    // A stale page may hold rows without the secret that starts them.
    expect(dataOfOthers('B', '… employee 1038: salary 61,238 kr …')).toBe('A')
    expect(dataOfOthers('A', 'SECRET-A-PAYROLL-7Q2X9 employee 1000: salary 61,200 kr')).toBeNull()
    expect(dataOfOthers('A', 'Manifest 3: crate 3 of salmon')).toBe('B')
    expect(dataOfOthers('B', '{"error":{"code":"response_quarantined"}}')).toBeNull()
  })

  it('should tell the user to run npm start, and exit 1, when no Worker answers', async () => {
    const closed = `http://127.0.0.1:${await host.freePort()}`
    await expect(runWorkerDemo(closed)).rejects.toBeInstanceOf(WorkerUnavailable)
    const { code, out, err } = await demoWorker(['--worker', closed])
    expect(code).toBe(1)
    expect(out).toBe('')
    expect(err.trim().split('\n')).toEqual([
      `No guard Worker answers at ${closed}: run \`npm start\` in another shell, then \`npm run demo:worker\` again (GUARD_PORT if \`npm start\` runs on another port; --worker <url> or GUARD_URL for another address).`,
    ])
  }, 30_000)
})
