/**
 * @module Reading one probe answer — an SSE stream or a whole object, in either Workers AI format —
 * into its texts, its usage, and its time to first token.
 *
 * Why the first token "of any kind": a reasoning model writes reasoning before content, and an
 * answer that skipped prefill streams its reasoning as fast as its content. Timing the first content
 * token would add the whole reasoning time and hide an impossible prefill; timing the first byte would
 * count headers that some servers send before prefill starts. So the clock stops at the first
 * reasoning, content or tool-call text.
 */
import { type Frame, parseFrame, sseDecoder } from '../../core'
import type { GuardSign } from './guard-sign'
import { messageOf, ProbeTransportError } from './transport-error'

/** What the target answered, as the probe judges it. Never printed: it may hold another tenant's text. */
export interface ProbeAnswer {
  /** Reasoning text (`reasoning_content`, or `reasoning` as some OpenAI-compatible servers name it). */
  reasoning: string
  /** Visible content, plus the arguments of any tool call (model-written text all the same). */
  content: string
  /** Milliseconds from sending to the first model-written text; null when none came. */
  ttftMs: number | null
  /** Milliseconds from sending to the end of the answer. */
  totalMs: number
  /** `usage.prompt_tokens`, when the target reported it. */
  promptTokens?: number
  /** `usage.prompt_tokens_details.cached_tokens`, when reported. */
  cachedTokens?: number
  /** `usage.completion_tokens`, when reported. */
  completionTokens?: number
  /** The finish reason, when reported. */
  finishReason: string | null
  /** Whether it arrived as a stream (else its TTFT is the whole answer's time: an upper bound). */
  streamed: boolean
  /** Set when the answer came from a workers-ai-guard endpoint (its `x-guard-*` headers). */
  guard?: GuardSign
  /** The model called a tool (its arguments are in `content`). */
  toolCalled?: boolean
  /** A streamed answer's events that carried model-written text, in order, each with its arrival time. */
  events?: AnswerEvent[]
}

/** One streamed event's model-written text. */
export interface AnswerEvent {
  reasoning: string
  content: string
  /** Milliseconds from sending to this event. */
  atMs: number
}

type Json = Record<string, unknown>

/**
 * Whether a JSON value is an object (not null, not an array).
 *
 * @example
 * if (isObject(json) && typeof json.message === 'string') message = json.message
 */
export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Some servers (vLLM, OpenRouter) name the reasoning field `reasoning`; the guard's parser does not. */
function reasoningAlias(json: Json | undefined, key: 'delta' | 'message'): string {
  const choices = json?.choices
  if (!Array.isArray(choices) || !isObject(choices[0])) return ''
  const body = choices[0][key]
  return isObject(body) && typeof body.reasoning === 'string' ? body.reasoning : ''
}

function applyUsage(answer: ProbeAnswer, usage: unknown): void {
  if (!isObject(usage)) return
  if (typeof usage.prompt_tokens === 'number') answer.promptTokens = usage.prompt_tokens
  if (typeof usage.completion_tokens === 'number') answer.completionTokens = usage.completion_tokens
  const details = usage.prompt_tokens_details
  if (isObject(details) && typeof details.cached_tokens === 'number') {
    answer.cachedTokens = details.cached_tokens
  }
}

function toolText(texts: Record<string, string | undefined>): string {
  let out = ''
  for (const [channel, text] of Object.entries(texts)) {
    if (channel.startsWith('tool:') && text) out += text
  }
  return out
}

/** The model-written texts of one frame: reasoning (under either name), content and tool calls. */
function modelTexts(
  frame: Pick<Frame, 'texts'>,
  json: Json | undefined,
  key: 'delta' | 'message',
): { reasoning: string; content: string } {
  return {
    reasoning: (frame.texts.reasoning ?? '') + reasoningAlias(json, key),
    content: (frame.texts.content ?? '') + toolText(frame.texts),
  }
}

/** An in-band error event (`data: {"error": …}`), which some servers send instead of a status. */
function inBandError(json: Json | undefined): string | undefined {
  if (json === undefined || !('error' in json)) return undefined
  const error = json.error
  if (isObject(error) && typeof error.message === 'string') return error.message
  return typeof error === 'string' ? error : 'the stream carried an error event'
}

/**
 * Reads an SSE answer to its end (so the target can release what it holds for it). `started` is
 * the `now()` reading taken just before the request was sent.
 *
 * @example
 * const started = now()
 * const res = await fetch(url, init)
 * const answer = await readAnswerStream(res.body!, started, now)
 */
export async function readAnswerStream(
  body: ReadableStream<Uint8Array>,
  started: number,
  now: () => number,
): Promise<ProbeAnswer> {
  const answer: ProbeAnswer = {
    reasoning: '',
    content: '',
    ttftMs: null,
    totalMs: 0,
    finishReason: null,
    streamed: true,
    events: [],
  }
  const decoder = sseDecoder({ maxEventBytes: 4 * 1024 * 1024 })
  const reader = body.pipeThrough(decoder).getReader()
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      const frame = parseFrame(r.value)
      if (frame.done) continue
      const error = inBandError(frame.json)
      if (error !== undefined) throw new ProbeTransportError('upstream', clip(error))
      const { reasoning, content } = modelTexts(frame, frame.json, 'delta')
      if (toolText(frame.texts) !== '') answer.toolCalled = true
      if (reasoning !== '' || content !== '') {
        const atMs = now() - started
        answer.ttftMs ??= atMs
        answer.events?.push({ reasoning, content, atMs })
      }
      answer.reasoning += reasoning
      answer.content += content
      if (frame.finishReason) answer.finishReason = frame.finishReason
      applyUsage(answer, frame.json?.usage)
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined)
    throw asTransportError(error)
  }
  if (decoder.truncated)
    throw new ProbeTransportError('malformed', 'the answer stream was cut short')
  answer.totalMs = now() - started
  return answer
}

/**
 * Reads a whole (non-stream) answer. Its TTFT is the whole answer's time, an upper bound on the real
 * one: the timing check can then only miss an impossible prefill, never invent one.
 *
 * @example
 * const answer = readAnswerObject(await res.json(), started, now)
 */
export function readAnswerObject(output: unknown, started: number, now: () => number): ProbeAnswer {
  const totalMs = now() - started
  const answer: ProbeAnswer = {
    reasoning: '',
    content: '',
    ttftMs: null,
    totalMs,
    finishReason: null,
    streamed: false,
  }
  if (!isObject(output)) throw new ProbeTransportError('malformed', 'the answer is not an object')
  const error = inBandError(output)
  if (error !== undefined) throw new ProbeTransportError('upstream', clip(error))
  let frame: Frame
  try {
    frame = parseFrame({ data: JSON.stringify(output) })
  } catch (cause) {
    throw asTransportError(cause)
  }
  if (frame.format === undefined) {
    throw new ProbeTransportError('malformed', 'the answer has an unknown shape')
  }
  const { reasoning, content } = modelTexts(frame, output, 'message')
  if (toolText(frame.texts) !== '') answer.toolCalled = true
  answer.reasoning = reasoning
  answer.content = content
  if (answer.reasoning !== '' || answer.content !== '') answer.ttftMs = totalMs
  answer.finishReason = frame.finishReason ?? null
  applyUsage(answer, output.usage)
  return answer
}

/** Error messages are clipped: a target's error text is not ours to print in full. */
export function clip(message: string, max = 300): string {
  const flat = message.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

function asTransportError(error: unknown): ProbeTransportError {
  if (error instanceof ProbeTransportError) return error
  return new ProbeTransportError('malformed', clip(messageOf(error)), { cause: error })
}
