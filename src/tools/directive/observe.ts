/**
 * @module What one answer shows of the directive: whether the content opened with the echo (the
 * guard's own matchers decide, as they do in production), whether and where the reasoning restated
 * the code, and how the echo line was decorated.
 *
 * Where a token sits: a streamed answer's events arrive in order and `usage.completion_tokens` says
 * how many tokens they carried, so an offset in the text maps to a token index — exactly when an event
 * is one token (vLLM, SGLang, Workers AI), within one event's tokens when an engine groups them.
 * A whole answer has no positions: it gives rates only.
 */
import { JSON_ECHO_MEMBER, matchEchoSpan } from '../../core'
import type { AnswerEvent, ProbeAnswer } from '../probe/answer'
import type { Cell } from './directive-settings'
import type { DirectiveRequest } from './sample-request'

/** One answer's facts about the directive. */
export interface Observation {
  cell: Cell
  /** The content opened with this request's echo (the guard's matcher: text line or JSON member). */
  echoAtStart: boolean
  /** The canary (or, in JSON mode, the echo member) is in the content but not where it must be. */
  echoLate: boolean
  /** The model called a tool instead of answering in text. */
  toolCalled: boolean
  /** The echo line with the code replaced by `…` (`plain` when undecorated); null without an echo. */
  decoration: string | null
  /** The reasoning holds this request's canary. */
  restated: boolean
  /** Streamed: the token index at which the restated code begins; null otherwise. */
  restateToken: number | null
  /**
   * Streamed: tokens read when the guard has its proof — the restated code's end, or else the content
   * echo's end; null when there was no proof or no positions.
   */
  proofToken: number | null
  /** Streamed: reasoning tokens before the content began. */
  reasoningTokens: number | null
  /** Streamed: tokens of the echo at the content's start (cut before release under any policy). */
  echoTokens: number | null
  /** `usage.completion_tokens`, when reported. */
  completionTokens: number | null
  /** Streamed: decode speed from the first model event to the last, tokens/s. */
  rate: number | null
}

/**
 * The facts of one answer to `request`.
 *
 * @example
 * const seen = observe(cell, request, answer)
 * seen.echoAtStart // true when the reply opened with the code
 */
export function observe(cell: Cell, request: DirectiveRequest, answer: ProbeAnswer): Observation {
  const canary = request.canary.toLowerCase()
  const content = answer.content
  const kind = cell.format === 'json' ? 'json' : 'text'
  const span = matchEchoSpan(kind, content, request.canary, true)
  const echoAtStart = span.status === 'echoed'
  const carries =
    kind === 'json'
      ? content.includes(`"${JSON_ECHO_MEMBER}"`)
      : content.toLowerCase().includes(canary)
  const restateAt = answer.reasoning.toLowerCase().indexOf(canary)
  const positions = answer.events ? tokenPositions(answer.events, answer.completionTokens) : null
  const echoEnd = span.status === 'echoed' ? span.end : null
  let proofToken: number | null = null
  if (positions !== null) {
    if (restateAt !== -1) proofToken = positions.reasoning(restateAt + canary.length)
    else if (echoEnd !== null) proofToken = positions.content(echoEnd)
  }
  return {
    cell,
    echoAtStart,
    echoLate: !echoAtStart && carries,
    toolCalled: answer.toolCalled === true,
    decoration: echoAtStart && kind === 'text' ? decorationOf(content, canary) : null,
    restated: restateAt !== -1,
    restateToken: positions !== null && restateAt !== -1 ? positions.reasoning(restateAt) : null,
    proofToken,
    reasoningTokens: positions === null ? null : positions.content(0),
    echoTokens:
      positions === null || echoEnd === null
        ? null
        : positions.content(echoEnd) - positions.content(0),
    completionTokens: answer.completionTokens ?? null,
    rate: positions?.rate ?? null,
  }
}

/**
 * The echo's decoration: what precedes the code on its line and the marks that close it, with the code
 * as `…` (`plain` when there are none). The answer's own text after it is never kept.
 */
function decorationOf(content: string, canary: string): string {
  const at = content.toLowerCase().indexOf(canary)
  const trail = /^[*_"'`“”‘’»)\].,;!:]*/.exec(content.slice(at + canary.length))?.[0] ?? ''
  const shape = `${content.slice(0, at)}…${trail}`.trim()
  return shape === '…' ? 'plain' : shape.slice(0, 40)
}

/** Maps character offsets of each channel to token indexes, and gives the decode rate. */
interface Positions {
  reasoning(offset: number): number
  content(offset: number): number
  rate: number | null
}

/**
 * Token positions from a streamed answer's events: each event carries `completion / events` tokens
 * (1 when usage is missing), shared among its characters in order.
 */
function tokenPositions(events: readonly AnswerEvent[], completion: number | undefined): Positions {
  const perEvent = completion !== undefined && events.length > 0 ? completion / events.length : 1
  const at = (channel: 'reasoning' | 'content', offset: number): number => {
    let seen = 0
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!
      const text = event[channel]
      if (text.length === 0) continue
      if (offset <= seen + text.length) {
        const chars = event.reasoning.length + event.content.length
        const before = channel === 'content' ? event.reasoning.length : 0
        return (i + (before + offset - seen) / chars) * perEvent
      }
      seen += text.length
    }
    return events.length * perEvent
  }
  const first = events[0]
  const last = events.at(-1)
  const seconds = first && last ? (last.atMs - first.atMs) / 1000 : 0
  return {
    reasoning: (offset) => Math.round(at('reasoning', offset)),
    content: (offset) => Math.round(at('content', offset)),
    rate: seconds > 0 ? ((events.length - 1) * perEvent) / seconds : null,
  }
}
