/**
 * @module `npm run demo`: replays the GLM-5.3 incident on one simulated engine and prints what each
 * tenant received, then causes it once more through a running guard Worker (`npm start`) and prints
 * the console URL of that incident. `--json` prints the same rows as JSON (and nothing else).
 */
import { SimEngine } from '../sim/engine'
import type { AiRunner } from '../src/call/upstream'
import type { ModelProfile, VerdictLog } from '../src/guard/options'
import { guardAi } from '../src/surfaces/guard-ai'

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

function describeError(error: unknown): string {
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
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-+-'), ...body.map(line)].join('\n')
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
      onVerdict: (event) => verdicts.push(event),
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
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-+-'), ...body.map(line)].join('\n')
}

/** Where `npm start` serves the guard Worker. */
export const DEFAULT_WORKER_URL = 'http://localhost:8787'

/** The development tenant keys of wrangler.dev.toml. */
const DEV_KEYS = { A: 'dev-key-tenant-a', B: 'dev-key-tenant-b' }

/**
 * The incident scaled down for a running Worker (as test/support/leak-scenario.ts scales it): the
 * simulator's pool is 8,192 tokens, so B's ~12,000-token prompt passes the Worker's ceiling (its
 * profile believes the published 681,280) and meets the leak. Prefill at 10,000 tokens/s keeps A's
 * honest answer slower than any profile's physical bound, so only B's is withheld.
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
 * Replays the leak through a running guard Worker with its simulator (`npm start`), restoring the
 * simulator's settings afterwards, and resolves with the console URL of the incident B's request
 * became — or `undefined` when no guard Worker with a simulator answers at `base`.
 *
 * @example
 * const url = await causeIncidentOnWorker('http://localhost:8787') // …/admin/incidents/inc_…
 */
export async function causeIncidentOnWorker(base: string): Promise<string | undefined> {
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(60_000) })
  const health = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2_000) }).catch(
    () => undefined,
  )
  const service = health?.ok ? ((await health.json()) as { service?: string }).service : undefined
  if (service !== 'workers-ai-guard') return undefined
  const stats = await call('/sim/stats')
  if (!stats.ok) return undefined // a deployed Worker: no simulator to make leak
  const { config } = (await stats.json()) as { config: Record<string, unknown> }
  const json = (body: unknown, key?: string): RequestInit => ({
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify(body),
  })
  const chatBody = (inputs: Record<string, unknown>) => ({ model: DEMO_MODEL, ...inputs })
  try {
    await expectStatus(
      await call('/sim/config', json(WORKER_SIM)),
      200,
      'configuring the simulator',
    )
    const a = await call('/v1/chat/completions', json(chatBody(payrollRows(200)), DEV_KEYS.A))
    await expectStatus(a, 200, 'tenant A’s request')
    const b = await call('/v1/chat/completions', json(chatBody(tenantBLong(800)), DEV_KEYS.B))
    const text = await expectStatus(b, 502, 'tenant B’s over-pool request')
    const id = (JSON.parse(text) as { error?: { incident_id?: string } }).error?.incident_id
    if (!id) throw new Error(`tenant B’s request was withheld without an incident id: ${text}`)
    return `${base}/admin/incidents/${encodeURIComponent(id)}`
  } finally {
    // JSON has no Infinity: settings it turned into null are left as the demo set them.
    const restore = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== null))
    await call('/sim/config', json(restore)).catch(() => undefined)
  }
}

/** The body of `res`, or an error naming the step when its status is not `status`. */
async function expectStatus(res: Response, status: number, step: string): Promise<string> {
  const text = await res.text()
  if (res.status !== status) {
    throw new Error(`${step} answered ${res.status} (expected ${status}): ${text.slice(0, 300)}`)
  }
  return text
}

function workerUrl(argv: readonly string[]): string {
  const at = argv.indexOf('--worker')
  const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env
  return (at >= 0 ? argv[at + 1] : undefined) ?? env?.GUARD_URL ?? DEFAULT_WORKER_URL
}

async function main(argv: readonly string[]): Promise<void> {
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
  const base = workerUrl(argv)
  const url = await causeIncidentOnWorker(base)
  if (url) {
    console.log(
      `\nThe same leak through the guard Worker at ${base} was withheld as an incident. Open it in the console (log in with ADMIN_SECRET; dev-only-admin-secret under npm start):\n\n  ${url}`,
    )
  } else {
    console.log(
      `\nNo guard Worker answers at ${base}. Start one with \`npm start\` and run the demo again: it then ends with the console URL of the incident it causes there (--worker <url> or GUARD_URL for another address).`,
    )
  }
}
const argv = (globalThis as { process?: { argv: string[] } }).process?.argv ?? []
if (/(^|[\\/])demo\.ts$/.test(argv[1] ?? '')) {
  main(argv.slice(2)).catch((error: unknown) => {
    console.error(error)
    ;(globalThis as { process?: { exitCode?: number } }).process!.exitCode = 1
  })
}
