/**
 * @module The binding's wire formats: chat-completions objects and chunks, the legacy `{ response }`
 * format, and SSE bytes split at awkward places the way a real network splits them.
 */
import { type Prng, randomInt } from './random'
import type { SimToolCall } from './tools'

/** Token accounting, as Workers AI reports it for chat models. */
export interface SimUsage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  prompt_tokens_details: { cached_tokens: number }
}

/** The non-stream chat-completions result. */
export interface ChatCompletion {
  id: string
  object: 'chat.completion'
  created: number
  model: string
  choices: {
    index: 0
    message: {
      role: 'assistant'
      content: string
      reasoning_content: string | null
      tool_calls?: SimToolCall[]
    }
    finish_reason: 'stop' | 'length' | 'tool_calls'
  }[]
  usage: SimUsage
}

/** The non-stream legacy result. */
export interface LegacyCompletion {
  response: string
  usage: SimUsage
}

/** One generated answer, already split into event-sized deltas. */
export interface Answer {
  id: string
  created: number
  model: string
  reasoningDeltas: string[]
  contentDeltas: string[]
  /** The request offered callable tools: the call the model makes (after its content). */
  toolCall?: SimToolCall
  finishReason: 'stop' | 'length'
  usage: SimUsage
}

/** A finished answer that called a tool ends with `tool_calls`, as OpenAI's do. */
function finishOf(a: Answer): 'stop' | 'length' | 'tool_calls' {
  return a.toolCall && a.finishReason === 'stop' ? 'tool_calls' : a.finishReason
}

/** One SSE event to send after `delayMs` (the time decode took to produce it). */
export interface TimedEvent {
  delayMs: number
  data: string
}

/**
 * The chat-completions object for a finished answer.
 *
 * @example
 * return chatCompletion(answer)
 */
export function chatCompletion(a: Answer): ChatCompletion {
  const reasoning = a.reasoningDeltas.join('')
  return {
    id: a.id,
    object: 'chat.completion',
    created: a.created,
    model: a.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: a.contentDeltas.join(''),
          reasoning_content: reasoning.length > 0 ? reasoning : null,
          ...(a.toolCall ? { tool_calls: [a.toolCall] } : {}),
        },
        finish_reason: finishOf(a),
      },
    ],
    usage: a.usage,
  }
}

/**
 * The legacy object (`@cf/meta/llama-3.1-8b-instruct` and friends).
 *
 * @example
 * return legacyCompletion(answer) // { response, usage }
 */
export function legacyCompletion(a: Answer): LegacyCompletion {
  return { response: a.contentDeltas.join(''), usage: a.usage }
}

/**
 * SSE events of a chat stream: reasoning deltas, content deltas, a finish chunk, a usage chunk
 * (`choices: []`), `[DONE]`. `tokenDelays[i]` is the decode time of delta i; `firstDelayMs` the prefill.
 *
 * @example
 * const events = chatEvents(answer, 40, delays, true)
 */
export function chatEvents(
  a: Answer,
  firstDelayMs: number,
  deltaDelays: readonly number[],
  includeUsage: boolean,
): TimedEvent[] {
  const head = { id: a.id, object: 'chat.completion.chunk', created: a.created, model: a.model }
  const events: TimedEvent[] = []
  let i = 0
  const push = (delta: Record<string, unknown>): void => {
    const full = i === 0 ? { role: 'assistant', ...delta } : delta
    const delayMs = i === 0 ? firstDelayMs : (deltaDelays[i] ?? 0)
    events.push({
      delayMs,
      data: json({ ...head, choices: [{ index: 0, delta: full, finish_reason: null }] }),
    })
    i++
  }
  for (const d of a.reasoningDeltas) push({ reasoning_content: d })
  for (const d of a.contentDeltas) push({ content: d })
  if (i === 0) push({ content: '' })
  if (a.toolCall) push({ tool_calls: [{ index: 0, ...a.toolCall }] })
  events.push({
    delayMs: 0,
    data: json({ ...head, choices: [{ index: 0, delta: {}, finish_reason: finishOf(a) }] }),
  })
  if (includeUsage)
    events.push({ delayMs: 0, data: json({ ...head, choices: [], usage: a.usage }) })
  events.push({ delayMs: 0, data: '[DONE]' })
  return events
}

/**
 * SSE events of a legacy stream: `{"response":"…"}` content deltas, then a usage event, then `[DONE]`.
 *
 * @example
 * const events = legacyEvents(answer, 40, delays)
 */
export function legacyEvents(
  a: Answer,
  firstDelayMs: number,
  deltaDelays: readonly number[],
): TimedEvent[] {
  const events: TimedEvent[] = a.contentDeltas.map((d, i) => ({
    delayMs: i === 0 ? firstDelayMs : (deltaDelays[i] ?? 0),
    data: json({ response: d }),
  }))
  events.push({
    delayMs: events.length === 0 ? firstDelayMs : 0,
    data: json({ response: '', usage: a.usage }),
  })
  events.push({ delayMs: 0, data: '[DONE]' })
  return events
}

function json(value: unknown): string {
  return JSON.stringify(value)
}

const encoder = new TextEncoder()

/**
 * Splits one event's bytes (plus any carry from the previous event) into the pieces to send now and
 * the tail to carry into the next send. Cuts land mid-event, mid-`data:` prefix, between the two
 * closing newlines, or inside a multi-byte UTF-8 character — every place a naive SSE parser breaks.
 *
 * @example
 * const { now, carry } = splitEvent(bytes, rand, 0.5)
 */
export function splitEvent(
  bytes: Uint8Array,
  rand: Prng,
  splitRate: number,
): { now: Uint8Array[]; carry: Uint8Array | undefined } {
  if (bytes.length < 2 || rand() >= splitRate) return { now: [bytes], carry: undefined }
  const cut = chooseCut(bytes, rand)
  const head = bytes.subarray(0, cut)
  const carry = bytes.subarray(cut)
  if (head.length >= 2 && rand() < splitRate / 2) {
    const inner = randomInt(rand, 1, head.length - 1)
    return { now: [head.subarray(0, inner), head.subarray(inner)], carry }
  }
  return { now: [head], carry }
}

function chooseCut(bytes: Uint8Array, rand: Prng): number {
  const r = rand()
  if (r < 0.4) {
    const inside: number[] = []
    for (let i = 1; i < bytes.length; i++) if (((bytes[i] ?? 0) & 0xc0) === 0x80) inside.push(i)
    if (inside.length > 0) return inside[randomInt(rand, 0, inside.length - 1)]!
  }
  if (r < 0.6 && bytes.length > 6) return randomInt(rand, 1, 5)
  if (r < 0.75) return bytes.length - 1
  return randomInt(rand, 1, bytes.length - 1)
}

/**
 * The bytes of one SSE event.
 *
 * @example
 * sseBytes('[DONE]') // 'data: [DONE]\n\n' as UTF-8
 */
export function sseBytes(data: string): Uint8Array {
  return encoder.encode(`data: ${data}\n\n`)
}

/**
 * Concatenates byte chunks.
 *
 * @example
 * concatBytes(carry, next)
 */
export function concatBytes(a: Uint8Array | undefined, b: Uint8Array): Uint8Array {
  if (!a || a.length === 0) return b
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}
