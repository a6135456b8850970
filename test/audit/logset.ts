/**
 * @module A log set from the leaking simulator, for the audit's tests and bench: several tenants'
 * honest traffic (short chats, documents, long prompts, multi-turn, retries that hit the prefix cache,
 * a system prompt every tenant shares) around prompts over the published pool (681,280 tokens) in
 * `pd-abort-leak` — unguarded, so their answers are built from other requests' stale pages — and the
 * same traffic through a guard that wrongly believes the pool is the window (its verdict lines). Then
 * writers for every format the audit reads.
 */
import { VirtualClock } from '../../sim/clock'
import { type SimConfig, SimEngine, type SimRequestRecord } from '../../sim/engine'
import type { ChatCompletion } from '../../sim/wire'
import { guardAi, type VerdictLog } from '../../src'

export const GLM = '@cf/zai-org/glm-5.3'
export const TENANTS = ['acme', 'globex', 'initech', 'umbrella'] as const
/** The published pool: what the incident's engine held. */
export const POOL = 681_280

/** The engine: the incident's pool and window, a realistic prefill speed, time virtual. */
export const SIM: Partial<SimConfig> = {
  mode: 'pd-abort-leak',
  poolTokens: POOL,
  contextWindow: 1_048_576,
  prefillTokensPerSecond: 50_000,
  decodeTokensPerSecond: 400,
  seed: 19,
}

/** One logged call. */
export interface SimCall {
  id: string
  tenant: string
  model: string
  startMs: number
  ttftMs: number
  durationMs: number
  inputs: Record<string, unknown>
  output: ChatCompletion
  /** The engine's own record (outcome `placeholder`: a leaked answer). */
  sim: SimRequestRecord
}

/** What the writers need of a call (the real-text log set's calls have it too). */
export type LoggedCall = Pick<
  SimCall,
  'id' | 'tenant' | 'model' | 'startMs' | 'ttftMs' | 'durationMs' | 'inputs' | 'output'
>

/** A log set: calls in time order, and which of them are the leaks. */
export interface LogSet {
  calls: SimCall[]
  leaks: SimCall[]
  honest: SimCall[]
}

/**
 * A small seeded PRNG (mulberry32).
 *
 * @example
 * const random = rng(19)
 */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** English words (from the project's own design notes): ordinary text, as a tokenizer sees it. */
const WORDS = (
  'the incident this project exists for source article seed dabd txt norwegian facts only ' +
  'english what happened model zai org glm cloudflare workers launched made private responses ' +
  'between and contained text from other customers recent requests every one was triggered ' +
  'request more than tokens advertised context window cache pool prefill gpus held could ' +
  'valid against still not fit real serving disaggrega ted built decode generated shared ' +
  'pages reused across zeroed two faults that had coincide configurat ion smaller known ' +
  'before launch pre tests checked http status engine performanc long contexts never content ' +
  'answers sglang tion did marked abort replaced token placeholde standalone ends error ' +
  'client mode aborted treated active forwarded reserved full original wrote page needed ' +
  'signalled transfer complete remaining prompts partial generation earlier users read them ' +
  'while answering public threads same path issue with allow auto truncate instead truncates ' +
  'silently normal rejects input length exceeds maximum allowed its limit min len max total ' +
  'num why monitoring saw nothing stream count matched coherent answer arrived faster whole ' +
  'have taken processing time ownership usual signal green fixed raised about twice fragile ' +
  'alone quantizati parallelis weights memory fraction change capacity next rollout stop ' +
  'bootstrap allocation added protection deferred release checksums late rdma writes can land ' +
  'already considered free canary checksum coverage does yet include flash deepseek named ' +
  'fully covered mandatory check distribute lessons turns into code trust proxy proof fits ' +
  'enforce measured safe ceiling margin tokenizer difference fail clear test result pipes ' +
  'verify came prompt data provenance coherence per canaries must echo detection any output ' +
  'evidence answered physically possible get prefilled suspicious back reaches recorded ' +
  'review told clearly delivered should minimise they send keep secrets out enough traceabili ' +
  'know processed provider reports guard design worker middleware typescript hono stands ' +
  'applicatio binding chat another ever first mechanism here line file fixes contracts shape ' +
  'everything fix yours well three guards verdict catches when acts but upstream call reject ' +
  'missing carries byte after ttft timing '
)
  .trim()
  .split(' ')

/** Words drawn at random: lines no two requests share by chance. */
function wordsOf(random: () => number, count: number): string {
  const out: string[] = []
  for (let i = 0; i < count; i++) out.push(WORDS[Math.floor(random() * WORDS.length)]!)
  return out.join(' ')
}

/** Lines that name their request, so a quote of them says whose data it is. */
export function documentLines(tag: string, lines: number, random: () => number): string {
  const out: string[] = []
  for (let i = 0; i < lines; i++) {
    out.push(`[${tag}] note ${i}: ${wordsOf(random, 9 + Math.floor(random() * 6))}.`)
  }
  return out.join('\n')
}

/** The system prompt every tenant's app sends: boilerplate, never evidence. */
export const SHARED_SYSTEM =
  'You are the assistant of a logistics platform. Answer from the provided material only, quote it where it helps, and keep every answer short and factual.'

interface Plan {
  tenant: string
  tag: string
  inputs: Record<string, unknown>
  leak: boolean
}

/** Approximate Qwen3 tokens per document line (measured once per build). */
async function tokensPerLine(engine: SimEngine): Promise<number> {
  const text = documentLines('probe-000', 400, rng(7))
  const tokens = await engine.countTokens({ messages: [{ role: 'user', content: text }] })
  return tokens / 400
}

/**
 * The traffic: `honest` requests spread over the tenants, with `leaks` over-pool prompts among them.
 */
async function plan(
  engine: SimEngine,
  honest: number,
  leaks: number,
  seed: number,
): Promise<Plan[]> {
  const random = rng(seed)
  const perLine = await tokensPerLine(engine)
  const plans: Plan[] = []
  const history = new Map<string, Plan[]>()
  const leakAt = new Set<number>()
  for (let i = 1; i <= leaks; i++) leakAt.add(Math.floor((i * (honest + leaks)) / (leaks + 1)))
  let leaksMade = 0
  for (let i = 0; i < honest + leaks; i++) {
    const tenant = TENANTS[Math.floor(random() * TENANTS.length)]!
    const tag = `${tenant}-${String(i).padStart(4, '0')}`
    const past = history.get(tenant) ?? []
    let p: Plan
    if (leakAt.has(i)) {
      // Between the pool and the window, in the model's own tokenizer: 760k tokens.
      const lines = Math.ceil(760_000 / perLine)
      const victim = TENANTS[leaksMade++ % TENANTS.length]!
      const leakTag = `${victim}-${String(i).padStart(4, '0')}`
      const content = `Please summarise this archive.\n${documentLines(leakTag, lines, random)}`
      p = { tenant: victim, tag: leakTag, inputs: chat(content), leak: true }
    } else {
      const kind = random()
      const size =
        kind < 0.55
          ? 2 + Math.floor(random() * 8)
          : kind < 0.9
            ? 40 + Math.floor(random() * 400)
            : kind < 0.93
              ? Math.floor((100_000 + random() * 150_000) / perLine)
              : 0
      const previous = past.at(-1)
      if (size === 0 && previous !== undefined && !previous.leak) {
        // A retry: the same request again (its prefix comes from the cache).
        p = { tenant, tag: previous.tag, inputs: previous.inputs, leak: false }
      } else {
        const body = documentLines(tag, Math.max(2, size), random)
        const turn = previous !== undefined && !previous.leak && random() < 0.15
        const messages: { role: string; content: string }[] = [
          { role: 'system', content: SHARED_SYSTEM },
        ]
        if (turn) {
          // A later turn of the same conversation: the earlier question and answer come back.
          const earlier = (previous.inputs.messages as { role: string; content: string }[]).filter(
            (m) => m.role === 'user',
          )
          messages.push(...earlier.slice(-1), {
            role: 'assistant',
            content: `Noted the material of ${previous.tag}.`,
          })
        }
        messages.push({ role: 'user', content: `Question ${tag}: what does this say?\n${body}` })
        p = { tenant, tag, inputs: { messages, max_tokens: 256 }, leak: false }
      }
    }
    plans.push(p)
    history.set(p.tenant, [...(history.get(p.tenant) ?? []), p].slice(-3))
  }
  return plans
}

function chat(content: string): Record<string, unknown> {
  return { messages: [{ role: 'user', content }], max_tokens: 256 }
}

/** Gaps between requests: 2 to 40 s of virtual time. */
function gap(random: () => number): number {
  return 2_000 + Math.floor(random() * 38_000)
}

/** 2026-09-01T10:00:00Z: within the incident's period. */
export const EPOCH = Date.UTC(2026, 8, 1, 10, 0, 0)

/**
 * Runs the traffic unguarded through the leaking engine and returns every call with its timing.
 *
 * @example
 * const set = await buildLogSet({ honest: 200, leaks: 5 })
 */
export async function buildLogSet(options: {
  honest: number
  leaks: number
  seed?: number
}): Promise<LogSet> {
  const clock = new VirtualClock(EPOCH)
  const engine = new SimEngine(SIM, { clock })
  const plans = await plan(engine, options.honest, options.leaks, options.seed ?? 19)
  const random = rng((options.seed ?? 19) + 1)
  const calls: SimCall[] = []
  let n = 0
  for (const p of plans) {
    clock.advance(gap(random))
    const startMs = clock.now()
    const output = (await engine.binding(p.tenant).run(GLM, p.inputs)) as ChatCompletion
    const sim = engine.stats().recent.at(-1)!
    const durationMs = clock.now() - startMs
    // The first event comes after the prefill and the first group of decoded tokens.
    const ttftMs = Math.min(durationMs, sim.prefillMs + (3 / 400) * 1000)
    calls.push({
      id: `req-${String(n++).padStart(4, '0')}-${p.tag}`,
      tenant: p.tenant,
      model: GLM,
      startMs,
      ttftMs,
      durationMs,
      inputs: p.inputs,
      output,
      sim,
    })
  }
  return {
    calls,
    leaks: calls.filter((c) => c.sim.outcome === 'placeholder'),
    honest: calls.filter((c) => c.sim.outcome !== 'placeholder'),
  }
}

/** A verdict line as an exporter keeps it: the guard's fields plus the log's time. */
export interface TimedVerdict {
  time: number
  verdict: VerdictLog
}

/**
 * The same traffic through a guard whose profile wrongly takes the pool for the window (as
 * `npm run start:unsafe-pool`): over-pool prompts reach the engine, and the guard's canary and timing
 * checks withhold what comes back. Returns its verdict lines.
 *
 * @example
 * const verdicts = await guardedVerdicts({ honest: 40, leaks: 2 })
 */
export async function guardedVerdicts(options: {
  honest: number
  leaks: number
  seed?: number
}): Promise<TimedVerdict[]> {
  const clock = new VirtualClock(EPOCH)
  const engine = new SimEngine(SIM, { clock })
  const plans = await plan(engine, options.honest, options.leaks, options.seed ?? 19)
  const random = rng((options.seed ?? 19) + 1)
  const lines: TimedVerdict[] = []
  const onVerdict = (verdict: VerdictLog): void => {
    lines.push({ time: clock.now(), verdict })
  }
  const guards = new Map<string, ReturnType<typeof guardAi>>()
  const errors: string[] = []
  let n = 0
  for (const p of plans) {
    clock.advance(gap(random))
    let guard = guards.get(p.tenant)
    if (guard === undefined) {
      guard = guardAi(engine.binding(p.tenant), {
        secret: 'audit-test-canary-secret-0123456789abcdef',
        tenant: p.tenant,
        models: { [GLM]: { kvPoolTokens: 1_048_576 } },
        hooks: {
          now: () => clock.now(),
          requestId: () => `g-${String(n++).padStart(4, '0')}`,
          onVerdict,
        },
      })
      guards.set(p.tenant, guard)
    }
    const before = lines.length
    try {
      await guard.run(GLM, p.inputs)
    } catch (error) {
      // Withheld or refused: the verdict line says which. Anything else is kept to be reported.
      if (lines.length === before)
        errors.push(error instanceof Error ? error.message : String(error))
    }
  }
  if (errors.length > 0) {
    throw new Error(
      `${errors.length} guarded requests failed without a verdict; first: ${errors[0]}`,
    )
  }
  return lines
}

// ------------------------------------------------------------------------------------ writers

const iso = (ms: number): string => new Date(ms).toISOString()

/**
 * OpenAI-format pairs, one JSON line per call; half give timestamps, half durations (both accepted).
 *
 * @example
 * await writeFile('app.jsonl', openAiLines(set.calls).join('\n'))
 */
export function openAiLines(calls: readonly LoggedCall[]): string[] {
  return calls.map((c, i) =>
    JSON.stringify(
      i % 2 === 0
        ? {
            id: c.id,
            started_at: iso(c.startMs),
            first_token_at: iso(c.startMs + c.ttftMs),
            ended_at: iso(c.startMs + c.durationMs),
            metadata: { tenant: c.tenant },
            request: { model: c.model, ...c.inputs },
            response: c.output,
          }
        : {
            request_id: c.id,
            timestamp: c.startMs,
            ttft_ms: c.ttftMs,
            duration_ms: c.durationMs,
            user: c.tenant,
            request: { model: c.model, ...c.inputs },
            response: c.output,
          },
    ),
  )
}

/** An AI Gateway list-API record with the bodies fetched per log id merged in. */
function gatewayRecord(c: LoggedCall): Record<string, unknown> {
  return {
    id: c.id,
    created_at: iso(c.startMs),
    model: c.model,
    provider: 'workers-ai',
    path: `${c.model}`,
    duration: Math.round(c.durationMs),
    tokens_in: c.output.usage.prompt_tokens,
    tokens_out: c.output.usage.completion_tokens,
    status_code: 200,
    success: true,
    cached: false,
    metadata: JSON.stringify({ tenant: c.tenant, app: 'logistics' }),
    request: { model: c.model, ...c.inputs },
    response: c.output,
  }
}

/**
 * AI Gateway records as JSON lines (Logpush-style export of list records with bodies).
 *
 * @example
 * await writeFile('gateway.jsonl', gatewayLines(set.calls).join('\n'))
 */
export function gatewayLines(calls: readonly LoggedCall[]): string[] {
  return calls.map((c) => JSON.stringify(gatewayRecord(c)))
}

/**
 * One AI Gateway list-API page, pretty-printed and newest first (the API's default order).
 *
 * @example
 * await writeFile('page-1.json', gatewayPage(set.calls))
 */
export function gatewayPage(calls: readonly LoggedCall[]): string {
  const result = [...calls].reverse().map(gatewayRecord)
  return JSON.stringify(
    {
      success: true,
      errors: [],
      result,
      result_info: { page: 1, per_page: result.length, count: result.length },
    },
    null,
    2,
  )
}

/**
 * Verdict lines: half plain (`{"event":"ai_guard_verdict",…,"time":…}`), half in the Workers
 * Logpush envelope (`{"EventTimestampMs":…,"Logs":[{"Message":["<line>"],…}]}`).
 *
 * @example
 * await writeFile('verdicts.jsonl', verdictLines(await guardedVerdicts(o)).join('\n'))
 */
export function verdictLines(verdicts: readonly TimedVerdict[]): string[] {
  return verdicts.map(({ time, verdict }, i) => {
    const line = JSON.stringify({ event: 'ai_guard_verdict', ...verdict })
    return i % 2 === 0
      ? JSON.stringify({ event: 'ai_guard_verdict', ...verdict, time: iso(time) })
      : JSON.stringify({
          EventTimestampMs: time,
          Outcome: 'ok',
          ScriptName: 'workers-ai-guard',
          Logs: [{ Level: 'log', Message: [line], TimestampMs: time }],
        })
  })
}
