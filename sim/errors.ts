/**
 * @module The errors the simulated binding throws, shaped like the Workers AI binding's own.
 */

/** Workers AI error codes the simulator uses. */
export const AI_ERROR = {
  /** The input is malformed (no messages, wrong types). */
  invalidInput: 5006,
  /**
   * The prompt does not fit: the advertised window (stating prompt + `max_tokens`), or SGLang's real
   * limit in `fixed` mode (stating the prompt's tokens).
   */
  contextLength: 5021,
  /** No KV pages came free in time. */
  capacity: 3040,
} as const

/** One of the {@link AI_ERROR} codes. */
export type AiErrorCode = (typeof AI_ERROR)[keyof typeof AI_ERROR]

/**
 * An error as the binding throws it: the message starts with `AiError: <code>: ` because only the message
 * survives an RPC hop, so the code must travel inside it.
 *
 * @example
 * throw new SimAiError(AI_ERROR.capacity, 'Capacity temporarily exceeded, please try again.')
 */
export class SimAiError extends Error {
  readonly code: AiErrorCode

  constructor(code: AiErrorCode, detail: string) {
    super(`AiError: ${code}: ${detail}`)
    this.code = code
  }
}

/**
 * Reads the code back from any thrown value (also after an RPC hop, where only the message survives).
 *
 * @example
 * aiErrorCode(new Error('AiError: 3040: Capacity temporarily exceeded')) // 3040
 */
export function aiErrorCode(error: unknown): number | undefined {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : ''
  const match = /^AiError: (\d+): /.exec(message)
  return match ? Number(match[1]) : undefined
}

/**
 * SGLang's own rejection text, kept verbatim so logs and guards can recognise it.
 *
 * @example
 * sglangLengthMessage(700_000, 681_274)
 */
export function sglangLengthMessage(inputTokens: number, maxTokens: number): string {
  return `Input length (${inputTokens} tokens) exceeds the maximum allowed length (${maxTokens} tokens)`
}

/**
 * Workers AI's own refusal of a request over the advertised window; `estimated` is the prompt's tokens
 * plus the request's `max_tokens`, so a caller that knows its `max_tokens` can read the engine's count.
 *
 * @example
 * windowMessage(1_048_833, 1_048_576)
 * // 'The estimated number of input and maximum output tokens (1048833) exceeded this model context window limit (1048576).'
 */
export function windowMessage(estimated: number, window: number): string {
  return `The estimated number of input and maximum output tokens (${estimated}) exceeded this model context window limit (${window}).`
}
