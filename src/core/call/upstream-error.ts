/**
 * @module Upstream failures normalised into one typed error, the original kept as `cause`.
 */
import { CANARY_PATTERN } from '../canary'
import { GuardError } from '../errors'

/**
 * Maps anything the upstream threw to `upstream_error`, keeping a status the client can act on:
 * 429 for capacity (retry later), 400 when the upstream itself refused the length, 504 for timeouts,
 * else 502. The upstream's message is shortened and never carries a canary.
 *
 * @example
 * try { await env.AI.run(model, inputs) } catch (e) { throw upstreamError(e) }
 */
export function upstreamError(error: unknown): GuardError {
  if (error instanceof GuardError) return error
  const raw = error instanceof Error ? error.message : typeof error === 'string' ? error : ''
  const message = raw.replace(new RegExp(CANARY_PATTERN.source, 'gi'), '[redacted]').slice(0, 300)
  let status = 502
  if (/\b3040\b|capacity|rate limit|too many requests|\b429\b/i.test(message)) status = 429
  else if (
    // 5006: Workers AI's invalid-input class (the client's fault); 5021: over the model's window.
    /\b5006\b|\b5021\b|exceeds the maximum allowed length|context (window|length)/i.test(message)
  ) {
    status = 400
  } else if (/timed? ?out|timeout|\b504\b/i.test(message)) status = 504
  return new GuardError(
    'upstream_error',
    message ? `The upstream model failed: ${message}` : 'The upstream model failed.',
    { status, cause: error },
  )
}

/**
 * How many prompt tokens an engine's length refusal says the prompt had, or undefined when the error
 * states no count. Workers AI (`5021: The estimated number of input and maximum output tokens (N)
 * exceeded …`) counts the output reserve in N, so the request's `max_tokens` is taken off (when the
 * request set none, N over-states the prompt by the engine's default reserve: the strict side);
 * SGLang (`Input length (N tokens) exceeds …`) and vLLM (`… (N in the messages, …)`, `your messages
 * resulted in N tokens`) state the prompt alone.
 *
 * @example
 * statedPromptTokens(new Error('AiError: 5021: The estimated number of input and maximum output tokens (1100256) exceeded this model context window limit (1048576).'), 256) // 1_100_000
 */
export function statedPromptTokens(
  error: unknown,
  maxTokens: number | undefined,
): number | undefined {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : ''
  const withOutput = /input and maximum output tokens \((\d+)\)/i.exec(message)
  if (withOutput) return Math.max(0, Number(withOutput[1]) - (maxTokens ?? 0))
  const prompt =
    /Input length \((\d+) tokens?\)/i.exec(message) ??
    /\((\d+) in the messages/i.exec(message) ??
    /messages resulted in (\d+) tokens/i.exec(message)
  return prompt ? Number(prompt[1]) : undefined
}
