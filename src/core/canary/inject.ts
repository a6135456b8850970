/**
 * @module Putting the canary echo directive at the very end of a prompt, without mutating the caller's
 * inputs.
 *
 * Why the end: an engine out of KV pages may replace an oversized request by a one-token placeholder, and with
 * auto-truncation SGLang silently drops the tail. Either way the model never reads the END of the
 * prompt. A directive that is the last text of the prompt, and that asks for the canary as the first
 * thing of the reply, turns "the model read all of this request" into a check on the first tokens:
 * an answer that does not open with this request's canary was not built from this request's prompt.
 */

import type { ChatMessage, ContentPart } from '../call/upstream'
import { GuardError } from '../errors'
import type { EchoWording } from '../vocabulary/options'
import { buildJsonEchoDirective } from './json-echo'

/** Between the prompt's own last text and the directive. */
const SEPARATOR = '\n\n'

/**
 * The echo directive for `canary`: plain text (no markup a pipeline might strip), harmless for the
 * answer. It matches (case-insensitively)
 * `/begin your (?:reply|answer|response) with(?: the (?:code|token|marker))?\s*[:"'`]*\s*([A-Za-z0-9_\-]+)/i`
 * with the canary as the capture, which is what the simulator's model looks for.
 *
 * @example
 * buildEchoDirective('cnry_0123456789abcdefghjkmnpq')
 * // 'Begin your reply with the code cnry_0123456789abcdefghjkmnpq on its own line, then answer normally.'
 */
export function buildEchoDirective(canary: string, wording: EchoWording = 'reply-first'): string {
  const reply = `Begin your reply with the code ${canary} on its own line, then answer normally.`
  // The note comes first: a model reads the directive in order, and the reply's line stays the one a
  // model that ignores the note still follows.
  return wording === 'note-first'
    ? `Note the code ${canary} first thing in your thinking. ${reply}`
    : reply
}

function isMessage(value: unknown): value is ChatMessage {
  return (
    typeof value === 'object' && value !== null && typeof (value as ChatMessage).role === 'string'
  )
}

/** A copy of `messages` whose last text is the directive. */
function injectMessages(messages: unknown[], directive: string): unknown[] {
  const out = messages.slice()
  const last = out[out.length - 1]
  if (isMessage(last) && last.role === 'user') {
    const content = last.content
    if (typeof content === 'string') {
      out[out.length - 1] = {
        ...last,
        content: content === '' ? directive : content + SEPARATOR + directive,
      }
      return out
    }
    if (Array.isArray(content)) {
      const part: ContentPart = { type: 'text', text: directive }
      out[out.length - 1] = { ...last, content: [...content, part] }
      return out
    }
    if (content === undefined || content === null) {
      out[out.length - 1] = { ...last, content: directive }
      return out
    }
  }
  // The last turn is not a user text (assistant, tool result, system): a new user turn goes last.
  out.push({ role: 'user', content: directive })
  return out
}

/**
 * A NEW inputs object whose prompt ends with the echo directive for `canary` (the caller's object,
 * messages and parts are never mutated). Chat `messages`: appended to the last message when it is a
 * user message (string content, or a new text part at the end of a parts array), else a new user
 * message is appended. Legacy `prompt`: appended to the prompt. When both are present both get it,
 * so whichever the model reads ends with it. Neither: `GuardError('invalid_request')`. `kind: 'json'`
 * asks for the JSON-mode echo member instead (see json-echo.ts); `wording` is the profile's
 * {@link EchoWording} for a text echo.
 *
 * @example
 * injectCanary({ messages: [{ role: 'user', content: 'Hi' }] }, canary)
 * // { messages: [{ role: 'user', content: 'Hi\n\nBegin your reply with the code cnry_… …' }] }
 */
export function injectCanary(
  inputs: Record<string, unknown>,
  canary: string,
  kind: 'text' | 'json' = 'text',
  wording: EchoWording = 'reply-first',
): Record<string, unknown> {
  const directive =
    kind === 'json' ? buildJsonEchoDirective(canary) : buildEchoDirective(canary, wording)
  const out: Record<string, unknown> = { ...inputs }
  let injected = false
  if (inputs.messages !== undefined) {
    if (!Array.isArray(inputs.messages)) {
      throw new GuardError('invalid_request', '`messages` must be an array.', { param: 'messages' })
    }
    out.messages = injectMessages(inputs.messages, directive)
    injected = true
  }
  if (inputs.prompt !== undefined) {
    if (typeof inputs.prompt !== 'string') {
      throw new GuardError('invalid_request', '`prompt` must be a string.', { param: 'prompt' })
    }
    out.prompt = inputs.prompt === '' ? directive : inputs.prompt + SEPARATOR + directive
    injected = true
  }
  if (!injected) {
    throw new GuardError('invalid_request', 'The request has neither `messages` nor `prompt`.')
  }
  return out
}
