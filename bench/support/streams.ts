/**
 * @module Recorded and paced SSE streams for the streaming bench: one long reasoning + content answer in
 * the simulator's own wire format (split at the same awkward byte boundaries), replayable any number
 * of times as identical bytes, optionally paced on a virtual clock at a decode rate.
 */
import type { SimClock } from '../../sim/clock'
import { mixSeed, PURPOSE, prng } from '../../sim/random'
import { type Answer, chatEvents, concatBytes, splitEvent, sseBytes } from '../../sim/wire'
import { english } from '../texts'

/** An answer recorded as the bytes a client of the upstream would read. */
export interface RecordedStream {
  chunks: Uint8Array[]
  /** Delay before each chunk, ms (the first is the prefill). */
  delays: number[]
  bytes: number
  events: number
  reasoningTokens: number
  contentTokens: number
}

/** About 4 characters per token for the bench's English. */
const CHARS_PER_TOKEN = 4

/**
 * A chat-format stream: `reasoningTokens` of reasoning, then content that opens with `echo` (the
 * canary the guard asked for, on its own line) and runs for `contentTokens`; `tokensPerEvent` tokens
 * per delta, decode paced at `decodeTokensPerSecond` after `prefillMs`.
 *
 * @example
 * const rec = recordStream({ echo: canary, reasoningTokens: 1_000, contentTokens: 1_000 })
 */
export function recordStream(options: {
  echo: string
  reasoningTokens: number
  contentTokens: number
  tokensPerEvent?: number
  decodeTokensPerSecond?: number
  prefillMs?: number
  seed?: number
  /** The reasoning opens with the code noted (a model following the `note-first` wording). */
  noteFirst?: boolean
}): RecordedStream {
  const perEvent = options.tokensPerEvent ?? 3
  const seed = options.seed ?? 5
  const deltas = (text: string) => {
    const out: string[] = []
    for (let i = 0; i < text.length; i += perEvent * CHARS_PER_TOKEN) {
      out.push(text.slice(i, i + perEvent * CHARS_PER_TOKEN))
    }
    return out
  }
  const reasoningDeltas = deltas(english(seed, options.reasoningTokens * CHARS_PER_TOKEN))
  if (options.noteFirst) reasoningDeltas.unshift(`Noting the code first: ${options.echo}. `)
  const contentDeltas = [
    `${options.echo}\n`,
    ...deltas(english(seed + 1, options.contentTokens * CHARS_PER_TOKEN)),
  ]
  const answer: Answer = {
    id: 'chatcmpl-bench',
    created: 1_787_788_800,
    model: '@cf/zai-org/glm-5.3',
    reasoningDeltas,
    contentDeltas,
    finishReason: 'stop',
    usage: {
      prompt_tokens: 40,
      completion_tokens: options.reasoningTokens + options.contentTokens,
      total_tokens: 40 + options.reasoningTokens + options.contentTokens,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  }
  const rate = options.decodeTokensPerSecond ?? Number.POSITIVE_INFINITY
  const step = Number.isFinite(rate) ? (perEvent / rate) * 1000 : 0
  const deltaDelays = [...reasoningDeltas, ...contentDeltas].map(() => step)
  const events = chatEvents(answer, options.prefillMs ?? 0, deltaDelays, true)
  const rand = prng(mixSeed(seed, 0, PURPOSE.split))
  const chunks: Uint8Array[] = []
  const delays: number[] = []
  let carry: Uint8Array | undefined
  let pending = 0
  for (const event of events) {
    pending += event.delayMs
    const split = splitEvent(concatBytes(carry, sseBytes(event.data)), rand, 0.5)
    for (const piece of split.now) {
      chunks.push(piece)
      delays.push(pending)
      pending = 0
    }
    carry = split.carry
  }
  if (carry) {
    chunks.push(carry)
    delays.push(pending)
  }
  let bytes = 0
  for (const c of chunks) bytes += c.length
  return {
    chunks,
    delays,
    bytes,
    events: events.length,
    reasoningTokens: options.reasoningTokens,
    contentTokens: options.contentTokens,
  }
}

/**
 * The recorded bytes as a fresh pull-based stream (one chunk per pull, like the simulator), waiting
 * each chunk's delay on `clock` when one is given.
 *
 * @example
 * await new Response(replay(rec)).arrayBuffer()
 */
export function replay(rec: RecordedStream, clock?: SimClock): ReadableStream<Uint8Array> {
  let next = 0
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const chunk = rec.chunks[next]
      if (!chunk) return controller.close()
      if (clock) await clock.sleep(rec.delays[next] ?? 0)
      next++
      controller.enqueue(chunk)
    },
  })
}
