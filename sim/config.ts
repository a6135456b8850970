/**
 * @module SimConfig: every knob of the leaky inference simulator, its defaults and its validation.
 */
import { SIM_TOKENIZERS, type SimTokenizerName } from './tokenizer'

export type { SimTokenizerName } from './tokenizer'

/**
 * How the simulated engine treats a prompt longer than its real KV pool (see INCIDENT.md).
 *
 * - `fixed`: SGLang's normal path — reject with "Input length (N tokens) exceeds the maximum allowed length".
 * - `pd-abort-leak`: the incident — the request is swapped for a one-token placeholder, decode reads pages
 *   prefill never wrote (other tenants' prompts), and the client gets a fast HTTP 200.
 * - `truncate`: SGLang `--allow-auto-truncate` — the end of the prompt is silently dropped.
 * - `stale-pages`: late RDMA writes — the tail pages of an in-limit request are read before they land.
 * - `stale-middle`: late RDMA writes in the middle — a stretch of an in-limit request's pages is read
 *   before it lands, while its first and last pages (the prompt's start, the guard's end-of-prompt echo
 *   directive) are written: the echo verifies and the first token comes after an honest prefill, yet the
 *   answer quotes whatever those middle pages held.
 */
export type SimMode = 'fixed' | 'pd-abort-leak' | 'truncate' | 'stale-pages' | 'stale-middle'

/** Every mode, in a stable order (for stats and validation). */
export const SIM_MODES: readonly SimMode[] = [
  'fixed',
  'pd-abort-leak',
  'truncate',
  'stale-pages',
  'stale-middle',
]

/** The simulator's configuration; every field can be changed at runtime with `configure(partial)`. */
export interface SimConfig {
  /**
   * How over-length prompts (and, for `stale-pages` / `stale-middle`, in-limit ones) are served.
   * @default 'pd-abort-leak'
   */
  mode: SimMode
  /**
   * The model's tokenizer: one of the reference family of GLM-5.3's generation (`qwen3`, `deepseek_v3`,
   * `llama3`, `gemma3`) or the older `cl100k`. Changing it empties the pool (its pages hold ids of the
   * old vocabulary). @default 'qwen3'
   */
  tokenizer: SimTokenizerName
  /** Real KV pool size in tokens, shared by every request of the engine. @default 681_280 */
  poolTokens: number
  /** Tokens per KV page (SGLang `page_size`). @default 64 */
  pageSize: number
  /** The advertised context window; a prompt above it is always rejected. @default 1_048_576 */
  contextWindow: number
  /** Prefill speed for uncached prompt tokens; `Infinity` = no wait at all. @default 50_000 */
  prefillTokensPerSecond: number
  /** Decode speed; `Infinity` = no wait at all. @default 200 */
  decodeTokensPerSecond: number
  /** Seeded multiplicative jitter on every wait, as a fraction (0.1 = ±10 %). @default 0 */
  jitter: number
  /** Seed of every pseudo-random choice (content, byte splits, jitter). @default 1 */
  seed: number
  /**
   * In `stale-pages` / `stale-middle`: probability that a request's tail (middle) pages are read before
   * they land. @default 1
   */
  staleRate: number
  /**
   * In `stale-pages` / `stale-middle`: fraction of a request's pages left unwritten (at least one; in
   * `stale-middle` at most what lies between the written edges). @default 0.25
   */
  staleFraction: number
  /**
   * In `stale-middle`: the pages holding the prompt's first and last `staleEdgeTokens` tokens are always
   * written (and never its first or last page), so an end-of-prompt echo directive up to this long stays
   * whole: the guard's is ~35 Qwen3 tokens with the template's tail. 1 = exactly the first and the last
   * page. @default 64
   */
  staleEdgeTokens: number
  /** Probability that the model "slips" and does not follow a visible echo directive. @default 0 */
  echoIgnoreRate: number
  /**
   * Probability that a reasoning model restates the echo directive it follows, code included, in the
   * first sentence of its reasoning (reasoning models restate their instructions: "Leaky Thoughts",
   * 2025). @default 0
   */
  directiveQuoteRate: number
  /**
   * Probability that a reasoning model follows a directive's request to note the code first thing in
   * its thinking (the guard's `note-first` wording): its reasoning then opens with the code. Models
   * follow some wordings and not others; this one is followed only where it is asked. @default 0
   */
  thinkingNoteRate: number
  /**
   * Reasoning tokens before a restated code (`directiveQuoteRate`) begins: 0 restates the directive
   * first thing; N writes N tokens of its own reasoning first, then the code (models restate late as
   * well as early). @default 0
   */
  restateAtToken: number
  /**
   * Reasoning tokens a reasoning model thinks on after its short paragraph and before it answers (a
   * long thinker: GLM-5.3 cannot switch its reasoning off). @default 0
   */
  extraReasoningTokens: number
  /**
   * In JSON mode: probability that the model writes the echo member it was asked to start with after
   * its answer instead of first (a JSON-mode slip the guard reads as a missing echo). @default 0
   */
  jsonEchoLateRate: number
  /** Probability that one SSE event's bytes are split at an awkward boundary. @default 0.5 */
  splitRate: number
  /**
   * Characters per quoted span of the model's answer (lines are clipped to it): the shortest leaked span a
   * detector gets to see. @default 90
   */
  quoteChars: number
  /** Generated tokens grouped into one SSE event. @default 3 */
  tokensPerEvent: number
  /**
   * The output reserve admission counts when the request gives no `max_tokens` (Workers AI's window
   * check). It does not cut the answer: only a request's own `max_tokens` does. @default 256
   */
  defaultMaxTokens: number
  /** Longest wait (ms) for free KV pages before a capacity error. @default 5_000 */
  queueTimeoutMs: number
  /** Keep fully written pages as a per-account prefix cache (SGLang radix cache). @default true */
  prefixCache: boolean
  /** Models answered in the legacy `{ response, usage }` format. @default ['@cf/meta/llama-3.1-8b-instruct'] */
  legacyModels: string[]
  /** `created` of the first response (Unix seconds); later ones add their ordinal, so bytes stay stable. */
  createdEpoch: number
}

/**
 * The defaults: the incident's published figures (window 1,048,576, pool 681,280) in the incident's mode.
 *
 * @example
 * const engine = new SimEngine({ ...DEFAULT_SIM_CONFIG, mode: 'fixed' })
 */
export const DEFAULT_SIM_CONFIG: Readonly<SimConfig> = Object.freeze({
  mode: 'pd-abort-leak',
  tokenizer: 'qwen3',
  poolTokens: 681_280,
  pageSize: 64,
  contextWindow: 1_048_576,
  prefillTokensPerSecond: 50_000,
  decodeTokensPerSecond: 200,
  jitter: 0,
  seed: 1,
  staleRate: 1,
  staleFraction: 0.25,
  staleEdgeTokens: 64,
  echoIgnoreRate: 0,
  directiveQuoteRate: 0,
  thinkingNoteRate: 0,
  restateAtToken: 0,
  extraReasoningTokens: 0,
  jsonEchoLateRate: 0,
  splitRate: 0.5,
  quoteChars: 90,
  tokensPerEvent: 3,
  defaultMaxTokens: 256,
  queueTimeoutMs: 5_000,
  prefixCache: true,
  legacyModels: Object.freeze(['@cf/meta/llama-3.1-8b-instruct']) as unknown as string[],
  createdEpoch: 1_787_788_800,
} satisfies SimConfig)

type NumericKey = {
  [K in keyof SimConfig]: SimConfig[K] extends number ? K : never
}[keyof SimConfig]

/** [min, max, integer?, Infinity allowed?] per numeric option. */
const NUMERIC: Record<NumericKey, readonly [number, number, boolean, boolean]> = {
  poolTokens: [1, 64 * 1024 * 1024, true, false],
  pageSize: [1, 65_536, true, false],
  contextWindow: [1, 64 * 1024 * 1024, true, false],
  prefillTokensPerSecond: [Number.MIN_VALUE, Number.MAX_VALUE, false, true],
  decodeTokensPerSecond: [Number.MIN_VALUE, Number.MAX_VALUE, false, true],
  jitter: [0, 1, false, false],
  seed: [-(2 ** 53), 2 ** 53, true, false],
  staleRate: [0, 1, false, false],
  staleFraction: [0, 1, false, false],
  staleEdgeTokens: [1, 64 * 1024 * 1024, true, false],
  echoIgnoreRate: [0, 1, false, false],
  directiveQuoteRate: [0, 1, false, false],
  thinkingNoteRate: [0, 1, false, false],
  restateAtToken: [0, 1_000_000, true, false],
  extraReasoningTokens: [0, 1_000_000, true, false],
  jsonEchoLateRate: [0, 1, false, false],
  splitRate: [0, 1, false, false],
  quoteChars: [1, 100_000, true, false],
  tokensPerEvent: [1, 1_000, true, false],
  defaultMaxTokens: [1, 1_048_576, true, false],
  queueTimeoutMs: [0, 600_000, false, false],
  createdEpoch: [0, 2 ** 40, true, false],
}

/**
 * Validates a partial configuration (from RPC or JSON) and returns it typed. Rates may be given as the
 * string `'Infinity'` or `null` (JSON has no Infinity). Throws a plain Error naming the bad option.
 *
 * @example
 * engine.configure(parseSimConfig(await request.json()))
 */
export function parseSimConfig(input: unknown): Partial<SimConfig> {
  if (input === undefined || input === null) return {}
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new Error('SimConfig must be an object')
  }
  const out: Partial<SimConfig> = {}
  for (const [key, raw] of Object.entries(input as Record<string, unknown>)) {
    if (key === 'mode') {
      if (!SIM_MODES.includes(raw as SimMode)) {
        throw new Error(`SimConfig.mode must be one of ${SIM_MODES.join(', ')}`)
      }
      out.mode = raw as SimMode
    } else if (key === 'tokenizer') {
      if (!SIM_TOKENIZERS.includes(raw as SimTokenizerName)) {
        throw new Error(`SimConfig.tokenizer must be one of ${SIM_TOKENIZERS.join(', ')}`)
      }
      out.tokenizer = raw as SimTokenizerName
    } else if (key === 'prefixCache') {
      if (typeof raw !== 'boolean') throw new Error('SimConfig.prefixCache must be a boolean')
      out.prefixCache = raw
    } else if (key === 'legacyModels') {
      if (!Array.isArray(raw) || !raw.every((m) => typeof m === 'string')) {
        throw new Error('SimConfig.legacyModels must be an array of model names')
      }
      out.legacyModels = [...raw]
    } else if (key in NUMERIC) {
      const name = key as NumericKey
      out[name] = parseNumber(name, raw)
    } else {
      throw new Error(`SimConfig has no option ${key}`)
    }
  }
  return out
}

function parseNumber(name: NumericKey, raw: unknown): number {
  const [min, max, integer, infinite] = NUMERIC[name]
  const value = infinite && (raw === null || raw === 'Infinity') ? Number.POSITIVE_INFINITY : raw
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new Error(`SimConfig.${name} must be a number`)
  }
  if (value === Number.POSITIVE_INFINITY && infinite) return value
  if (value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new Error(`SimConfig.${name} must be ${integer ? 'an integer ' : ''}in [${min}, ${max}]`)
  }
  return value
}

/**
 * A complete config: defaults, then `base`, then a validated `patch`.
 *
 * @example
 * const config = resolveSimConfig(DEFAULT_SIM_CONFIG, { mode: 'fixed', poolTokens: 4096 })
 */
export function resolveSimConfig(base: Readonly<SimConfig>, patch?: Partial<SimConfig>): SimConfig {
  const merged: SimConfig = { ...base, ...parseSimConfig(patch), legacyModels: [] }
  merged.legacyModels = [...(patch?.legacyModels ?? base.legacyModels)]
  if (merged.pageSize > merged.poolTokens) {
    throw new Error('SimConfig.pageSize must not exceed SimConfig.poolTokens')
  }
  return merged
}
