/**
 * @module Reads the few request fields the guard decides on: refuses malformed or unverifiable ones up
 * front, and decides how an answer to this request can be proven to come from its own prompt.
 *
 * Threat: every field is the client's. A field must never switch a guard off (`guided_json: null`
 * must not), so `null`, empty and dummy values count as absent — and are removed from what is sent,
 * so the engine and the guard agree on what the request is. Fields that make an engine copy prompt
 * text into the answer (vLLM/SGLang `echo`, `continue_final_message`, …) would forge a valid echo from
 * a prompt that was never read, and logprobs put text where the scanner does not look: refused. A field
 * the guard sets itself (`cache_salt`, which scopes the engine's prefix cache) is removed whatever the
 * client put there: a client choosing its salt could pick another tenant's, or '' (no isolation).
 */
import { GuardError } from '../errors'
import type { ProofKind } from '../vocabulary/request-facts'

/** What the guard needs to know about a request before calling the upstream. */
export interface RequestFacts {
  stream: boolean
  /** The request's own output limit (`max_tokens` or `max_completion_tokens`), if it sets one. */
  maxTokens: number | undefined
  /** Which field carried the limit, to rewrite it when clamping. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens' | undefined
  /** The strongest echo this request's output format can carry. */
  proof: ProofKind
  /**
   * The inputs with null, empty and dummy opt-out fields and the guard's own fields removed (what is
   * sent upstream, before the guard adds its canary and cache salt).
   */
  inputs: Record<string, unknown>
}

const MAX_OUTPUT_TOKENS = 1 << 24

/** Deeper than any real chat request (tool schemas included) nests. */
const MAX_DEPTH = 64

/**
 * Fields refused whatever their value unless it is absent, `null` or `false` (or, for
 * `add_generation_prompt`, `true`): each makes the engine copy prompt text into the answer or return
 * text outside the fields the scanner reads.
 */
const REFUSED: Record<string, { allowed: unknown; why: string }> = {
  echo: { allowed: false, why: 'makes the engine copy the prompt into the answer' },
  add_generation_prompt: {
    allowed: true,
    why: 'continues the prompt instead of answering it, copying its text',
  },
  continue_final_message: { allowed: false, why: 'continues the prompt instead of answering it' },
  chat_template: { allowed: undefined, why: 'replaces the template the ceiling counts' },
  logprobs: { allowed: false, why: 'returns token text outside the fields the guard verifies' },
  top_logprobs: { allowed: 0, why: 'returns token text outside the verified fields' },
  prompt_logprobs: { allowed: undefined, why: 'returns prompt text outside the verified fields' },
  return_tokens_as_token_ids: { allowed: false, why: 'returns tokens the scanner cannot read' },
}

/**
 * How deep `value` nests (arrays and objects), counted without recursion and without a tuple per node
 * (two parallel stacks: a body at the value limit would otherwise allocate one array per value);
 * stops past `limit`.
 */
function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0
  const nodes: object[] = []
  const depths: number[] = []
  if (value !== null && typeof value === 'object') {
    nodes.push(value)
    depths.push(1)
  }
  while (nodes.length > 0) {
    const node = nodes.pop()!
    const depth = depths.pop()!
    if (depth > deepest) deepest = depth
    if (deepest > limit) return deepest
    const children = Array.isArray(node) ? node : Object.values(node)
    for (const child of children) {
      if (child !== null && typeof child === 'object') {
        nodes.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return deepest
}

function invalid(message: string, param: string): GuardError {
  return new GuardError('invalid_request', message, { param })
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/** `undefined`, `null`, `''`, `[]` and `{}`: an opt-out field holding one of these is absent. */
function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true
  if (Array.isArray(value)) return value.length === 0
  return isRecord(value) && Object.keys(value).length === 0
}

/** The name of a tool definition in either shape Workers AI takes, or undefined. */
function toolName(tool: unknown): string | undefined {
  if (!isRecord(tool)) return undefined
  const fn = isRecord(tool.function) ? tool.function : tool
  return typeof fn.name === 'string' && fn.name !== '' ? fn.name : undefined
}

/**
 * Checks the request's envelope and removes empty opt-out fields. Message shapes are checked by the
 * ceiling's prompt reader.
 *
 * @example
 * readRequest({ messages: [{ role: 'user', content: 'hi' }], guided_json: null }).proof // 'text'
 */
export function readRequest(raw: unknown): RequestFacts {
  if (!isRecord(raw)) {
    throw new GuardError('invalid_request', 'The request inputs must be a JSON object.')
  }
  for (const [field, value] of Object.entries(raw)) {
    if (nestingDepth(value, MAX_DEPTH) > MAX_DEPTH) {
      // Forwarded as-is, such a request would overflow a serializer's stack on the way upstream.
      throw invalid(
        `"${field}" is nested deeper than ${MAX_DEPTH} levels (message content, JSON schemas and tool arguments never need that).`,
        field,
      )
    }
  }
  for (const [field, rule] of Object.entries(REFUSED)) {
    const value = raw[field]
    if (value === undefined || value === null || value === rule.allowed) continue
    throw invalid(
      `"${field}" is not supported through the guard: it ${rule.why}, so the answer could not be verified.`,
      field,
    )
  }
  const n = raw.n
  if (n !== undefined && n !== null && n !== 1) {
    throw invalid('Only one choice per request ("n": 1) can be verified.', 'n')
  }
  const stream = raw.stream
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw invalid('"stream" must be a boolean.', 'stream')
  }
  let maxTokens: number | undefined
  let maxTokensField: RequestFacts['maxTokensField']
  for (const field of ['max_completion_tokens', 'max_tokens'] as const) {
    const value = raw[field]
    if (value === undefined || value === null) continue
    if (
      !Number.isInteger(value) ||
      (value as number) < 1 ||
      (value as number) > MAX_OUTPUT_TOKENS
    ) {
      throw invalid(`"${field}" must be an integer from 1 to ${MAX_OUTPUT_TOKENS}.`, field)
    }
    // When both are set, the larger one is what the output may reach: reserve for that.
    if (maxTokens === undefined || (value as number) > maxTokens) {
      maxTokens = value as number
      maxTokensField = field
    }
  }
  const inputs = withoutEmptyOptOuts(raw)
  return { stream: stream === true, maxTokens, maxTokensField, proof: proofKind(inputs), inputs }
}

/** The opt-out fields whose empty values are dropped (so the engine does not see them either). */
const OPT_OUTS = ['tools', 'functions', 'tool_choice', 'response_format', 'guided_json'] as const

/**
 * Fields only the guard sets, dropped whatever their value: `cache_salt` is the tenant's prefix-cache
 * scope (src/core/canary/token.ts `cacheSalt`), and a client's value could only widen it.
 */
const GUARD_FIELDS = ['cache_salt'] as const

function withoutEmptyOptOuts(raw: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined
  for (const field of OPT_OUTS) {
    if (field in raw && isEmpty(raw[field])) {
      out ??= { ...raw }
      delete out[field]
    }
  }
  for (const field of GUARD_FIELDS) {
    if (Object.hasOwn(raw, field)) {
      out ??= { ...raw }
      delete out[field]
    }
  }
  return out ?? raw
}

/**
 * The strongest proof the output format allows. Tools only weaken the proof when the model may call
 * them: every definition must be a named function (a dummy entry is refused, not honoured), and
 * `tool_choice: "none"` keeps the ordinary echo.
 */
function proofKind(inputs: Record<string, unknown>): ProofKind {
  let callable = false
  for (const field of ['tools', 'functions'] as const) {
    const list = inputs[field]
    if (list === undefined) continue
    if (!Array.isArray(list)) throw invalid(`"${field}" must be an array.`, field)
    list.forEach((tool, i) => {
      if (toolName(tool) === undefined) {
        throw invalid(
          `"${field}[${i}]" must be a function definition with a name.`,
          `${field}[${i}]`,
        )
      }
    })
    callable = true
  }
  if (callable && inputs.tool_choice !== 'none') return 'none'
  if (inputs.guided_json !== undefined) return 'none' // schema-constrained: a canary in it proves nothing
  const format = inputs.response_format
  if (format !== undefined) {
    if (!isRecord(format) || typeof format.type !== 'string') {
      throw invalid('"response_format" must be an object with a string "type".', 'response_format')
    }
    if (format.type === 'json_object') return 'json'
    if (format.type === 'json_schema') return 'none'
    if (format.type !== 'text') {
      throw invalid(
        `"response_format.type" must be "text", "json_object" or "json_schema".`,
        'response_format.type',
      )
    }
  }
  return 'text'
}
