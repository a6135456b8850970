/**
 * @module Scripted probe transports for unit tests: a target that answers correctly up to a limit and
 * fails in a chosen way above it, with every request recorded.
 */
import { countTokens } from '../../src/core/ceiling/count'
import type { ProbeAnswer, ProbeRequest, ProbeTransport } from '../../src/tools/probe'

/** The needles and tag of a probe prompt, read back from its text. */
export function markersOf(prompt: string): { start: string; end: string; tag: string } {
  const lines = prompt.split('\n')
  return {
    start: lines[0] ?? '',
    end: lines[lines.length - 1] ?? '',
    tag: (lines[1] ?? '').split(' ')[0] ?? '',
  }
}

/** A well-formed answer; `content` defaults to naming both needles of `prompt`. */
export function answer(prompt: string, extra: Partial<ProbeAnswer> = {}): ProbeAnswer {
  const m = markersOf(prompt)
  return {
    reasoning: 'Reading the first and the last line.',
    content: `${m.start} ${m.end}`,
    ttftMs: 1_000_000,
    totalMs: 1_000_001,
    finishReason: 'stop',
    streamed: true,
    ...extra,
  }
}

/** A transport whose every request goes to `respond` (with its o200k length), recorded in `calls`. */
export function fakeTransport(
  respond: (request: ProbeRequest, tokens: number, n: number) => ProbeAnswer | Promise<ProbeAnswer>,
): ProbeTransport & { calls: { tokens: number; prompt: string }[] } {
  const calls: { tokens: number; prompt: string }[] = []
  return {
    target: 'fake',
    model: 'fake-model',
    calls,
    async send(request) {
      const tokens = await countTokens([request.prompt])
      calls.push({ tokens, prompt: request.prompt })
      return await respond(request, tokens, calls.length)
    },
  }
}

/** Correct up to `limit` tokens; above it, `over` decides (throw for an error). */
export function limitTransport(
  limit: number,
  over: (request: ProbeRequest, tokens: number) => ProbeAnswer,
) {
  return fakeTransport((request, tokens) =>
    tokens <= limit ? answer(request.prompt, { promptTokens: tokens + 10 }) : over(request, tokens),
  )
}
