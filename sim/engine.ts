/**
 * @module SimEngine: a deterministic stand-in for the Workers AI binding that reproduces the GLM-5.3
 * cross-tenant KV-cache leak (INCIDENT.md). Pure TypeScript, no `cloudflare:*` import: Node can run it.
 */

import { REAL_CLOCK, type SimClock } from './clock'
import {
  DEFAULT_SIM_CONFIG,
  resolveSimConfig,
  SIM_MODES,
  type SimConfig,
  type SimMode,
} from './config'
import { AI_ERROR, SimAiError, sglangLengthMessage, windowMessage } from './errors'
import { generate, wantsJson } from './model'
import { EMPTY_SLOT, KvPool, type PageWriter, type PoolStats } from './pool'
import { hashPage, hashString, mixSeed, PURPOSE, prng, randomInt } from './random'
import { renderPrompt, TemplateError } from './template'
import { forgetLongTexts, loadTokenizer, type SimTokenizer } from './tokenizer'
import { type SimToolCall, toolCallFor } from './tools'
import {
  type Answer,
  type ChatCompletion,
  chatCompletion,
  chatEvents,
  concatBytes,
  type LegacyCompletion,
  legacyCompletion,
  legacyEvents,
  splitEvent,
  sseBytes,
  type TimedEvent,
} from './wire'

export type { SimConfig, SimMode, SimTokenizerName } from './config'

/** What happened to a request. */
export type SimOutcome =
  /** Prefilled in full and answered from its own pages. */
  | 'served'
  /** Over the real limit in `pd-abort-leak`: swapped for a one-token placeholder, answered from stale pages. */
  | 'placeholder'
  /** Over the real limit in `truncate`: the end of the prompt was dropped. */
  | 'truncated'
  /**
   * `stale-pages` (the tail) or `stale-middle` (a stretch between written first and last pages): pages read
   * before they were written; `staleFirstPage` and `stalePages` say which, `staleSources` whose data.
   */
  | 'stale'
  /** Over the advertised window, or over the real limit in `fixed`/`stale-pages`/`stale-middle`. */
  | 'rejected'
  /** No KV pages came free in time. */
  | 'capacity'
  /** Malformed input. */
  | 'invalid'

/** One request as the engine saw it (for tests, the bench and `stats()`). */
export interface SimRequestRecord {
  ordinal: number
  account: string
  model: string
  mode: SimMode
  outcome: SimOutcome
  /** Tokens of the rendered prompt, in the configured tokenizer. */
  promptTokens: number
  /** What `usage.prompt_tokens` reports. */
  reportedPromptTokens: number
  /** The request's `cache_salt` as received (vLLM's field), or null when it sent none. */
  cacheSalt: string | null
  /** Prompt tokens served from the prefix cache. */
  cachedTokens: number
  /** Prompt tokens prefill actually computed and wrote. */
  prefilledTokens: number
  /** Tokens decode read from its pages (stale ones included). */
  visibleTokens: number
  /** Pages held by the request. */
  pages: number
  /** Pages decode read before they were written. */
  stalePages: number
  /**
   * Index in the request's page table of the first page read before it was written (the stale pages are
   * `[staleFirstPage, staleFirstPage + stalePages)`), or null when none was.
   */
  staleFirstPage: number | null
  /** Whose data the stale pages held: their last writers, in order of first appearance in the stretch. */
  staleSources: SimStaleSource[]
  /**
   * The request's `x-session-affinity` (binding: `options.extraHeaders`; HTTP: the header), or null. One
   * engine: it routes nothing here, it is recorded so tests can see how a gateway scopes it.
   */
  affinity: string | null
  /** Simulated prefill time. */
  prefillMs: number
  /** Echo token the model began its content with (text) or put in its first member (JSON), if any. */
  echoed: string | null
  /** Whether the request asked for a JSON object (`response_format` json_object/json_schema, `guided_json`). */
  json: boolean
}

/** One writer of a request's stale pages: the request that last wrote into them, and how many. */
export interface SimStaleSource {
  /** Ordinal of the writing request on this engine (also the tail of its `id`), or null: never written. */
  ordinal: number | null
  /** Account of the writing request, or null for pages never written (they read as nothing). */
  account: string | null
  /** Session affinity of the writing request, if it sent one. */
  affinity: string | null
  /** Stale pages this writer wrote last. */
  pages: number
}

/** Pool figures and request counters. */
export interface SimStats {
  config: SimConfig
  pool: PoolStats
  requests: {
    total: number
    byMode: Record<SimMode, number>
    byOutcome: Record<SimOutcome, number>
  }
  /** The most recent requests, newest last (at most 32). */
  recent: SimRequestRecord[]
}

/** The binding's `run()` shape; `engine.binding(account)` returns one. */
export interface SimBinding {
  run(
    model: string,
    inputs: Record<string, unknown>,
    options?: Record<string, unknown>,
  ): Promise<unknown>
}

/** What `request()` returns: a completion object, or an SSE byte stream for `stream: true`. */
export type SimResult = ChatCompletion | LegacyCompletion | ReadableStream<Uint8Array>

/** A request as the engine takes it. */
export interface SimRequest {
  model: string
  inputs: Record<string, unknown>
  /**
   * Owner of the prefix cache entries: the account (credential) the request came in on. A gateway that
   * serves many tenants under one credential shares one cache between them unless it salts requests.
   */
  account: string
  /** Force a wire format; by default `legacyModels` answer legacy, every other model chat. */
  format?: 'chat' | 'legacy'
  /** The request's `x-session-affinity`, recorded only (one engine: nothing to route). */
  affinity?: string | null
}

/**
 * The `x-session-affinity` of a binding call's options (`options.extraHeaders`, name matched without
 * regard to case, as HTTP does), or null when it carries no string one.
 *
 * @example
 * sessionAffinity({ extraHeaders: { 'x-session-affinity': 's-1' } }) // 's-1'
 */
export function sessionAffinity(options: unknown): string | null {
  if (typeof options !== 'object' || options === null) return null
  const headers = (options as Record<string, unknown>).extraHeaders
  if (typeof headers !== 'object' || headers === null) return null
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'x-session-affinity' && typeof value === 'string') return value
  }
  return null
}

/** What vLLM answers for a `cache_salt` that is not a non-empty string. */
const CACHE_SALT_MESSAGE = "Parameter 'cache_salt' must be a non-empty string if provided."

const OUTCOMES: readonly SimOutcome[] = [
  'served',
  'placeholder',
  'truncated',
  'stale',
  'rejected',
  'capacity',
  'invalid',
]

/**
 * The simulated inference engine: one KV pool shared by every request (and every account) it serves.
 *
 * @example
 * const engine = new SimEngine({ mode: 'pd-abort-leak', poolTokens: 4096 })
 * const ai = engine.binding('tenant-b')
 * const out = await ai.run('@cf/zai-org/glm-5.3', { messages: [{ role: 'user', content: 'hi' }] })
 */
export class SimEngine {
  private readonly base: SimConfig
  private config: SimConfig
  private pool: KvPool
  private ordinal = 0
  private byMode = zeroCounts(SIM_MODES)
  private byOutcome = zeroCounts(OUTCOMES)
  private recent: SimRequestRecord[] = []
  private readonly clock: SimClock

  constructor(config: Partial<SimConfig> = {}, options: { clock?: SimClock } = {}) {
    this.clock = options.clock ?? REAL_CLOCK
    this.base = resolveSimConfig(DEFAULT_SIM_CONFIG, config)
    this.config = this.base
    this.pool = new KvPool(this.config.poolTokens, this.config.pageSize)
  }

  /**
   * Changes settings at runtime. A new pool size, page size or tokenizer empties the pool (a page of
   * another vocabulary's ids would decode to noise); everything else keeps its content (stale pages
   * included).
   */
  configure(partial: Partial<SimConfig>): SimConfig {
    const next = resolveSimConfig(this.config, partial)
    if (
      next.poolTokens !== this.config.poolTokens ||
      next.pageSize !== this.config.pageSize ||
      next.tokenizer !== this.config.tokenizer
    ) {
      this.pool.close()
      this.pool = new KvPool(next.poolTokens, next.pageSize)
    }
    this.config = next
    return { ...next }
  }

  /** Back to the constructor's config (plus `config`), an empty pool, and zeroed counters and ordinals. */
  reset(config?: Partial<SimConfig>): SimConfig {
    this.config = resolveSimConfig(this.base, config)
    this.pool.close()
    this.pool = new KvPool(this.config.poolTokens, this.config.pageSize)
    this.ordinal = 0
    this.byMode = zeroCounts(SIM_MODES)
    this.byOutcome = zeroCounts(OUTCOMES)
    this.recent = []
    forgetLongTexts()
    return { ...this.config }
  }

  /** Pool figures, request counters and the latest request records. */
  stats(): SimStats {
    return {
      config: { ...this.config, legacyModels: [...this.config.legacyModels] },
      pool: this.pool.stats(),
      requests: {
        total: this.ordinal,
        byMode: { ...this.byMode },
        byOutcome: { ...this.byOutcome },
      },
      recent: this.recent.map((r) => ({
        ...r,
        staleSources: r.staleSources.map((x) => ({ ...x })),
      })),
    }
  }

  /**
   * The model's token count of a request (the configured tokenizer over the chat template), without
   * running it: what `usage.prompt_tokens` reports when the prompt is served whole.
   */
  async countTokens(inputs: Record<string, unknown>): Promise<number> {
    const tok = await loadTokenizer(this.config.tokenizer)
    return tok.encode(renderPrompt(inputs)).length
  }

  /**
   * An object with the binding's `run()` shape whose requests belong to `account`; `options.extraHeaders`'s
   * `x-session-affinity` is recorded as the request's `affinity`, the rest of `options` is ignored.
   */
  binding(account = 'default'): SimBinding {
    return {
      run: (model, inputs, options) =>
        this.request({ model, inputs, account, affinity: sessionAffinity(options) }),
    }
  }

  /** Runs one request: admission, paging, prefill, decode, and the answer in the binding's format. */
  async request(req: SimRequest): Promise<SimResult> {
    const config = this.config
    const pool = this.pool
    const ordinal = this.ordinal++
    this.byMode[config.mode]++
    const record: SimRequestRecord = {
      ordinal,
      account: req.account,
      model: req.model,
      mode: config.mode,
      outcome: 'served',
      promptTokens: 0,
      reportedPromptTokens: 0,
      cacheSalt: null,
      cachedTokens: 0,
      prefilledTokens: 0,
      visibleTokens: 0,
      pages: 0,
      stalePages: 0,
      staleFirstPage: null,
      staleSources: [],
      affinity: typeof req.affinity === 'string' ? req.affinity : null,
      prefillMs: 0,
      echoed: null,
      json: false,
    }
    // Every page this request writes is credited to it, so a later stale read can say whose data it was.
    const writer: PageWriter = { ordinal, account: req.account, affinity: record.affinity }
    const fail = (outcome: SimOutcome, error: Error): never => {
      this.note({ ...record, outcome })
      this.byOutcome[outcome]++
      throw error
    }
    let tok: SimTokenizer
    try {
      tok = await loadTokenizer(config.tokenizer)
    } catch (error) {
      // A tokenizer this build does not carry (vitest's simulator Worker): counted, then thrown as is.
      return fail('invalid', error as Error)
    }
    const inputs = req.inputs
    if (typeof inputs !== 'object' || inputs === null) {
      return fail('invalid', new SimAiError(AI_ERROR.invalidInput, 'inputs must be an object'))
    }
    let text: string
    try {
      text = renderPrompt(inputs)
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error
      return fail('invalid', new SimAiError(AI_ERROR.invalidInput, error.message))
    }
    const salt = inputs.cache_salt
    if (salt !== undefined && salt !== null && (typeof salt !== 'string' || salt === '')) {
      // vLLM's own check (protocol.py): an empty salt would silently mean "no isolation".
      return fail('invalid', new SimAiError(AI_ERROR.invalidInput, CACHE_SALT_MESSAGE))
    }
    record.cacheSalt = typeof salt === 'string' ? salt : null
    const asked = readMaxTokens(inputs)
    if (asked === null) {
      return fail(
        'invalid',
        new SimAiError(AI_ERROR.invalidInput, 'max_tokens must be a positive integer'),
      )
    }
    const format = req.format ?? (config.legacyModels.includes(req.model) ? 'legacy' : 'chat')
    record.json = wantsJson(inputs)
    const tokens = tok.encode(text)
    const n = tokens.length
    record.promptTokens = n
    // Workers AI admits on input plus the output it may have to hold, and says so with both summed:
    // without a max_tokens of its own, the request is admitted on the default reserve.
    const maxTokens = asked ?? config.defaultMaxTokens
    if (n + maxTokens > config.contextWindow) {
      return fail(
        'rejected',
        new SimAiError(AI_ERROR.contextLength, windowMessage(n + maxTokens, config.contextWindow)),
      )
    }
    const ps = pool.pageSize
    // SGLang: max_req_input_len = min(context_len - 1, max_total_num_tokens - 1) - 5.
    const limit = Math.min(config.contextWindow - 1, pool.totalPages * ps - 1) - 5
    const over = n > limit
    if (
      over &&
      (config.mode === 'fixed' || config.mode === 'stale-pages' || config.mode === 'stale-middle')
    ) {
      return fail('rejected', new SimAiError(AI_ERROR.contextLength, sglangLengthMessage(n, limit)))
    }

    let pages: number[]
    let length: number
    let prefilled: number
    const entries: { page: number; key: number }[] = []
    if (over && config.mode === 'pd-abort-leak') {
      // The incident: the request is replaced by a one-token placeholder, but decode still reserves
      // pages for the whole original length, and prefill writes only the placeholder's page before
      // signalling "transfer complete". Everything else decode reads is whatever those pages held.
      record.outcome = 'placeholder'
      try {
        pages = await pool.acquire(
          Math.min(Math.ceil(n / ps), pool.totalPages),
          config.queueTimeoutMs,
        )
      } catch (error) {
        return fail('capacity', error as Error)
      }
      pool.write(pages[0]!, 0, tokens, 0, 1, writer)
      length = Math.min(n, pages.length * ps)
      prefilled = 1
      record.reportedPromptTokens = n
    } else {
      length = over ? limit : n
      if (over) record.outcome = 'truncated'
      record.reportedPromptTokens = length
      const root = cacheRoot(req.account, record.cacheSalt)
      const match = config.prefixCache
        ? pool.matchPrefix(root, tokens, Math.floor((length - 1) / ps))
        : { pages: [], keys: [] }
      let fresh: number[]
      try {
        fresh = await pool.acquire(
          Math.ceil(length / ps) - match.pages.length,
          config.queueTimeoutMs,
        )
      } catch (error) {
        pool.release(match.pages, [])
        return fail('capacity', error as Error)
      }
      pages = [...match.pages, ...fresh]
      let stale = 0
      let staleFirst = pages.length
      const staleRand = prng(mixSeed(config.seed, ordinal, PURPOSE.stale))
      if (config.mode === 'stale-pages' && fresh.length > 0 && staleRand() < config.staleRate) {
        // A late RDMA write: "transfer complete" arrived before the tail chunks landed.
        stale = Math.min(fresh.length, Math.max(1, Math.round(pages.length * config.staleFraction)))
        staleFirst = pages.length - stale
      } else if (config.mode === 'stale-middle' && staleRand() < config.staleRate) {
        // Late writes in the middle: the chunks holding the prompt's start and its end (where a guard's
        // echo directive sits) landed, a stretch between them did not. A request with no page between
        // those edges (and after its cached prefix) is served whole.
        const edge = Math.min(config.staleEdgeTokens, length)
        const lo = Math.max(match.pages.length, Math.ceil(edge / ps), 1)
        const hi = Math.min(pages.length - 1, Math.floor((length - edge) / ps))
        if (hi > lo) {
          stale = Math.min(hi - lo, Math.max(1, Math.round(pages.length * config.staleFraction)))
          staleFirst = randomInt(staleRand, lo, hi - stale)
        }
      }
      const staleEnd = staleFirst + stale
      for (let j = match.pages.length; j < pages.length; j++) {
        if (j >= staleFirst && j < staleEnd) continue
        pool.write(pages[j]!, 0, tokens, j * ps, Math.min((j + 1) * ps, length), writer)
      }
      if (stale > 0) {
        record.outcome = 'stale'
        record.stalePages = stale
        record.staleFirstPage = staleFirst
        record.staleSources = staleSources(pool, pages.slice(staleFirst, staleEnd))
      }
      // The cache chain stops at the first unwritten page: a page never written must never be served as a
      // prefix, and pages after it are unreachable without it.
      let parent = root
      // With the cache off, finished prompts' pages go straight back to the free list.
      const fullWritten = config.prefixCache ? Math.min(staleFirst, Math.floor(length / ps)) : 0
      for (let j = 0; j < fullWritten; j++) {
        const key = match.keys[j] ?? hashPage(parent, tokens, j * ps, (j + 1) * ps)
        entries.push({ page: pages[j]!, key })
        parent = key
      }
      record.cachedTokens = match.pages.length * ps
      prefilled = length - record.cachedTokens
    }
    record.pages = pages.length
    record.prefilledTokens = prefilled

    const visible = readPages(pool, pages, length)
    record.visibleTokens = visible.length
    const output = generate(tok, {
      visible,
      seed: config.seed,
      ordinal,
      // Only a request's own max_tokens cuts the answer: a default cut left every simple answer ending
      // mid-word with finish_reason "length". The answer is bounded anyway (a few quotes).
      maxTokens: asked ?? Number.POSITIVE_INFINITY,
      reasoning: format === 'chat',
      json: record.json,
      echoIgnoreRate: config.echoIgnoreRate,
      directiveQuoteRate: config.directiveQuoteRate,
      thinkingNoteRate: config.thinkingNoteRate,
      restateAtToken: config.restateAtToken,
      extraReasoningTokens: config.extraReasoningTokens,
      jsonEchoLateRate: config.jsonEchoLateRate,
      quoteChars: config.quoteChars,
    })
    record.echoed = output.echoed
    const reasoningGroups = group(output.reasoningTokens, config.tokensPerEvent)
    const contentGroups = group(output.contentTokens, config.tokensPerEvent)
    const completion = output.reasoningTokens.length + output.contentTokens.length
    const answer: Answer = {
      id: `chatcmpl-sim${(config.seed >>> 0).toString(16)}-${ordinal}`,
      created: config.createdEpoch + ordinal,
      model: req.model,
      reasoningDeltas: tok.decodeGroups(reasoningGroups),
      contentDeltas: tok.decodeGroups(contentGroups),
      finishReason: output.finishReason,
      ...toolCallOf(format, inputs, `call_sim${(config.seed >>> 0).toString(16)}-${ordinal}`),
      usage: {
        prompt_tokens: record.reportedPromptTokens,
        completion_tokens: completion,
        total_tokens: record.reportedPromptTokens + completion,
        prompt_tokens_details: { cached_tokens: record.cachedTokens },
      },
    }

    const timing = prng(mixSeed(config.seed, ordinal, PURPOSE.timing))
    const jitter = (): number => 1 + config.jitter * (2 * timing() - 1)
    const prefillMs = waitMs(prefilled, config.prefillTokensPerSecond) * jitter()
    record.prefillMs = prefillMs
    const deltaDelays = [...reasoningGroups, ...contentGroups].map(
      (g) => waitMs(g.length, config.decodeTokensPerSecond) * jitter(),
    )
    this.note(record)
    this.byOutcome[record.outcome]++

    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      const extra =
        record.outcome === 'placeholder'
          ? []
          : writeGenerated(
              pool,
              pages,
              length,
              [...output.reasoningTokens, ...output.contentTokens],
              writer,
            )
      pool.release([...pages, ...extra], entries)
    }

    if (inputs.stream !== true) {
      try {
        await this.clock.sleep(prefillMs + deltaDelays.slice(1).reduce((a, b) => a + b, 0))
      } finally {
        finish()
      }
      return format === 'chat' ? chatCompletion(answer) : legacyCompletion(answer)
    }
    const includeUsage = readIncludeUsage(inputs.stream_options)
    const events =
      format === 'chat'
        ? chatEvents(answer, prefillMs, deltaDelays, includeUsage)
        : legacyEvents(answer, prefillMs, deltaDelays)
    return sseStream(
      events,
      prng(mixSeed(config.seed, ordinal, PURPOSE.split)),
      config.splitRate,
      finish,
      this.clock,
    )
  }

  private note(record: SimRequestRecord): void {
    this.recent.push(record)
    if (this.recent.length > 32) this.recent.shift()
  }
}

/** Paces events by their decode delays and splits their bytes at seeded awkward boundaries. */
function sseStream(
  events: TimedEvent[],
  rand: () => number,
  splitRate: number,
  finish: () => void,
  clock: SimClock,
): ReadableStream<Uint8Array> {
  let next = 0
  let carry: Uint8Array | undefined
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const event = events[next++]
      if (!event) {
        if (carry) controller.enqueue(carry)
        carry = undefined
        finish()
        controller.close()
        return
      }
      await clock.sleep(event.delayMs)
      const split = splitEvent(concatBytes(carry, sseBytes(event.data)), rand, splitRate)
      for (const piece of split.now) controller.enqueue(piece)
      carry = split.carry
    },
    cancel() {
      finish()
    },
  })
}

/**
 * The root of a request's prefix-cache chain: its account, and its salt when it sent one (vLLM mixes
 * `cache_salt` into the first block's hash). Requests under different roots never share a page.
 */
function cacheRoot(account: string, salt: string | null): number {
  return hashString(salt === null ? `account:${account}` : `account:${account}\0salt:${salt}`)
}

/** The last writers of `pages`, grouped by request, in order of first appearance. */
function staleSources(pool: KvPool, pages: readonly number[]): SimStaleSource[] {
  const out: SimStaleSource[] = []
  const byWriter = new Map<PageWriter | undefined, SimStaleSource>()
  for (const page of pages) {
    const w = pool.writerOf(page)
    let source = byWriter.get(w)
    if (source === undefined) {
      source = w
        ? { ordinal: w.ordinal, account: w.account, affinity: w.affinity, pages: 0 }
        : { ordinal: null, account: null, affinity: null, pages: 0 }
      byWriter.set(w, source)
      out.push(source)
    }
    source.pages++
  }
  return out
}

/** Tokens decode reads from its pages, in page-table order; never-written slots contribute nothing. */
function readPages(pool: KvPool, pages: readonly number[], length: number): Uint32Array {
  const ps = pool.pageSize
  const out = new Uint32Array(length)
  let k = 0
  for (let j = 0; j < pages.length && j * ps < length; j++) {
    const base = pages[j]! * ps
    const end = Math.min(ps, length - j * ps)
    for (let i = 0; i < end; i++) {
      const t = pool.data[base + i]!
      if (t !== EMPTY_SLOT) out[k++] = t
    }
  }
  return out.subarray(0, k)
}

/** Decode writes its own tokens after the prompt; those pages are freed later, uncleared. */
function writeGenerated(
  pool: KvPool,
  pages: readonly number[],
  length: number,
  generated: readonly number[],
  writer: PageWriter,
): number[] {
  const ps = pool.pageSize
  let done = 0
  const slot = length % ps
  if (slot !== 0 && pages.length > 0) {
    done = Math.min(generated.length, ps - slot)
    pool.write(pages[pages.length - 1]!, slot, generated, 0, done, writer)
  }
  const extra = pool.takeFree(Math.ceil((generated.length - done) / ps))
  for (const page of extra) {
    const to = Math.min(generated.length, done + ps)
    pool.write(page, 0, generated, done, to, writer)
    done = to
  }
  return extra
}

function group(tokens: readonly number[], size: number): number[][] {
  const out: number[][] = []
  for (let i = 0; i < tokens.length; i += size) out.push(tokens.slice(i, i + size))
  return out
}

function waitMs(tokens: number, perSecond: number): number {
  return Number.isFinite(perSecond) ? (tokens / perSecond) * 1000 : 0
}

/** The request's own output limit: undefined when it sets none, null when the one it sets is invalid. */
function readMaxTokens(inputs: Record<string, unknown>): number | undefined | null {
  const raw = inputs.max_completion_tokens ?? inputs.max_tokens
  if (raw === undefined || raw === null) return undefined
  return typeof raw === 'number' && Number.isInteger(raw) && raw > 0 ? raw : null
}

/** A chat answer's tool call when the request offers tools (legacy models take none). */
function toolCallOf(
  format: string,
  inputs: { tools?: unknown; tool_choice?: unknown; messages?: unknown },
  id: string,
): { toolCall?: SimToolCall } {
  const call = format === 'chat' ? toolCallFor(inputs, id) : undefined
  return call ? { toolCall: call } : {}
}

function readIncludeUsage(options: unknown): boolean {
  if (typeof options !== 'object' || options === null) return true
  return (options as Record<string, unknown>).include_usage !== false
}

function zeroCounts<K extends string>(keys: readonly K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>
}
