/**
 * @module Reads the few request fields the guard decides on, rejecting malformed ones up front.
 */
import { GuardError } from './errors'

/** What the guard needs to know about a request before calling the upstream. */
export interface RequestFacts {
  stream: boolean
  /** The request's own output limit (`max_tokens` or `max_completion_tokens`), if it sets one. */
  maxTokens: number | undefined
  /** Which field carried the limit, to rewrite it when clamping. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens' | undefined
  /**
   * Whether an echo directive is safe: tool calls and JSON modes must produce exact output formats,
   * and a canary line at their start would break them, so those are scanned but not asked to echo.
   */
  echoSafe: boolean
}

const MAX_OUTPUT_TOKENS = 1 << 24

/** Deeper than any real chat request (tool schemas included) nests. */
const MAX_DEPTH = 64

/** How deep `value` nests (arrays and objects), counted without recursion; stops past `limit`. */
function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (node === null || typeof node !== 'object') continue
    if (depth > deepest) deepest = depth
    if (deepest > limit) return deepest
    for (const child of Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
    }
  }
  return deepest
}

/**
 * Checks the request's envelope. Message shapes are checked by the ceiling's prompt reader.
 *
 * @example
 * readRequest({ messages: [{ role: 'user', content: 'hi' }], stream: true }).stream // true
 */
export function readRequest(inputs: unknown): RequestFacts {
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
    throw new GuardError('invalid_request', 'The request inputs must be a JSON object.')
  }
  const record = inputs as Record<string, unknown>
  for (const [field, value] of Object.entries(record)) {
    if (nestingDepth(value, MAX_DEPTH) > MAX_DEPTH) {
      // Forwarded as-is, such a request would overflow a serializer's stack on the way upstream.
      throw new GuardError(
        'invalid_request',
        `"${field}" is nested deeper than ${MAX_DEPTH} levels (message content, JSON schemas and tool arguments never need that).`,
        { param: field },
      )
    }
  }
  const stream = record.stream
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw new GuardError('invalid_request', '"stream" must be a boolean.', { param: 'stream' })
  }
  let maxTokens: number | undefined
  let maxTokensField: RequestFacts['maxTokensField']
  for (const field of ['max_completion_tokens', 'max_tokens'] as const) {
    const value = record[field]
    if (value === undefined || value === null) continue
    if (
      !Number.isInteger(value) ||
      (value as number) < 1 ||
      (value as number) > MAX_OUTPUT_TOKENS
    ) {
      throw new GuardError(
        'invalid_request',
        `"${field}" must be an integer from 1 to ${MAX_OUTPUT_TOKENS}.`,
        { param: field },
      )
    }
    // When both are set, the larger one is what the output may reach: reserve for that.
    if (maxTokens === undefined || (value as number) > maxTokens) {
      maxTokens = value as number
      maxTokensField = field
    }
  }
  return { stream: stream === true, maxTokens, maxTokensField, echoSafe: echoSafe(record) }
}

function echoSafe(record: Record<string, unknown>): boolean {
  if (Array.isArray(record.tools) && record.tools.length > 0) return false
  if (Array.isArray(record.functions) && record.functions.length > 0) return false
  const format = record.response_format
  if (format !== null && typeof format === 'object') {
    const type = (format as Record<string, unknown>).type
    if (type === 'json_object' || type === 'json_schema') return false
  }
  if (record.guided_json !== undefined) return false
  return true
}
