/**
 * @module Shared fixtures for the simulator tests: tenant prompts with recognisable secrets, and an SSE
 * reader that reassembles awkwardly split byte chunks into events.
 */
import { env } from 'cloudflare:workers'
import { type SimConfig, SimEngine } from '../../sim/engine'
import type { SimControl } from '../../sim/worker'

/** The model every chat test uses. */
export const GLM = '@cf/zai-org/glm-5.3'
/** A model answered in the legacy `{ response }` format by default. */
export const LLAMA = '@cf/meta/llama-3.1-8b-instruct'

/** The simulator Worker's RPC surface, as the test env binds it. */
export function simRpc(): SimControl {
  return (env as unknown as { AI: SimControl }).AI
}

/** `count` lines, each holding tenant `tag`'s secret, e.g. `SECRET-A-…`. */
export function secretLines(tag: string, count: number): string {
  const lines: string[] = []
  for (let i = 0; i < count; i++) {
    lines.push(`SECRET-${tag}-7Q2X9 ledger row ${i}: account ${tag}-${4400 + i} owes 1,337 kr.`)
  }
  return lines.join('\n')
}

/** Anything that counts a request's tokens the way the simulated model does (`SimEngine`). */
export interface TokenCounter {
  countTokens(inputs: Record<string, unknown>): Promise<number>
}

/**
 * The most lines of `secretLines(tag, n)` whose one-message prompt is at most `maxTokens` tokens in the
 * simulated model's tokenizer: sizes follow the tokenizer instead of being tuned to one.
 *
 * @example
 * const lines = await linesWithin(sim, 'A', 4_000) // fits a 4,096-token pool
 */
export async function linesWithin(
  counter: TokenCounter,
  tag: string,
  maxTokens: number,
): Promise<number> {
  let lo = 0
  let hi = 1
  while ((await counter.countTokens(userMessage(secretLines(tag, hi)))) <= maxTokens) hi *= 2
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if ((await counter.countTokens(userMessage(secretLines(tag, mid)))) <= maxTokens) lo = mid
    else hi = mid
  }
  return lo
}

/** A chat request with one user message. */
export function userMessage(content: string, extra: Record<string, unknown> = {}) {
  return { messages: [{ role: 'user', content }], ...extra }
}

/** A chat object's reasoning and content. */
export function chatText(out: unknown): { reasoning: string; content: string; usage: Usage } {
  const o = out as {
    choices: { message: { content: string; reasoning_content: string | null } }[]
    usage: Usage
  }
  const message = o.choices[0]!.message
  return { reasoning: message.reasoning_content ?? '', content: message.content, usage: o.usage }
}

/** Usage as the simulator reports it. */
export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  prompt_tokens_details?: { cached_tokens: number }
}

/** A reassembled SSE stream. */
export interface ReadStream {
  chunks: Uint8Array[]
  events: unknown[]
  done: boolean
  reasoning: string
  content: string
  finishReason: string | null
  usage: Usage | null
  /** ms from `start` to the first byte. */
  ttftMs: number
}

/**
 * Reads a stream to its end, parsing `data:` events across arbitrary chunk boundaries.
 *
 * @example
 * const read = await readSse(stream, Date.now())
 */
export async function readSse(stream: unknown, start = Date.now()): Promise<ReadStream> {
  if (!(stream instanceof ReadableStream)) throw new Error('expected a ReadableStream')
  const chunks: Uint8Array[] = []
  let ttftMs = -1
  for await (const chunk of stream as ReadableStream<Uint8Array>) {
    if (ttftMs < 0) ttftMs = Date.now() - start
    chunks.push(chunk)
  }
  const text = new TextDecoder().decode(concat(chunks))
  const out: ReadStream = {
    chunks,
    events: [],
    done: false,
    reasoning: '',
    content: '',
    finishReason: null,
    usage: null,
    ttftMs,
  }
  const frames = text.split('\n\n')
  if (frames.pop() !== '') throw new Error('stream did not end with a complete event')
  for (const frame of frames) {
    if (!frame.startsWith('data: ')) throw new Error(`bad frame: ${frame.slice(0, 40)}`)
    const data = frame.slice(6)
    if (data === '[DONE]') {
      out.done = true
      continue
    }
    const event = JSON.parse(data) as Record<string, unknown>
    out.events.push(event)
    if ('response' in event) out.content += String(event.response)
    const choices = event.choices as
      | { delta: Record<string, string>; finish_reason: string | null }[]
      | undefined
    const choice = choices?.[0]
    if (choice) {
      out.reasoning += choice.delta.reasoning_content ?? ''
      out.content += choice.delta.content ?? ''
      if (choice.finish_reason) out.finishReason = choice.finish_reason
    }
    if (event.usage) out.usage = event.usage as Usage
  }
  return out
}

/** Concatenated bytes. */
export function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}

/**
 * The error a promise rejects with (RPC promises must be awaited directly: handing them to
 * `expect().rejects` leaves workerd reporting the rejection as unhandled).
 */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise
  } catch (error) {
    return error as Error
  }
  throw new Error('expected a rejection')
}

/** An in-process engine on a small pool, with instant prefill and decode (tests time nothing here). */
export function quickEngine(config: Partial<SimConfig> = {}): SimEngine {
  return new SimEngine({
    poolTokens: 4096,
    prefillTokensPerSecond: Infinity,
    decodeTokensPerSecond: Infinity,
    ...config,
  })
}
