/**
 * @module Replays held-apart traffic (./traffic.ts) in time order through one guard with the default
 * policy, whole and streamed, on a virtual clock, against an engine that knows the traffic's known
 * texts by heart (test/support/knowing-engine.ts): it recites them when asked, and continues them
 * from a cue when the guard asks for a second opinion. Counts what a client would see: honest answers
 * withheld (by cause and family), honest streams broken off after text left, and controls withheld
 * with nothing of their quote delivered.
 */
import { VirtualClock } from '../../sim/clock'
import { createGuard, GuardError, type GuardOptions, type VerdictLog } from '../../src'
import { isCue, Knowledge, knowingEngine, lastUserText } from '../support/knowing-engine'
import { sseText } from '../support/prompts'
import type { HeldApartTraffic, HeldApartTurn } from './traffic'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'held-apart-replay-secret-0123456789abcdef'

/** What one replay found. */
export interface HeldApartResult {
  honest: number
  streamed: number
  /** Honest answers that recite a known text one other tenant pasted within the hour. */
  recitals: number
  withheld: { kind: string; family: string; reasons: string; stream: boolean }[]
  /** Honest streams that delivered text and then ended in an error. */
  brokenAfterText: number
  controls: { total: number; withheld: number; streamed: number; quoteEscaped: number }
  /** Second opinions asked (each is two requests: the cue and its control). */
  opinions: number
}

/** What the client received: the visible text and the error, if any. */
async function send(
  ai: { run: (model: string, inputs: Record<string, unknown>) => Promise<unknown> },
  turn: HeldApartTurn,
): Promise<{ text: string; error: unknown }> {
  try {
    const out = await ai.run(MODEL, { messages: turn.messages, stream: turn.stream })
    if (!turn.stream) {
      const m = (out as { choices: { message: Record<string, string | null> }[] }).choices[0]!
        .message
      return { text: `${m.reasoning_content ?? ''}${m.content ?? ''}`, error: undefined }
    }
    const reader = (out as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let body = ''
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        body += decoder.decode(value, { stream: true })
      }
    } catch (error) {
      const { reasoning, content } = sseText(body)
      return { text: reasoning + content, error }
    }
    const { reasoning, content } = sseText(body)
    return { text: reasoning + content, error: undefined }
  } catch (error) {
    return { text: '', error }
  }
}

/**
 * Replays the traffic; `slipEvery` makes the engine's recall imperfect (one word in that many wrong).
 *
 * @example
 * const result = await replayHeldApart(heldApartTraffic(families, { count: 2_000, seed: 1 }))
 */
export async function replayHeldApart(
  traffic: HeldApartTraffic,
  options: {
    slipEvery?: number
    guard?: Partial<GuardOptions>
    /** Told of every honest answer withheld and every control released or delivering any of its quote. */
    trace?: (turn: HeldApartTurn, cues: string[]) => void
  } = {},
): Promise<HeldApartResult> {
  const clock = new VirtualClock()
  const verdicts: VerdictLog[] = []
  const guard = createGuard({
    secret: SECRET,
    hooks: {
      now: () => clock.now(),
      onVerdict: (event) => {
        verdicts.push(event)
      },
    },
    ...options.guard,
  })
  const knowledge = new Knowledge(traffic.known)
  const out: HeldApartResult = {
    honest: 0,
    streamed: 0,
    recitals: 0,
    withheld: [],
    brokenAfterText: 0,
    controls: { total: 0, withheld: 0, streamed: 0, quoteEscaped: 0 },
    opinions: 0,
  }
  // Requests arrive on the traffic's schedule: a long answer (or its second opinion) does not delay
  // the next tenant's request, so the clock never drifts past the hour the controls are built within.
  let due = clock.now()
  for (const turn of traffic.turns) {
    due += turn.gapMs
    clock.advance(Math.max(0, due - clock.now()))
    const engine = knowingEngine({
      known: knowledge,
      clock,
      slipEvery: options.slipEvery ?? 0,
      script: (inputs) =>
        isCue(lastUserText(inputs))
          ? undefined
          : { reasoning: turn.reasoning, content: turn.content },
    })
    const before = verdicts.length
    const got = await send(guard.wrap(engine, { tenant: turn.tenant }), turn)
    const cues = engine.requests.map(lastUserText).filter(isCue)
    out.opinions += cues.length / 2
    const failed = turn.control ? got.error === undefined : got.error !== undefined
    if (failed) options.trace?.(turn, cues)
    if (turn.control) {
      out.controls.total++
      if (turn.stream) out.controls.streamed++
      if (got.error instanceof GuardError && got.error.code === 'response_quarantined') {
        out.controls.withheld++
      }
      // Not a byte of the quote: not even its first character, where it stands in the answer.
      const quote = turn.control.quote
      const at = turn.content.indexOf(quote)
      if (got.text.includes(turn.content.slice(Math.max(0, at - 12), at + 1))) {
        out.controls.quoteEscaped++
        if (!failed) options.trace?.(turn, cues)
      }
      continue
    }
    out.honest++
    if (turn.stream) out.streamed++
    if (turn.pasted) out.recitals++
    if (got.error !== undefined) {
      const verdict = verdicts.slice(before).at(-1)
      out.withheld.push({
        kind: turn.kind,
        family: turn.family,
        reasons: verdict?.reasons.join(',') ?? String(got.error),
        stream: turn.stream,
      })
      if (turn.stream && got.text.length > 0) out.brokenAfterText++
    }
  }
  return out
}
