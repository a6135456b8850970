/**
 * @module `npm run demo`: replays the GLM-5.3 incident on one simulated engine and prints what each
 * tenant received, then causes it once more through a running guard Worker (`npm start`) and prints
 * what each tenant received there and the incident. `--json` prints the in-process rows as JSON (and
 * nothing else); `--worker-only` (`npm run demo:worker`) runs the Worker part alone, `--json` too.
 */
import { SimEngine } from '../sim/engine'
import { guardAi } from '../src'
import type { AiRunner } from '../src/core/call/upstream'
import { GuardError, responseStatus } from '../src/core/errors'
import {
  BUILTIN_PROFILES,
  type ModelProfile,
  type VerdictLog,
} from '../src/core/vocabulary/options'

/** The model of the incident. */
export const DEMO_MODEL = '@cf/zai-org/glm-5.3'

/** One request of the scenario, as printed. Stable keys: a later change adds guarded columns. */
export interface DemoRow {
  /** What the request is. */
  request: string
  /** Who sent it. */
  tenant: string
  /** The simulated model's count of the prompt (its tokenizer, Qwen3 by default). */
  promptTokens: number
  /** `200`, or the error's status and code. */
  status: string
  /** Time to the first streamed byte, or null when nothing arrived. */
  ttftMs: number | null
  /** The start of what the tenant received (content, else reasoning), on one line. */
  received: string
  /** Tenants whose secret appears in what this tenant received, or null. */
  leaksSecretOf: string | null
}

/** Builds the runner a tenant talks to (the raw binding, or a guarded one). */
export type MakeRunner = (engine: SimEngine, account: string) => AiRunner

const SECRETS: Record<string, string> = { A: 'SECRET-A-PAYROLL-7Q2X9', B: 'SECRET-B-HARBOUR-K4M1' }

function tenantAPrompt(): Record<string, unknown> {
  const rows: string[] = []
  for (let i = 0; i < 11_000; i++) {
    rows.push(
      `${SECRETS.A} employee ${1000 + i}: salary 61,${200 + (i % 700)} kr, IBAN NO93 8601 ${1111 + i}`,
    )
  }
  return {
    messages: [
      { role: 'system', content: 'You are tenant A’s payroll assistant. Never disclose salaries.' },
      { role: 'user', content: `${rows.join('\n')}\nWhich employees earn more than 61,500 kr?` },
    ],
  }
}

function tenantBShort(): Record<string, unknown> {
  return {
    messages: [
      { role: 'system', content: `Tenant B logistics assistant. Internal ref ${SECRETS.B}.` },
      { role: 'user', content: 'Summarise our Q3 shipping plan in one line.' },
    ],
  }
}

function tenantBLong(lineCount: number): Record<string, unknown> {
  const lines: string[] = []
  for (let i = 0; i < lineCount; i++) {
    lines.push(`Manifest ${i}: crate ${i} of salmon for the northern quay, customs cleared.`)
  }
  return {
    messages: [
      { role: 'system', content: `Tenant B logistics assistant. Internal ref ${SECRETS.B}.` },
      { role: 'user', content: `${lines.join('\n')}\nList every crate that was not cleared.` },
    ],
  }
}

/** The published figures the scenario is built around. */
const POOL_TOKENS = 681_280
const WINDOW_TOKENS = 1_048_576

/**
 * B's over-pool prompt, sized in the engine's own tokenizer: halfway between the real pool and the
 * window (less the default output reserve), so it is over the pool and inside the window whatever the
 * simulated model's tokenizer splits digits and words into.
 */
async function tenantBOverPool(engine: SimEngine): Promise<Record<string, unknown>> {
  const target = (POOL_TOKENS + WINDOW_TOKENS - engine.stats().config.defaultMaxTokens) / 2
  let lines = 40_000
  // Tokens grow linearly with lines (a little faster as the numbers get longer): two corrections land
  // within a few hundred tokens of the target.
  for (let i = 0; i < 2; i++) {
    const tokens = await engine.countTokens(tenantBLong(lines))
    lines = Math.round((lines * target) / tokens)
  }
  return tenantBLong(lines)
}

/**
 * Runs the incident on a fresh engine (`pd-abort-leak`, published pool and window, prefill at
 * 300,000 tok/s): A's long prompt with a secret, B's normal request, B's over-pool request (sized with
 * the engine's own count, halfway between pool and window).
 *
 * @example
 * const rows = await runScenario((engine, account) => engine.binding(account))
 */
export async function runScenario(
  makeRunner: MakeRunner = (engine, account) => engine.binding(account),
): Promise<DemoRow[]> {
  const engine = new SimEngine({
    mode: 'pd-abort-leak',
    prefillTokensPerSecond: 300_000,
    decodeTokensPerSecond: 2_000,
  })
  const steps = [
    { request: 'long prompt with payroll secret', tenant: 'A', inputs: tenantAPrompt() },
    { request: 'normal short request', tenant: 'B', inputs: tenantBShort() },
    {
      request: 'over-pool prompt (inside window)',
      tenant: 'B',
      inputs: await tenantBOverPool(engine),
    },
  ]
  const rows: DemoRow[] = []
  for (const step of steps) {
    const runner = makeRunner(engine, step.tenant)
    const promptTokens = await engine.countTokens(step.inputs)
    const outcome = await streamAnswer(runner, step.inputs)
    const text = `${outcome.reasoning}\n${outcome.content}`
    const leaked = Object.keys(SECRETS).filter(
      (t) => t !== step.tenant && text.includes(SECRETS[t]!),
    )
    rows.push({
      request: step.request,
      tenant: step.tenant,
      promptTokens,
      status: outcome.status,
      ttftMs: outcome.ttftMs,
      received: oneLine(outcome.content || outcome.reasoning).slice(0, 80),
      leaksSecretOf: leaked.length > 0 ? leaked.join(', ') : null,
    })
  }
  return rows
}

interface StreamOutcome {
  status: string
  ttftMs: number | null
  reasoning: string
  content: string
}

/** Streams one answer, keeping whatever arrived before an error (a guard may cut a stream). */
async function streamAnswer(
  runner: AiRunner,
  inputs: Record<string, unknown>,
): Promise<StreamOutcome> {
  const out: StreamOutcome = { status: '200', ttftMs: null, reasoning: '', content: '' }
  const start = performance.now()
  let buffer = ''
  const decoder = new TextDecoder()
  try {
    const result = await runner.run(DEMO_MODEL, { ...inputs, stream: true })
    if (!(result instanceof ReadableStream)) throw new Error('expected a stream')
    for await (const chunk of result as ReadableStream<Uint8Array>) {
      out.ttftMs ??= Math.round(performance.now() - start)
      buffer += decoder.decode(chunk, { stream: true })
      let end = buffer.indexOf('\n\n')
      while (end >= 0) {
        readEvent(buffer.slice(0, end), out)
        buffer = buffer.slice(end + 2)
        end = buffer.indexOf('\n\n')
      }
    }
  } catch (error) {
    out.status = describeError(error)
  }
  return out
}

function readEvent(frame: string, out: StreamOutcome): void {
  const data = frame.startsWith('data: ') ? frame.slice(6) : ''
  if (data === '' || data === '[DONE]') return
  const event = JSON.parse(data) as {
    response?: string
    choices?: { delta?: { content?: string | null; reasoning_content?: string | null } }[]
  }
  out.content += event.response ?? event.choices?.[0]?.delta?.content ?? ''
  out.reasoning += event.choices?.[0]?.delta?.reasoning_content ?? ''
}

/** A refusal as an HTTP client of the guard would see it: the status it is sent with, and its code. */
function describeError(error: unknown): string {
  if (error instanceof GuardError) return `${responseStatus(error)} ${error.code}`
  if (typeof error === 'object' && error !== null) {
    const { status, code, message } = error as {
      status?: unknown
      code?: unknown
      message?: unknown
    }
    if (typeof status === 'number')
      return `${status} ${typeof code === 'string' ? code : ''}`.trim()
    if (typeof message === 'string') return `error: ${message.slice(0, 60)}`
  }
  return 'error'
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/** `header` and `body` as columns padded to their widest cell, joined by ` | `. */
function aligned(header: readonly string[], body: readonly string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)))
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-+-'), ...body.map(line)].join('\n')
}

/**
 * The rows as an aligned text table.
 *
 * @example
 * console.log(formatTable(await runScenario()))
 */
export function formatTable(rows: readonly DemoRow[]): string {
  const header = [
    'request',
    'tenant',
    'tokens',
    'status',
    'TTFT ms',
    'received (first 80 chars)',
    'has other tenant’s secret',
  ]
  const body = rows.map((r) => [
    r.request,
    r.tenant,
    r.promptTokens.toLocaleString('en-US'),
    r.status,
    r.ttftMs === null ? '-' : String(r.ttftMs),
    r.received,
    r.leaksSecretOf ? `YES (${r.leaksSecretOf})` : 'no',
  ])
  return aligned(header, body)
}

/** What the guard did with one request, beside what its tenant received. */
export interface GuardedCell {
  status: string
  /** `release`, `quarantine` (withheld after the upstream answered) or `reject` (never sent). */
  verdict: VerdictLog['action'] | 'none'
  reasons: string[]
  received: string
  leaksSecretOf: string | null
}

/** A request replayed unguarded, then guarded with the right ceiling, then with a wrong one. */
export interface DemoReport extends DemoRow {
  /** The guard with the published pool (681,280): the ceiling stops the over-pool request. */
  guarded: GuardedCell
  /**
   * The guard misconfigured with the pool equal to the advertised window, so the over-pool request
   * reaches the leaking engine: canaries and timing must stop it.
   */
  guardedWrongPool: GuardedCell
}

const DEMO_SECRET = 'demo-only-canary-secret-0123456789abcdef'

/**
 * The simulator's physics: it prefills at 300,000 tokens/s, so 600,000 tokens/s is its impossible speed.
 * (The simulator tokenizes every prompt on this machine's CPU before it answers, even the placeholder:
 * the bound leaves room for that, so a loaded machine does not make a placeholder look honest.)
 */
const DEMO_PROFILE: Partial<ModelProfile> = { maxPrefillTokensPerSecond: 600_000 }

async function guardedRun(profile: Partial<ModelProfile>): Promise<GuardedCell[]> {
  const verdicts: VerdictLog[] = []
  const rows = await runScenario((engine, account) =>
    guardAi(engine.binding(account), {
      secret: DEMO_SECRET,
      tenant: account,
      models: { [DEMO_MODEL]: profile },
      hooks: { onVerdict: (event) => verdicts.push(event) },
    }),
  )
  // One verdict per request, in order (retries are inside a request).
  return rows.map((row, i) => ({
    status: row.status,
    verdict: verdicts[i]?.action ?? 'none',
    reasons: verdicts[i]?.reasons ?? [],
    received: row.received,
    leaksSecretOf: row.leaksSecretOf,
  }))
}

/**
 * The whole demo: the incident unguarded, guarded, and guarded with a wrong pool figure.
 *
 * @example
 * for (const row of await runDemo()) console.log(row.request, row.status, row.guarded.verdict)
 */
export async function runDemo(): Promise<DemoReport[]> {
  const unguarded = await runScenario()
  const guarded = await guardedRun(DEMO_PROFILE)
  const wrongPool = await guardedRun({ ...DEMO_PROFILE, kvPoolTokens: 1_048_576 })
  return unguarded.map((row, i) => ({
    ...row,
    guarded: guarded[i]!,
    guardedWrongPool: wrongPool[i]!,
  }))
}

function cell(c: GuardedCell): string {
  const why = c.reasons.length > 0 ? ` (${c.reasons.join(', ')})` : ''
  const leak = c.leaksSecretOf ? ` LEAKS ${c.leaksSecretOf}` : ''
  return `${c.status} ${c.verdict}${why}${leak}`
}

/**
 * The guard columns as an aligned text table.
 *
 * @example
 * console.log(formatGuardTable(await runDemo()))
 */
export function formatGuardTable(rows: readonly DemoReport[]): string {
  const header = ['request', 'tenant', 'guarded (pool 681,280)', 'guarded, pool wrongly = window']
  const body = rows.map((r) => [r.request, r.tenant, cell(r.guarded), cell(r.guardedWrongPool)])
  return aligned(header, body)
}

/** Where `npm start` serves the guard Worker. */
/** Where `npm start` listens unless `GUARD_PORT` says otherwise. */
export const DEFAULT_WORKER_URL = 'http://localhost:8787'

/** The development tenant keys and admin secret of wrangler.dev.toml. */
const DEV_KEYS: Record<string, string> = { A: 'dev-key-tenant-a', B: 'dev-key-tenant-b' }
const DEV_ADMIN_SECRET = 'dev-only-admin-secret'

/**
 * The incident scaled down for a running Worker (as test/support/leak-scenario.ts scales it): the
 * simulator's pool is 8,192 of its tokens, so B's ~17,500-token prompt (in the simulator's tokens)
 * passes the Worker's ceiling (its profile believes the published 681,280) and meets the leak. Prefill
 * at 10,000 tokens/s keeps A's honest answer slower than any profile's physical bound, so only B's is
 * withheld.
 */
const WORKER_SIM = {
  mode: 'pd-abort-leak',
  poolTokens: 8_192,
  prefillTokensPerSecond: 10_000,
  decodeTokensPerSecond: 1_000_000,
}

function payrollRows(count: number): Record<string, unknown> {
  const rows: string[] = []
  for (let i = 0; i < count; i++) {
    rows.push(`${SECRETS.A} employee ${1000 + i}: salary 61,${200 + (i % 700)} kr`)
  }
  return {
    messages: [{ role: 'user', content: `${rows.join('\n')}\nWho earns more than 61,500 kr?` }],
  }
}

/**
 * What marks each tenant's data in a body: its secret, and its rows — a leak quotes stale pages from
 * anywhere in a prompt, so a row may arrive without the secret that starts it.
 */
const DATA_MARKS: Record<string, readonly RegExp[]> = {
  A: [/SECRET-A-PAYROLL/, /salary 61,\d{3} kr/],
  B: [/SECRET-B-HARBOUR/, /crate \d+ of salmon/],
}

/**
 * The tenants other than `tenant` whose data (secret or rows) is in `body`, or null when none is.
 *
 * @example
 * dataOfOthers('B', '{"content":"… SECRET-A-PAYROLL-7Q2X9 employee 1038 …"}') // 'A'
 */
export function dataOfOthers(tenant: string, body: string): string | null {
  const found = Object.keys(DATA_MARKS).filter(
    (t) => t !== tenant && DATA_MARKS[t]!.some((mark) => mark.test(body)),
  )
  return found.length > 0 ? found.join(', ') : null
}

/** One request of the demo through the Worker, as printed. */
export interface WorkerDemoRow {
  request: string
  tenant: string
  /**
   * The prompt as the simulator counted it (its tokenizer, over the prompt the guard sent: canary
   * included), in its last record of this request (a guard's retry is another record, its fresh
   * canary a token more or less), or null when the request never reached it.
   */
  simPromptTokens: number | null
  /** What the simulator did: `served`, `placeholder` (over its pool: answered from stale pages), …. */
  engine: string | null
  /** The Worker's status, with its error code when it answered an error. */
  status: string
  /** The incident id the Worker answered with, when it withheld the answer. */
  incidentId: string | null
  /** Other tenants whose data is in the body this tenant received (its raw text), or null. */
  receivedDataOf: string | null
}

/** The incident B's request became, as `GET /admin/incidents/<id>` returns it. */
export interface WorkerDemoIncident {
  id: string
  /** The incident's page in the console. */
  consoleUrl: string
  reasons: string[]
  sourceTenants: string[]
  /** Tenants whose data is in the withheld text (kept in the store, never sent): the leak stopped. */
  withheldDataOf: string | null
}

/** `npm run demo:worker`'s findings. Prompt sizes are the simulator's tokens; the ceiling is not. */
export interface WorkerDemoReport {
  worker: string
  /** The simulator's tokenizer: the unit of every prompt size and of `simPoolTokens`. */
  simTokenizer: string
  /** The pool the demo set on the simulator for its requests (its settings are restored after). */
  simPoolTokens: number
  /** The pool the Worker states when it refuses an oversized `max_tokens`, or null if it stated none. */
  workerPoolTokens: number | null
  /**
   * The Worker's prompt ceiling: its stated pool less the default output reserve. In the guard's own
   * estimate (o200k family bound with margins), which counts more than the simulator's tokenizer.
   */
  workerCeilingTokens: number | null
  rows: WorkerDemoRow[]
  incident: WorkerDemoIncident | null
}

/** How the demo reaches a Worker (a fake one in tests). */
export type Fetcher = (url: string, init?: RequestInit) => Promise<Response>

/** Options of {@link runWorkerDemo}. */
export interface WorkerDemoOptions {
  /** @default globalThis.fetch */
  fetch?: Fetcher
  /** The Worker's `ADMIN_SECRET`. @default 'dev-only-admin-secret' (wrangler.dev.toml) */
  adminSecret?: string
}

/** No guard Worker with a simulator answers where the demo looked; the message says what to run. */
export class WorkerUnavailable extends Error {}

type Call = (path: string, init?: RequestInit) => Promise<Response>

/** The part of `/sim/stats` the demo reads. */
interface SimStatsView {
  config: Record<string, unknown> & { tokenizer: string }
  requests: { total: number }
  recent: { ordinal: number; promptTokens: number; outcome: string }[]
}

function post(body: unknown, key?: string): RequestInit {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify(body),
  }
}

async function simStats(call: Call): Promise<SimStatsView> {
  return JSON.parse(await expectStatus(await call('/sim/stats'), 200, 'reading /sim/stats'))
}

/**
 * How long `/health` may take: a refused connection fails at once, but `wrangler dev` answers its first
 * request after a reload (an edit under src/) in seconds.
 */
const HEALTH_TIMEOUT_MS = 20_000

/** Throws {@link WorkerUnavailable} unless a guard Worker with its simulator answers at `base`. */
async function requireSimulatorWorker(fetcher: Fetcher, base: string): Promise<void> {
  const health = await fetcher(`${base}/health`, {
    signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
  }).catch(() => undefined)
  const service = health?.ok
    ? ((await health.json().catch(() => ({}))) as { service?: string }).service
    : undefined
  if (service !== 'workers-ai-guard') {
    throw new WorkerUnavailable(
      `No guard Worker answers at ${base}: run \`npm start\` in another shell, then \`npm run demo:worker\` again (GUARD_PORT if \`npm start\` runs on another port; --worker <url> or GUARD_URL for another address).`,
    )
  }
  const stats = await fetcher(`${base}/sim/stats`, {
    signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
  })
  if (!stats.ok) {
    // A deployed Worker: no simulator to make leak.
    throw new WorkerUnavailable(
      `The guard Worker at ${base} has no simulator (GET /sim/stats answered ${stats.status}): the demo needs \`npm start\`, which binds one; run it in another shell.`,
    )
  }
}

/**
 * The pool the Worker states for the demo's model: it refuses a `max_tokens` of 2,000,000 before any
 * upstream call, naming the tokens it can serve for prompt and output together.
 */
async function statedPool(call: Call): Promise<number | null> {
  const body = {
    model: DEMO_MODEL,
    max_tokens: 2_000_000,
    messages: [{ role: 'user', content: 'Hi' }],
  }
  const text = await (await call('/v1/chat/completions', post(body, DEV_KEYS.A))).text()
  const figure = /can serve: ([\d,]+) tokens for prompt and output together/.exec(text)?.[1]
  return figure === undefined ? null : Number(figure.replaceAll(',', ''))
}

interface WorkerStep {
  request: string
  tenant: string
  inputs: Record<string, unknown>
}

/** Sends one step and reads what the simulator recorded of it and what the tenant received. */
async function workerStep(call: Call, step: WorkerStep): Promise<WorkerDemoRow> {
  const since = (await simStats(call)).requests.total
  const res = await call(
    '/v1/chat/completions',
    post({ model: DEMO_MODEL, ...step.inputs }, DEV_KEYS[step.tenant]),
  )
  const body = await res.text()
  const records = (await simStats(call)).recent.filter((r) => r.ordinal >= since)
  let error: { code?: string; incident_id?: string } | undefined
  try {
    error = (JSON.parse(body) as { error?: typeof error }).error
  } catch {
    // A body that is not JSON carries no error code; it is still checked for other tenants' data.
  }
  return {
    request: step.request,
    tenant: step.tenant,
    simPromptTokens: records.at(-1)?.promptTokens ?? null,
    engine: records.length > 0 ? [...new Set(records.map((r) => r.outcome))].join(', ') : null,
    status: error?.code ? `${res.status} ${error.code}` : String(res.status),
    incidentId: error?.incident_id ?? null,
    receivedDataOf: dataOfOthers(step.tenant, body),
  }
}

async function readIncident(
  call: Call,
  base: string,
  row: WorkerDemoRow & { incidentId: string },
  adminSecret: string,
): Promise<WorkerDemoIncident> {
  const path = `/admin/incidents/${encodeURIComponent(row.incidentId)}`
  const res = await call(path, { headers: { authorization: `Bearer ${adminSecret}` } })
  const text = await expectStatus(res, 200, `GET ${path} (set ADMIN_SECRET to the Worker's)`)
  const record = JSON.parse(text) as {
    reasons?: string[]
    sourceTenants?: string[]
    withheld?: unknown
  }
  return {
    id: row.incidentId,
    consoleUrl: `${base}${path}`,
    reasons: record.reasons ?? [],
    sourceTenants: record.sourceTenants ?? [],
    withheldDataOf: dataOfOthers(row.tenant, JSON.stringify(record.withheld ?? '')),
  }
}

/**
 * Replays the leak through a running guard Worker with its simulator (`npm start`): shrinks the
 * simulator's pool to 8,192 of its tokens, sends B's short request, A's payroll prompt and B's
 * over-pool prompt, checks each body received for the other tenant's data, reads the incident from the
 * admin API, and restores the simulator's settings. Throws {@link WorkerUnavailable} when no guard
 * Worker with a simulator answers at `base`.
 *
 * @example
 * const report = await runWorkerDemo('http://localhost:8787')
 * console.log(formatWorkerDemo(report))
 */
export async function runWorkerDemo(
  base: string,
  options: WorkerDemoOptions = {},
): Promise<WorkerDemoReport> {
  const fetcher = options.fetch ?? ((url, init) => fetch(url, init))
  const call: Call = (path, init = {}) =>
    fetcher(`${base}${path}`, { ...init, signal: AbortSignal.timeout(60_000) })
  await requireSimulatorWorker(fetcher, base)
  const { config } = await simStats(call)
  try {
    await expectStatus(
      await call('/sim/config', post(WORKER_SIM)),
      200,
      'configuring the simulator',
    )
    const workerPoolTokens = await statedPool(call)
    const reserve = BUILTIN_PROFILES[DEMO_MODEL]!.defaultOutputReserve
    // B's short request first: sent just before the over-pool prompt, whose prefix it shares, its
    // cached pages were what that prompt's stale pages held (measured: withheld only as
    // echo_missing_repeatedly after three attempts, no canary of A's to name the source).
    const steps: WorkerStep[] = [
      { request: 'normal short request', tenant: 'B', inputs: tenantBShort() },
      { request: 'long prompt with payroll secret', tenant: 'A', inputs: payrollRows(200) },
      { request: 'over-pool prompt', tenant: 'B', inputs: tenantBLong(800) },
    ]
    const rows: WorkerDemoRow[] = []
    for (const step of steps) rows.push(await workerStep(call, step))
    const withheld = rows.find((r): r is WorkerDemoRow & { incidentId: string } => !!r.incidentId)
    return {
      worker: base,
      simTokenizer: config.tokenizer,
      simPoolTokens: WORKER_SIM.poolTokens,
      workerPoolTokens,
      workerCeilingTokens: workerPoolTokens === null ? null : workerPoolTokens - reserve,
      rows,
      incident: withheld
        ? await readIncident(call, base, withheld, options.adminSecret ?? DEV_ADMIN_SECRET)
        : null,
    }
  } finally {
    // JSON has no Infinity: settings it turned into null are left as the demo set them.
    const restore = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== null))
    await call('/sim/config', post(restore)).catch(() => undefined)
  }
}

const fmt = (n: number | null) => (n === null ? '-' : n.toLocaleString('en-US'))

/**
 * The Worker demo as text: what was set, a row per request, and the incident's console URL and
 * reasons.
 *
 * @example
 * console.log(formatWorkerDemo(await runWorkerDemo('http://localhost:8787')))
 */
export function formatWorkerDemo(report: WorkerDemoReport): string {
  const ceiling = report.workerCeilingTokens
  const lines = [
    `Through the guard Worker at ${report.worker}: the simulator's pool set to ${fmt(report.simPoolTokens)} of its tokens (${report.simTokenizer}) for these requests, its settings restored after.`,
    ceiling === null
      ? 'The Worker stated no pool for the model.'
      : `The Worker's ceiling: ${fmt(ceiling)} tokens of the guard's own estimate (o200k family bound with margins), the ${fmt(report.workerPoolTokens)}-token pool it states less the ${fmt((report.workerPoolTokens ?? 0) - ceiling)}-token output reserve.`,
    '',
    aligned(
      [
        'request',
        'tenant',
        `prompt (${report.simTokenizer} tokens)`,
        'sim pool',
        'Worker ceiling',
        'engine',
        'status',
        'received other tenant’s data',
      ],
      report.rows.map((r) => [
        r.request,
        r.tenant,
        fmt(r.simPromptTokens),
        fmt(report.simPoolTokens),
        fmt(ceiling),
        r.engine ?? '-',
        r.status,
        r.receivedDataOf ? `YES (${r.receivedDataOf})` : 'no',
      ]),
    ),
  ]
  const leaks = report.rows.filter((r) => r.receivedDataOf)
  for (const r of leaks) {
    lines.push('', `LEAK: tenant ${r.tenant} received ${r.receivedDataOf}'s data (${r.request}).`)
  }
  const incident = report.incident
  if (incident) {
    const withheld = incident.withheldDataOf
      ? `its withheld text holds ${incident.withheldDataOf}'s data (kept in the quarantine store, never sent)`
      : 'its withheld text holds no other tenant’s data'
    lines.push(
      '',
      `Incident ${incident.id}: ${withheld}.`,
      `  console:   ${incident.consoleUrl} (log in with ADMIN_SECRET; dev-only-admin-secret under npm start)`,
      `  admin API: GET /admin/incidents/${incident.id} -> reasons ${incident.reasons.join(', ') || '-'}; source tenants ${incident.sourceTenants.join(', ') || '-'}`,
    )
  } else if (leaks.length === 0) {
    lines.push('', 'No request was withheld: no incident.')
  }
  return lines.join('\n')
}

/**
 * Causes the leak on a running guard Worker (see {@link runWorkerDemo}) and resolves with the console
 * URL of the incident B's request became — or `undefined` when no guard Worker with a simulator answers.
 *
 * @example
 * const url = await causeIncidentOnWorker('http://localhost:8787') // …/admin/incidents/inc_…
 */
export async function causeIncidentOnWorker(base: string): Promise<string | undefined> {
  let report: WorkerDemoReport
  try {
    report = await runWorkerDemo(base)
  } catch (error) {
    if (error instanceof WorkerUnavailable) return undefined
    throw error
  }
  if (!report.incident) {
    throw new Error(`B's over-pool request was not withheld: ${JSON.stringify(report.rows)}`)
  }
  return report.incident.consoleUrl
}

/** The body of `res`, or an error naming the step when its status is not `status`. */
async function expectStatus(res: Response, status: number, step: string): Promise<string> {
  const text = await res.text()
  if (res.status !== status) {
    throw new Error(`${step} answered ${res.status} (expected ${status}): ${text.slice(0, 300)}`)
  }
  return text
}

type NodeProcess = { argv: string[]; env: Record<string, string | undefined>; exitCode?: number }
const nodeProcess = (globalThis as { process?: NodeProcess }).process

/**
 * The Worker the demo talks to: `--worker <url>`, else `GUARD_URL`, else `npm start`'s own address on
 * `GUARD_PORT` (8787), the one setting `npm start`, the demos and the README's lines follow.
 *
 * @example
 * workerUrl([], { GUARD_PORT: '9000' }) // 'http://localhost:9000'
 */
export function workerUrl(
  argv: readonly string[],
  env: Record<string, string | undefined> = nodeProcess?.env ?? {},
): string {
  const at = argv.indexOf('--worker')
  const flag = at >= 0 ? argv[at + 1] : undefined
  const port = env.GUARD_PORT?.trim()
  return flag ?? (env.GUARD_URL || (port ? `http://localhost:${port}` : DEFAULT_WORKER_URL))
}

/** `npm run demo:worker`: the Worker demo alone; exit code 1 when no Worker answers or data leaked. */
async function mainWorker(base: string, json: boolean): Promise<void> {
  let report: WorkerDemoReport
  try {
    report = await runWorkerDemo(base, { adminSecret: nodeProcess?.env.ADMIN_SECRET })
  } catch (error) {
    if (!(error instanceof WorkerUnavailable)) throw error
    console.error(error.message)
    if (nodeProcess) nodeProcess.exitCode = 1
    return
  }
  console.log(json ? JSON.stringify(report, null, 2) : formatWorkerDemo(report))
  if (report.rows.some((r) => r.receivedDataOf) && nodeProcess) nodeProcess.exitCode = 1
}

async function main(argv: readonly string[]): Promise<void> {
  const base = workerUrl(argv)
  if (argv.includes('--worker-only')) return mainWorker(base, argv.includes('--json'))
  const rows = await runDemo()
  if (argv.includes('--json')) {
    console.log(JSON.stringify(rows, null, 2))
    return
  }
  console.log(
    'Replaying the GLM-5.3 incident: window 1,048,576 tokens, KV pool 681,280 tokens, pd-abort-leak.\n',
  )
  console.log('Unguarded (env.AI directly):\n')
  console.log(formatTable(rows))
  console.log('\nThe same requests through workers-ai-guard:\n')
  console.log(formatGuardTable(rows))
  try {
    const report = await runWorkerDemo(base, { adminSecret: nodeProcess?.env.ADMIN_SECRET })
    console.log(`\nThe same leak through the guard Worker:\n\n${formatWorkerDemo(report)}`)
  } catch (error) {
    if (!(error instanceof WorkerUnavailable)) throw error
    console.log(
      `\nNo guard Worker answers at ${base}. Start one with \`npm start\` and run the demo again (or \`npm run demo:worker\`): it then ends with the same leak through the Worker and the console URL of the incident it causes there (GUARD_PORT if \`npm start\` runs on another port; --worker <url> or GUARD_URL for another address).`,
    )
  }
}
if (/(^|[\\/])demo\.ts$/.test(nodeProcess?.argv[1] ?? '')) {
  main(nodeProcess!.argv.slice(2)).catch((error: unknown) => {
    console.error(error)
    nodeProcess!.exitCode = 1
  })
}
