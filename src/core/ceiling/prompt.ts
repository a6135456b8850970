/**
 * @module What the model really reads from a request, as text pieces to count, plus the fixed costs.
 */
import { GuardError } from '../errors'

/** The countable content of a request and the things charged at a fixed cost. */
export interface PromptPieces {
  /** Every text the chat template puts in front of the model (roles, contents, tool JSON, …). */
  texts: string[]
  /** Messages the template wraps (a legacy `prompt` counts as one user message). */
  messages: number
  /** Tool and function definitions (each gets {@link TOKENS_PER_TOOL} on top of its JSON). */
  tools: number
  /** Image, audio and other non-text content parts, charged {@link TOKENS_PER_NON_TEXT_PART} each. */
  nonTextParts: number
  /**
   * An upper bound of the tokens the guard itself adds to the prompt (its echo directive, the tenant's
   * marker: src/core/plan/guard-additions.ts): the ceiling charges it on top of the template's overhead;
   * lower bounds (timing, the usage cross-check) and calibration leave it out. @default 0
   */
  guardTokens?: number
}

/**
 * Template tokens per message: the role markers and separators a chat template adds around each
 * message (OpenAI's published figure for ChatML is 3–4; GLM's `<|user|>\n…` is in the same range).
 * The drift margin covers templates that spend a little more.
 */
export const TOKENS_PER_MESSAGE = 4

/** Priming tokens: the assistant header the template appends so the model starts its answer. */
const PRIMING_TOKENS = 3

/** Per tool definition: the wrapper the template puts around each tool's JSON. */
const TOKENS_PER_TOOL = 8

/**
 * Per image, audio or other non-text part. We cannot count what the model's encoder makes of a
 * picture, so each part is charged a fixed, generous figure (a 1024-token tile budget); models
 * that spend more need a profile with a larger drift or a smaller pool.
 */
const TOKENS_PER_NON_TEXT_PART = 1024

function invalid(message: string, param: string): GuardError {
  return new GuardError('invalid_request', message, { param })
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** JSON for tool schemas and calls; a value JSON cannot carry (cycles, BigInt) is a bad request. */
function json(value: unknown, param: string): string {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch {
    throw invalid(`${param} must be JSON-serializable.`, param)
  }
  return text ?? ''
}

function readContent(
  content: unknown,
  param: string,
  into: { texts: string[]; nonTextParts: number },
): void {
  if (content === undefined || content === null) return // assistant turns with only tool calls
  if (typeof content === 'string') {
    into.texts.push(content)
    return
  }
  if (!Array.isArray(content)) {
    throw invalid(`${param} must be a string, an array of content parts, or null.`, param)
  }
  content.forEach((part: unknown, j) => {
    const at = `${param}[${j}]`
    if (!isRecord(part) || typeof part.type !== 'string') {
      throw invalid(`${at} must be an object with a string "type".`, at)
    }
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw invalid(`${at}.text must be a string.`, `${at}.text`)
      into.texts.push(part.text)
      return
    }
    // An image or audio part: its tokens are not countable here, so it is charged a fixed cost.
    into.nonTextParts++
    // Any text riding along (e.g. `input_text` shapes) is counted too: over-counting is the safe side.
    if (typeof part.text === 'string') into.texts.push(part.text)
  })
}

function readDefinitions(inputs: Record<string, unknown>, key: string, texts: string[]): number {
  const value = inputs[key]
  if (value === undefined || value === null) return 0
  if (!Array.isArray(value)) throw invalid(`${key} must be an array.`, key)
  for (const [i, definition] of value.entries()) texts.push(json(definition, `${key}[${i}]`))
  return value.length
}

/**
 * Everything in `inputs` the model reads, as texts to count, and the counts of things charged at a
 * fixed cost. Counts err on the side of too many tokens: the ceiling exists because a prompt the
 * guard under-counted could overflow the real KV pool, and an overflowing request reads other
 * requests' cache pages. So every field a template may render is included:
 * roles, names, contents, tool calls and results, reasoning sent back, tool schemas, the
 * response-format schema, a legacy `prompt`.
 *
 * @throws GuardError `invalid_request` (with `param`) when the shapes are wrong.
 * @example
 * const pieces = promptPieces({ messages: [{ role: 'user', content: 'Hello' }] })
 * // { texts: ['user', 'Hello'], messages: 1, tools: 0, nonTextParts: 0 }
 */
export function promptPieces(inputs: Record<string, unknown>): PromptPieces {
  const into = { texts: [] as string[], nonTextParts: 0 }
  const { texts } = into
  let messages = 0
  const rawMessages = inputs.messages
  const prompt = inputs.prompt

  if (rawMessages !== undefined && rawMessages !== null) {
    if (!Array.isArray(rawMessages)) throw invalid('messages must be an array.', 'messages')
    rawMessages.forEach((message: unknown, i) => {
      const at = `messages[${i}]`
      if (!isRecord(message)) throw invalid(`${at} must be an object.`, at)
      if (typeof message.role !== 'string') {
        throw invalid(`${at}.role must be a string.`, `${at}.role`)
      }
      texts.push(message.role)
      for (const key of ['name', 'tool_call_id'] as const) {
        const value = message[key]
        if (value === undefined || value === null) continue
        if (typeof value !== 'string')
          throw invalid(`${at}.${key} must be a string.`, `${at}.${key}`)
        texts.push(value)
      }
      readContent(message.content, `${at}.content`, into)
      // Reasoning a client sends back is rendered by some templates; count it rather than guess.
      for (const key of ['reasoning_content', 'reasoning'] as const) {
        const value = message[key]
        if (typeof value === 'string') texts.push(value)
      }
      for (const key of ['tool_calls', 'function_call'] as const) {
        const value = message[key]
        if (value === undefined || value === null) continue
        if (key === 'tool_calls' && !Array.isArray(value)) {
          throw invalid(`${at}.tool_calls must be an array.`, `${at}.tool_calls`)
        }
        texts.push(json(value, `${at}.${key}`))
      }
    })
    messages += rawMessages.length
  }

  if (prompt !== undefined && prompt !== null) {
    if (typeof prompt !== 'string') throw invalid('prompt must be a string.', 'prompt')
    texts.push(prompt)
    messages++ // the template wraps a bare prompt as one user turn
  }

  if (messages === 0) {
    throw invalid('The request has no messages and no prompt: nothing to send.', 'messages')
  }

  const tools =
    readDefinitions(inputs, 'tools', texts) + readDefinitions(inputs, 'functions', texts)
  for (const key of ['response_format', 'guided_json'] as const) {
    const value = inputs[key]
    if (value !== undefined && value !== null) texts.push(json(value, key))
  }
  return { texts, messages, tools, nonTextParts: into.nonTextParts }
}

/**
 * The fixed tokens a chat template adds around the counted texts, plus the fixed charge for
 * non-text parts. Added after the drift margin (they are constants, not tokenizer estimates). Not the
 * guard's additions (`guardTokens`): a byte bound, which the ceiling charges and no lower bound may use.
 *
 * @example
 * templateOverhead({ texts: ['user', 'hi'], messages: 1, tools: 0, nonTextParts: 0 }) // 4 + 3 = 7
 */
export function templateOverhead(pieces: PromptPieces): number {
  return (
    PRIMING_TOKENS +
    pieces.messages * TOKENS_PER_MESSAGE +
    pieces.tools * TOKENS_PER_TOOL +
    pieces.nonTextParts * TOKENS_PER_NON_TEXT_PART
  )
}
