/**
 * @module Putting the tenant's prefix marker at the very start of a prompt (`cacheIsolation:
 * 'prefix'`), without mutating the caller's inputs.
 *
 * Why the start: an engine's prefix cache matches a prompt page by page from its first token, so two
 * prompts whose first line differs share no cached page, however long the rest they have in common.
 * One marker per tenant keeps each tenant's own cache hits and gives up only the cross-tenant ones —
 * which are what a time-to-first-token probe reads another tenant's prompt from.
 */
import { GuardError } from '../errors'

/**
 * A NEW inputs object whose prompt starts with `marker` and a space: before the first message's text
 * (a string, or the first part of a parts array when it is text, else a new text part before it; an
 * empty or absent content becomes the marker) and before a legacy `prompt`. When both are present both get it. On the first line rather
 * than a line of its own, so a model that quotes how the prompt opens still quotes its first words
 * (the marker itself is cut from every answer).
 *
 * @example
 * prependMarker({ messages: [{ role: 'system', content: 'Be brief.' }] }, marker)
 * // { messages: [{ role: 'system', content: 'cnry_… Be brief.' }] }
 */
export function prependMarker(
  inputs: Record<string, unknown>,
  marker: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...inputs }
  if (Array.isArray(inputs.messages) && inputs.messages.length > 0) {
    const [first, ...rest] = inputs.messages as unknown[]
    out.messages = [withMarker(first, marker), ...rest]
  }
  if (typeof inputs.prompt === 'string') out.prompt = `${marker} ${inputs.prompt}`
  return out
}

function withMarker(message: unknown, marker: string): unknown {
  if (typeof message !== 'object' || message === null) {
    throw new GuardError('invalid_request', 'Each message must be an object.', {
      param: 'messages[0]',
    })
  }
  const content = (message as { content?: unknown }).content
  if (typeof content === 'string') {
    return { ...message, content: content === '' ? marker : `${marker} ${content}` }
  }
  if (Array.isArray(content)) {
    const [first, ...rest] = content as unknown[]
    if (isTextPart(first)) {
      return { ...message, content: [{ ...first, text: `${marker} ${first.text}` }, ...rest] }
    }
    return { ...message, content: [{ type: 'text', text: marker }, ...content] }
  }
  return { ...message, content: marker }
}

function isTextPart(part: unknown): part is { type: 'text'; text: string } {
  if (typeof part !== 'object' || part === null) return false
  const { type, text } = part as { type?: unknown; text?: unknown }
  return type === 'text' && typeof text === 'string'
}
