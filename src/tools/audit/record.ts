/**
 * @module The common request record every log format is read into, the formats, and what each format
 * lacks (and so which checks it disables).
 */

/** The log formats the audit reads (detected per line; see docs/audit.md for the accepted shapes). */
export type LogFormat = 'ai-gateway' | 'openai-jsonl' | 'guard-verdict'

/** The checks the audit runs on each request. */
export type CheckName = 'over_pool' | 'prefill_speed' | 'usage_undercount' | 'foreign_content'

/** Where a record was read: file, line (1-based), and its place in a JSON page or array. */
export interface RecordPlace {
  file: string
  line: number
  /** Index in a `{ result: […] }` page or a JSON array, when the line held several records. */
  item?: number
}

/** One model call as a log knows it. Every field but `id`, `format` and `place` may be missing. */
export interface AuditRecord {
  format: LogFormat
  place: RecordPlace
  /** The log's id of the request (AI Gateway log id, the app's request id, the guard's request id). */
  id: string
  /** When the request started, ms since the epoch. */
  startMs?: number
  model?: string
  /** Who sent it: metadata `tenant`/`user`/…, the OpenAI `user` field, the guard's tenant. */
  tenant?: string
  /** The log's custom metadata (AI Gateway `metadata`, the app's `metadata`), flat and small. */
  metadata?: Record<string, string | number | boolean | null>
  status?: number
  /** The whole answer came from a response cache (AI Gateway `cached`): no model ran at all. */
  responseCached?: boolean
  /** Prompt tokens the engine says it served from its prefix cache. */
  cachedTokens?: number
  /** From request to the last byte, ms. */
  durationMs?: number
  /** From request to the first token, ms. */
  ttftMs?: number
  /** Prompt tokens the engine reported (`usage.prompt_tokens`, `tokens_in`). */
  reportedPromptTokens?: number
  reportedOutputTokens?: number
  /** The request body (`messages`, `prompt`, tools, …) when the log holds it. */
  inputs?: Record<string, unknown>
  /** The answer's texts by channel (`reasoning`, `content`, `tool:0`, …) when the log holds them. */
  answer?: Record<string, string>
  /** Why a body the format can carry is not usable here (encrypted, unparsable). */
  bodyNote?: string
  /** The guard's own verdict, for `guard-verdict` lines. */
  verdict?: GuardVerdictFields
}

/** What a guard verdict line carries beside the common fields (see VerdictLog in src/core/vocabulary/options.ts). */
export interface GuardVerdictFields {
  action: string
  reasons: string[]
  incidentId?: string
  estimatedTokens?: number
  tokenBound?: number
  expectedMinMs?: number
  sourceTenants?: string[]
}

/** What a format never carries, and the checks that loses. */
interface FormatLimits {
  /** Human name. */
  name: string
  /** Fields the format does not carry at all. */
  lacks: string[]
  /** Checks the format disables entirely (with why). */
  disabled: Partial<Record<CheckName, string>>
  /** Checks that run weaker than they could (with why). */
  weaker: Partial<Record<CheckName, string>>
}

/**
 * What each format lacks. Per-record gaps (a gateway log without its bodies, an app log without
 * timings) are counted per file in the report.
 *
 * @example
 * FORMAT_LIMITS['guard-verdict'].disabled.foreign_content // 'verdict lines carry no text'
 */
export const FORMAT_LIMITS: Readonly<Record<LogFormat, FormatLimits>> = {
  'ai-gateway': {
    name: 'Cloudflare AI Gateway logs',
    lacks: ['time to first token'],
    disabled: {},
    weaker: {
      prefill_speed:
        'only the total duration is logged: decode time can hide a missing prefill (never a false alarm)',
    },
  },
  'openai-jsonl': {
    name: 'OpenAI-format request/response pairs (JSONL)',
    lacks: [],
    disabled: {},
    weaker: {},
  },
  'guard-verdict': {
    name: 'workers-ai-guard verdict logs (ai_guard_verdict)',
    lacks: ['prompt text', 'answer text', 'reported prompt tokens', 'cached tokens'],
    disabled: {
      foreign_content: 'verdict lines carry no text',
      usage_undercount: 'verdict lines carry no reported prompt tokens',
    },
    weaker: {
      over_pool: 'from the guard’s own estimate (estimatedTokens / tokenBound), not a recount',
      prefill_speed: 'from the guard’s ttftMs and estimate; cached prefixes are not logged',
    },
  },
}
