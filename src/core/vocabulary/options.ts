/**
 * @module GuardOptions, model profiles and their one-time validation.
 */
import type { TenantDirectory } from '../attribution'
import type { CalibrationStore } from '../calibration/learned'
import { assertSecret } from '../crypto/secret'
import type { FingerprintStore, SecretsOptions } from './evidence-options'
import { refuseMoved } from './moved-options'
import { integerOption } from './option-checks'
import type { QuarantineStore } from './quarantine'
import type { ObservableCheck, Observe } from './verdict-types'

/**
 * What the canary guard asks of a model's answer.
 * - `require`: the prompt ends with an echo directive; the answer must begin with this request's canary.
 * - `scan-only`: no directive; every answer is still scanned for other requests' canaries.
 * - `off`: no directive, no scan (the ceiling and timing guards still run).
 */
export type EchoPolicy = 'require' | 'scan-only' | 'off'

/**
 * How the echo directive is worded for a model (text proofs; the JSON-mode directive is one).
 * - `reply-first`: the reply's first line is the code. A reasoning model that does not restate its
 *   instructions proves the read only when its content starts: a verified stream is held through its
 *   whole reasoning.
 * - `note-first`: the same, and the code is also noted first thing in the model's thinking, so a model
 *   that follows it proves the read as its reasoning starts and the stream is released from there.
 *   One that does not is proven by its reply's first line, as with `reply-first`.
 * Which one a model follows is measured, not assumed (docs/streaming.md); operator configuration only.
 */
export type EchoWording = 'reply-first' | 'note-first'

/**
 * Whether the engine's prefix cache is split per tenant.
 * - `salt`: every attempt carries `cache_salt` (vLLM's field), derived from the guard's key and the
 *   tenant, so one tenant's requests never hit pages cached from another's prompt — neither as a
 *   leak of timing (a prefix-cache hit tells the sender that someone sent that prefix) nor as pages.
 * - `prefix`: for engines with no salt (Workers AI): the prompt starts with a short marker of the
 *   tenant (a canary minted for the tenant, not the request), so no two tenants' prompts share a first
 *   page and the engine's prefix cache cannot match across them; Workers AI's `x-session-affinity` is
 *   set per tenant too. The marker is cut from every answer like a canary, and another tenant's marker
 *   in an answer is proof of a leak, like a foreign canary.
 * - `off`: nothing; tenants behind one upstream credential share the engine's prefix cache.
 */
export type CacheIsolation = 'salt' | 'prefix' | 'off'

/** The isolations a model gets by its name alone: `off` is only ever the operator's choice. */
type DefaultCacheIsolation = Exclude<CacheIsolation, 'off'>

/** What is known about one model's deployment. Every figure is a safety input: err on the safe side. */
export interface ModelProfile {
  /** The context window the provider advertises, in tokens. */
  contextWindow: number
  /**
   * The real KV-cache pool, in tokens: the smallest measured on any replica. When it is smaller than
   * the window, requests in between can read other tenants' pages.
   */
  kvPoolTokens: number
  /**
   * A physical upper bound on uncached prefill speed, tokens/s. An answer whose first token arrives sooner
   * than `uncachedPromptTokens / maxPrefillTokensPerSecond` was not prefilled from this prompt.
   */
  maxPrefillTokensPerSecond: number
  /**
   * Margin on top of the family bound (the most tokens any tokenizer of the model's generation counts,
   * see src/core/ceiling/estimate.ts), as a fraction (0.03 = 3% more), for a model of that generation whose
   * own tokenizer is not in the reference family. Calibration may raise it per script class, never
   * lower it below this floor.
   */
  tokenizerDrift: number
  /** Output tokens reserved when the request sets no `max_tokens` / `max_completion_tokens`. */
  defaultOutputReserve: number
  /** Canary policy for requests where an echo would not break the output (no tools, no JSON mode). */
  echo: EchoPolicy
  /** The echo directive's wording for this model (see {@link EchoWording}). @default 'reply-first' */
  directive: EchoWording
  /**
   * Per-tenant prefix-cache isolation. Defaults to `salt`, except for Workers AI catalogue models
   * (`@cf/…`, `@hf/…`), which default to `prefix`: the binding has no salt field (see
   * {@link defaultCacheIsolation}).
   */
  cacheIsolation: CacheIsolation
}

/**
 * Built-in profiles.
 *
 * `@cf/zai-org/glm-5.3`: window 1,048,576 and pool 681,280 are the published figures at the incident.
 * 200,000 tokens/s is above what one GLM-5.3 prefill replica sustains (an MoE of that size prefills in the
 * tens of thousands per second), so a faster first token is impossible, not merely unusual. The 3%
 * margin sits on top of the family bound (Qwen3, DeepSeek-V3, Llama 3, Gemma 3 and o200k, per token):
 * GLM-5.3's tokenizer is of that generation but not published; with it, English is charged 1.08× its
 * o200k count and English at 95% of the ceiling by its largest family count is still admitted.
 * 4,096 output tokens is the reserve when a request sets none.
 *
 * @example
 * const pool = BUILTIN_PROFILES['@cf/zai-org/glm-5.3'].kvPoolTokens // 681_280
 */
export const BUILTIN_PROFILES: Readonly<Record<string, Readonly<ModelProfile>>> = {
  '@cf/zai-org/glm-5.3': {
    contextWindow: 1_048_576,
    kvPoolTokens: 681_280,
    maxPrefillTokensPerSecond: 200_000,
    tokenizerDrift: 0.03,
    defaultOutputReserve: 4_096,
    echo: 'require',
    directive: 'reply-first',
    cacheIsolation: 'prefix',
  },
}

/**
 * The isolation a profile gets when it sets none: `prefix` for Workers AI catalogue names (`@cf/…`,
 * `@hf/…`), `salt` for every other model. Workers AI's binding documents no salt field and validates
 * inputs against each model's schema, so a salt there would at best be ignored — and one unknown field
 * failing every request would turn a safety feature into an outage; a marker in the prompt's own text
 * needs nothing of the engine. Other names are served by engines
 * the operator runs through an OpenAI-compatible adapter; vLLM honours `cache_salt`, and an engine
 * that does not know the field ignores it (OpenAI-compatible servers drop unknown fields), so `salt`
 * costs nothing where it does not work and isolates where it does.
 *
 * @example
 * defaultCacheIsolation('@cf/zai-org/glm-5.3') // 'prefix'
 * defaultCacheIsolation('zai-org/GLM-5.3') // 'salt'
 */
export function defaultCacheIsolation(model: string): DefaultCacheIsolation {
  return /^@(cf|hf)\//.test(model) ? 'prefix' : 'salt'
}

/** What to do when a request's prompt fits but its output reserve does not. */
export type OverflowPolicy =
  /** Refuse with `context_length_exceeded` (default): the client decides what to cut. */
  | 'reject'
  /** Lower `max_tokens` to what fits and say so in the `x-guard-clamped-max-tokens` header. */
  | 'clamp-output'

/**
 * Options of {@link guardAi}, `createGuard` and the Hono middleware, grouped by concern. Validated once,
 * when the guard is created; a name from before the grouping throws an error naming its new place.
 */
export interface GuardOptions {
  /** Canary key: at least 32 bytes of secret material (UTF-8). Required; there is no default. */
  secret: string
  /** Who the requests belong to; binds every canary to its tenant. @default 'default' */
  tenant?: string
  /** Per-model profile overrides, merged over {@link BUILTIN_PROFILES}. */
  models?: Record<string, Partial<ModelProfile>>
  /**
   * Checks to run in observe mode (docs/how-it-decides.md, "Observe mode"): their verdicts release the
   * answer, whole or streamed, and record what they would have withheld — an incident marked
   * `observed`, a `would_block` verdict line — and teach nothing. `content`: foreign content;
   * `timing`: the first token too fast, usage below the estimate, an unexplained cache report; `echo`:
   * a missing echo once its retries are spent (a lone slip is still retried). Proof — another
   * request's canary or secret stand-in — is enforced in every mode, and a verdict with any enforced
   * reason still withholds. The operator's alone: no request can set it. @default all enforced
   */
  observe?: { content?: boolean; timing?: boolean; echo?: boolean }
  /** The token ceiling: unknown models, overflowing output reserves, calibration, the text memo. */
  ceiling?: {
    /**
     * Models with no profile: `refuse` them (no safe ceiling is known) or guard them with `defaultProfile`.
     * @default 'refuse'
     */
    unknownModels?: 'refuse' | 'default-profile'
    /** The profile used for unknown models when `unknownModels` is `default-profile`. */
    defaultProfile?: Partial<ModelProfile>
    /** When only the output reserve overflows. @default 'reject' */
    overflow?: OverflowPolicy
    /** Shared drift calibration. @default per-isolate memory */
    calibration?: CalibrationStore
    /**
     * What the guard keeps of each tenant's long texts (2,048 characters and more) between its requests,
     * per isolate: their keyed digests and what was computed from them (the count, the fingerprints, a
     * secrets scan that found nothing), never the text. A conversation resends its history every turn;
     * with this, each text is counted, printed and scanned once.
     * Per tenant (no tenant's timing shows what another sent); the verdicts are the same without it.
     * `false` turns it off.
     * @default { budgetBytes: 16 MiB }
     */
    textMemo?: { budgetBytes?: number } | false
  }
  /** The canary guard: echo retries, and where leaked canaries' tenants are looked up. */
  canary?: {
    /**
     * How many times a missing echo alone (nothing else wrong) is retried before quarantine. Models slip
     * on instructions now and then (measured at 2% in the bench); two retries make a false quarantine
     * need three slips in a row. @default 2
     */
    echoRetries?: number
    /**
     * Where tenant tags are resolved to tenants when a leaked canary is found: shared (D1) so a leak
     * caught in one isolate names a tenant minted in another. @default the isolate's memory
     */
    tenantDirectory?: TenantDirectory
  }
  /** The timing guard and the upstream's deadlines. */
  timing?: {
    /**
     * The timing guard judges only prompts whose honest prefill takes at least this long, ms: below it,
     * clock granularity and network jitter would make the evidence noise. @default 200
     */
    minEvidenceMs?: number
    /**
     * How whole (non-stream) answers to long prompts are fetched. `via-stream` asks the upstream for a
     * stream, times its first token like any stream, and returns the assembled whole answer: a whole
     * answer's latency includes its decode, which can hide a missing prefill. `as-is` judges the total
     * latency only. Prompts too short for timing to judge are always fetched as-is.
     * @default 'via-stream'
     */
    wholeAnswers?: 'via-stream' | 'as-is'
    /** Deadlines for the upstream, ms; a hung upstream becomes a 504 `upstream_error`. */
    timeouts?: {
      /** From the call to a stream's first byte. @default 120000 */
      firstTokenMs?: number
      /** Between two chunks of a stream. @default 60000 */
      idleMs?: number
      /** For a whole (non-stream) answer. @default 600000 */
      responseMs?: number
    }
  }
  /** How a stream is held and released. */
  stream?: {
    /**
     * When a stream's first bytes may leave. `verified` (the default): nothing before the proof that the
     * prompt's end was read (this request's canary, in the reasoning or echoed at the content's start),
     * and every channel's last 21 words held until the foreign-content check has judged them.
     * `async`: released as soon as the first token's timing and the foreign-canary scan pass — before
     * the proof and with no foreign-content hold-back; a missing echo or any evidence found later ends
     * the stream with an error (and an incident), after some unverified text may have reached the
     * client (what Azure and Bedrock call asynchronous filtering). For operators who prefer latency;
     * what it lets through is measured in the detection benchmark (README).
     * @default 'verified'
     */
    release?: 'verified' | 'async'
    /**
     * While a stream is held for its verdict, send an SSE comment (`: held`) every this many ms, for
     * proxies and clients that close idle connections. The beating stream is returned only once a
     * verdict has taken this long (one comment at once): a sooner verdict keeps its status. The
     * trade-off past that: the response is a 200, so an answer withheld later ends the stream with an
     * error instead of an error status. Off by default (the deployed Worker's wrangler.toml sets 15 s).
     */
    heartbeatMs?: number
    /** Upper bound on text held before a stream's verdict, in bytes. @default 8 MiB */
    maxHeldBytes?: number
  }
  /**
   * Foreign-content fingerprints: every answer is scanned for text of another tenant's recent prompt
   * (docs/fingerprints.md). On by default, per isolate; a `store` shares the fingerprints across
   * isolates. `false` turns the check off.
   */
  content?: ForeignContentOptions | false
  /**
   * Secrets in prompts (docs/secrets.md): per kind and model, `off`, `detect` (counted in the verdict
   * log, sent as they are) or `substitute` (the engine gets a stand-in, the answer the value back; a
   * stand-in of another request in an answer is a leak). Off unless set; the Worker substitutes the
   * high-confidence kinds and detects the rest by default.
   */
  secrets?: SecretsOptions
  /** Where withheld answers go, and how repeats are folded. */
  quarantine?: {
    /** The store of incidents. @default an in-memory store (per isolate) */
    store?: QuarantineStore
    /**
     * A tenant's repeated incidents of one kind within this window are folded into one record (a count);
     * leaks naming another tenant's data are never folded. 0 stores every incident. @default 600000
     */
    incidentWindowMs?: number
  }
  /** The host's hooks: the verdict log, the clock, request ids. */
  hooks?: {
    /**
     * Called once per verdict with a log-safe summary (no prompt text, no canaries, no secrets), and the
     * request's `waitUntil` when the host gave one: work the hook starts (a metrics write, an alert) goes
     * there, never in front of the client's answer.
     */
    onVerdict?: (event: VerdictLog, context: VerdictContext) => void
    /** Clock in milliseconds. Inject for tests. @default Date.now */
    now?: () => number
    /** Request id source (also used to mint canaries). @default crypto.randomUUID */
    requestId?: () => string
  }
}

/** Settings of the foreign-content check. Defaults are the measured ones (docs/fingerprints.md). */
export interface ForeignContentOptions {
  /** Where isolates share their prompts' fingerprints (the Worker's is a Durable Object). */
  store?: FingerprintStore
  /** Memory of the isolate's fingerprint table. @default 16 MiB */
  budgetBytes?: number
  /** How long a prompt's fingerprints are kept. @default 1 hour */
  ttlMs?: number
  /** From how many distinct tenants a fingerprint is boilerplate, never evidence (2 to 4). @default 2 */
  commonAt?: number
  /** Distinct fingerprints of one other tenant in a run that make evidence (at least the default, 6). */
  run?: number
  /**
   * Texts your tenants commonly send that are public anyway — the licences, documents or system
   * prompts of your app: never evidence, even before two tenants have sent them (a model reciting a
   * public text that only one tenant sent recently is otherwise indistinguishable from a leak of that
   * tenant's prompt). At most 4 MiB in all. The common open-source licences are built in
   * (`PUBLIC_BACKGROUND`).
   */
  publicTexts?: readonly string[]
  /**
   * The second opinion before an answer is withheld for foreign content alone (its echo verified, its
   * timing honest): a short clean-room request asks the model to continue the answer's text from just
   * before the matched run; what it writes again of the run is its own knowledge, not a read of the
   * source's pages (docs/fingerprints.md, "Second opinion"). `false`: withhold on the run alone.
   */
  recall?: RecallOptions | false
}

/** The second opinion's bounds. */
export interface RecallOptions {
  /** Second opinions any one source tenant's text may cause per hour, per isolate. @default 60 */
  perSourcePerHour?: number
  /** The continuation's output limit, tokens. @default 512 */
  maxTokens?: number
  /**
   * Characters of the answer before the run given as the cue: the request must stay short enough to
   * have no middle pages to go stale. @default 160
   */
  cueChars?: number
}

/** The structured log line written for every answer the guard decides on. */
export interface VerdictLog {
  requestId: string
  tenant: string
  model: string
  /**
   * `would_block`: an answer released under observe that enforce would have withheld (`reasons`; its
   * observed incident is `incidentId`); the same answer's own line says `release`.
   */
  action: 'release' | 'quarantine' | 'reject' | 'would_block'
  reasons: string[]
  incidentId?: string
  /**
   * The prompt's tokens for the model (the family estimate, template included). Absent when the prompt
   * was admitted by its byte count alone and never counted: then `tokenBound` is that byte count.
   */
  estimatedTokens?: number
  /** An upper bound of the prompt's tokens that is not an estimate: its UTF-8 bytes (plus template). */
  tokenBound?: number
  ttftMs?: number
  expectedMinMs?: number
  /**
   * Released answers: from the upstream call to the first byte handed to the client, ms, by the
   * guard's clock (next to `ttftMs`: the difference is what the verdict held back).
   */
  firstByteMs?: number
  /** Quarantines: the tenants whose data the answer carried (as in the incident record). */
  sourceTenants?: string[]
  /** `context_length_exceeded` refusals: the script classes that drove the estimate over the ceiling. */
  scripts?: string[]
  /**
   * The shared fingerprint store could not be read for this answer: `down` (only this isolate's own
   * table was compared) or the shard numbers left out. Absent when everything was read.
   */
  fingerprintStore?: { down: true } | { shardsUnread: number[] }
  /**
   * Secrets in the prompt, per kind (never values): `substituted` were sent as stand-ins, `detected`
   * as they were (policy `detect`); `restored` (whole answers) put back in the answer;
   * quarantines name the kinds of another request's stand-ins found (`foreign`).
   */
  secrets?: {
    substituted?: Record<string, number>
    detected?: Record<string, number>
    restored?: Record<string, number>
    foreign?: Record<string, number>
  }
}

/** What an `onVerdict` hook gets beside the event: the host's per-request hooks. */
export interface VerdictContext {
  /** The request's `waitUntil` (Workers: `ExecutionContext.waitUntil`), when the host passed one. */
  waitUntil?: (promise: Promise<unknown>) => void
}

/**
 * The `defaultProfile` resolved twice: the cache-isolation default depends on the model's name, and
 * a fallback profile serves names of both kinds.
 */
/**
 * The profile for unknown models, one per isolation a name can default to: keyed by
 * {@link defaultCacheIsolation}'s answer, so the pick cannot disagree with the name's default.
 */
type FallbackProfiles = Readonly<Record<DefaultCacheIsolation, ModelProfile>>

/** Options after validation, with defaults filled in. */
export interface ResolvedOptions {
  secret: string
  tenant: string
  profiles: Map<string, ModelProfile>
  /** The profile of models with no profile of their own (see {@link fallbackProfile}), if allowed. */
  fallbackProfiles: FallbackProfiles | undefined
  overflow: OverflowPolicy
  now: () => number
  requestId: () => string
  echoRetries: number
  maxHeldBytes: number
  streamRelease: 'verified' | 'async'
  /** 0: no heartbeat. */
  heartbeatMs: number
  minTimingEvidenceMs: number
  timeouts: { firstTokenMs: number; idleMs: number; responseMs: number }
  wholeAnswers: 'via-stream' | 'as-is'
  incidentWindowMs: number
  /** Undefined: nothing is remembered between requests. */
  textMemo: { budgetBytes: number } | undefined
  /** The checks in observe mode (every one false: all enforced). */
  observe: Observe
}

/**
 * Validates options once, at construction. Throws a plain `Error` that names the bad option.
 *
 * @example
 * resolveOptions({ secret: 'x'.repeat(32), models: { '@cf/zai-org/glm-5.3': { kvPoolTokens: 600_000 } } })
 */
export function resolveOptions(options: GuardOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object')
    throw new Error('guard options must be an object')
  refuseMoved(options)
  const { secret } = options
  assertSecret('secret', secret)
  const tenant = options.tenant ?? 'default'
  if (typeof tenant !== 'string' || tenant === '') {
    throw new Error('option "tenant" must be a non-empty string')
  }
  const {
    ceiling = {},
    canary = {},
    timing = {},
    stream = {},
    quarantine = {},
    hooks = {},
  } = options
  for (const name of ['now', 'requestId', 'onVerdict'] as const) {
    if (hooks[name] !== undefined && typeof hooks[name] !== 'function') {
      throw new Error(`option "hooks.${name}" must be a function`)
    }
  }
  return {
    secret,
    tenant,
    ...resolveProfiles(options.models, ceiling),
    overflow: oneOf('ceiling.overflow', ceiling.overflow, ['reject', 'clamp-output']),
    now: hooks.now ?? (() => Date.now()),
    requestId: hooks.requestId ?? (() => crypto.randomUUID()),
    echoRetries: integerOption('canary.echoRetries', canary.echoRetries ?? 2, 0, 3),
    maxHeldBytes: integerOption(
      'stream.maxHeldBytes',
      stream.maxHeldBytes ?? 8 * 1024 * 1024,
      1024,
    ),
    streamRelease: oneOf('stream.release', stream.release, ['verified', 'async']),
    heartbeatMs:
      stream.heartbeatMs === undefined
        ? 0
        : integerOption('stream.heartbeatMs', stream.heartbeatMs, 100),
    minTimingEvidenceMs: atLeastZero('timing.minEvidenceMs', timing.minEvidenceMs ?? 200, ''),
    timeouts: resolveTimeouts(timing.timeouts),
    wholeAnswers: oneOf('timing.wholeAnswers', timing.wholeAnswers, ['via-stream', 'as-is']),
    incidentWindowMs: atLeastZero(
      'quarantine.incidentWindowMs',
      quarantine.incidentWindowMs ?? 600_000,
      ' of milliseconds',
    ),
    textMemo: resolveTextMemo(ceiling.textMemo),
    observe: resolveObserve(options.observe),
  }
}

/** The groups as written (each optional). */
type Group<K extends keyof GuardOptions> = NonNullable<GuardOptions[K]>

const OBSERVABLE: readonly ObservableCheck[] = ['content', 'timing', 'echo']

/** The observed checks: an object of `content`, `timing`, `echo` set to true or false. */
function resolveObserve(options: GuardOptions['observe']): Observe {
  if (options === undefined) return { content: false, timing: false, echo: false }
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new Error('option "observe" must be an object of content, timing and echo')
  }
  for (const [name, value] of Object.entries(options)) {
    if (!(OBSERVABLE as readonly string[]).includes(name)) {
      throw new Error(`option "observe" has no check "${name}" (content, timing or echo)`)
    }
    if (value !== undefined && typeof value !== 'boolean') {
      throw new Error(`option "observe.${name}" must be true or false`)
    }
  }
  return {
    content: options.content === true,
    timing: options.timing === true,
    echo: options.echo === true,
  }
}

/** The memo's budget: 16 MiB unless set; at least 64 KiB; `false` turns it off. */
function resolveTextMemo(options: Group<'ceiling'>['textMemo']): ResolvedOptions['textMemo'] {
  if (options === false) return undefined
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new Error('option "ceiling.textMemo" must be an object or false')
  }
  const budget = options?.budgetBytes ?? 16 * 1024 * 1024
  return { budgetBytes: integerOption('ceiling.textMemo.budgetBytes', budget, 65_536) }
}

/** The built-in profiles with the `models` overrides, and the profile for unknown models if any. */
function resolveProfiles(
  models: GuardOptions['models'],
  ceiling: Group<'ceiling'>,
): Pick<ResolvedOptions, 'profiles' | 'fallbackProfiles'> {
  const profiles = new Map<string, ModelProfile>()
  for (const [model, profile] of Object.entries(BUILTIN_PROFILES))
    profiles.set(model, { ...profile })
  for (const [model, override] of Object.entries(models ?? {})) {
    const base = profiles.get(model) ?? ceiling.defaultProfile
    // A built-in's isolation comes from its deployment, not its name: an override keeps it unless set.
    const isolation = defaultCacheIsolation(model)
    profiles.set(model, validateProfile(`models["${model}"]`, { ...base, ...override }, isolation))
  }
  const unknown = oneOf('ceiling.unknownModels', ceiling.unknownModels, [
    'refuse',
    'default-profile',
  ])
  if (unknown !== 'default-profile') return { profiles, fallbackProfiles: undefined }
  const fallback = { echo: 'require' as const, ...ceiling.defaultProfile }
  return {
    profiles,
    fallbackProfiles: {
      prefix: validateProfile('ceiling.defaultProfile', fallback, 'prefix'),
      salt: validateProfile('ceiling.defaultProfile', fallback, 'salt'),
    },
  }
}

/**
 * The profile for a model without one of its own, when unknown models are allowed.
 *
 * @example
 * const profile = options.profiles.get(model) ?? fallbackProfile(options, model)
 */
export function fallbackProfile(
  options: Pick<ResolvedOptions, 'fallbackProfiles'>,
  model: string,
): ModelProfile | undefined {
  return options.fallbackProfiles?.[defaultCacheIsolation(model)]
}

function resolveTimeouts(timeouts: Group<'timing'>['timeouts']): ResolvedOptions['timeouts'] {
  const resolved = {
    firstTokenMs: timeouts?.firstTokenMs ?? 120_000,
    idleMs: timeouts?.idleMs ?? 60_000,
    responseMs: timeouts?.responseMs ?? 600_000,
  }
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isFinite(value) || value <= 0) {
      throw new Error(`option "timing.timeouts.${name}" must be a positive number of milliseconds`)
    }
  }
  return resolved
}

/** `value` if it is one of `allowed`, the first of them if absent; else an error naming them. */
function oneOf<T extends string>(name: string, value: T | undefined, allowed: readonly T[]): T {
  const chosen = value ?? allowed[0]!
  if (!allowed.includes(chosen)) {
    const names = allowed.map((a) => `"${a}"`)
    throw new Error(`option "${name}" must be ${names.slice(0, -1).join(', ')} or ${names.at(-1)}`)
  }
  return chosen
}

function atLeastZero(name: string, value: number, unit: string): number {
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new Error(`option "${name}" must be a number${unit} ≥ 0`)
  }
  return value
}

function validateProfile(
  name: string,
  p: Partial<ModelProfile>,
  isolationDefault: CacheIsolation,
): ModelProfile {
  const positive = (field: keyof ModelProfile) => {
    const v = p[field]
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      throw new Error(`option "${name}.${field}" must be a positive number`)
    }
    return v
  }
  const contextWindow = positive('contextWindow')
  const kvPoolTokens = positive('kvPoolTokens')
  const maxPrefillTokensPerSecond = positive('maxPrefillTokensPerSecond')
  const defaultOutputReserve = positive('defaultOutputReserve')
  const drift = p.tokenizerDrift
  if (typeof drift !== 'number' || !Number.isFinite(drift) || drift < 0 || drift > 4) {
    throw new Error(`option "${name}.tokenizerDrift" must be a number from 0 to 4`)
  }
  const echo = p.echo ?? 'require'
  if (echo !== 'require' && echo !== 'scan-only' && echo !== 'off') {
    throw new Error(`option "${name}.echo" must be "require", "scan-only" or "off"`)
  }
  const directive = p.directive ?? 'reply-first'
  if (directive !== 'reply-first' && directive !== 'note-first') {
    throw new Error(`option "${name}.directive" must be "reply-first" or "note-first"`)
  }
  const cacheIsolation = p.cacheIsolation ?? isolationDefault
  if (cacheIsolation !== 'salt' && cacheIsolation !== 'prefix' && cacheIsolation !== 'off') {
    throw new Error(`option "${name}.cacheIsolation" must be "salt", "prefix" or "off"`)
  }
  return {
    contextWindow,
    kvPoolTokens,
    maxPrefillTokensPerSecond,
    tokenizerDrift: drift,
    defaultOutputReserve,
    echo,
    directive,
    cacheIsolation,
  }
}
