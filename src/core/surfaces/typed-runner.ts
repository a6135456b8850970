/**
 * @module What a guarded runner resolves to, typed for code that reads it (`c.var.ai.run`), and the
 * SSE `Response` for a guarded stream.
 */
import type { AiRunner } from '../call/upstream'
import { guardInfo } from '../guard'

/** Token counts as Workers AI reports them. */
export interface AnswerUsage {
  prompt_tokens?: number
  completion_tokens?: number
  total_tokens?: number
  prompt_tokens_details?: { cached_tokens?: number }
}

/** One tool call of a chat answer. */
export interface AnswerToolCall {
  id?: string
  type?: 'function'
  function: { name: string; arguments: string }
}

/** One choice of a chat answer (`choices[0]` for every Workers AI chat model). */
export interface AnswerChoice {
  index: number
  message: {
    role: string
    content: string | null
    /** Reasoning models (GLM-5.3): the reasoning, verified like the content. */
    reasoning_content?: string | null
    tool_calls?: AnswerToolCall[]
  }
  finish_reason: string | null
}

/**
 * A released whole answer, canaries removed: the chat-completions object (`choices`) of chat models,
 * or the legacy `{ response }` of older ones, as `env.AI.run` returns them.
 */
export interface AiAnswer {
  id?: string
  object?: string
  model?: string
  choices?: AnswerChoice[]
  /** Legacy models' text. */
  response?: string
  usage?: AnswerUsage
  [field: string]: unknown
}

/**
 * A guarded runner with its results typed: a stream (`stream: true`) resolves to the SSE bytes, a
 * whole request to its {@link AiAnswer}.
 *
 * @example
 * const answer = await c.var.ai.run(MODEL, { messages })
 * const text = answer.choices?.[0]?.message.content
 */
export interface GuardedAi extends AiRunner {
  run(
    model: string,
    inputs: Record<string, unknown> & { stream: true },
    options?: Record<string, unknown>,
  ): Promise<ReadableStream<Uint8Array>>
  run(
    model: string,
    inputs: Record<string, unknown> & { stream?: false },
    options?: Record<string, unknown>,
  ): Promise<AiAnswer>
  run(
    model: string,
    inputs: Record<string, unknown>,
    options?: Record<string, unknown>,
  ): Promise<AiAnswer | ReadableStream<Uint8Array>>
}

/**
 * The `Response` for a guarded stream: SSE headers, and the guard's request id (`x-guard-request-id`)
 * when the guard released it. A stream the guard stops later ends with its error event.
 *
 * @example
 * return sseResponse(await c.var.ai.run(MODEL, { messages, stream: true }))
 */
export function sseResponse(stream: ReadableStream<Uint8Array>, init: ResponseInit = {}): Response {
  const headers = new Headers(init.headers)
  headers.set('content-type', 'text/event-stream; charset=utf-8')
  headers.set('cache-control', 'no-cache')
  const info = guardInfo(stream)
  if (info) headers.set('x-guard-request-id', info.requestId)
  return new Response(stream, { ...init, headers })
}
