/**
 * @module The live guard on honest traffic: multi-tenant traffic built from real public text
 * (test/support/honest-traffic.ts) replayed in time order through one guard with the default policy,
 * whole and streamed, on a virtual clock. False quarantines are counted by cause, streams that broke
 * off after delivering bytes apart; control answers quoting 30–80 units of another tenant's private
 * text must all be withheld, streamed ones without a byte of the quote delivered.
 */
import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { createGuard, GuardError, type VerdictLog } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { units } from '../../src/plugins/foreign-content'
import { HELD_OUT_LANGUAGES } from '../support/honest-corpus'
import {
  answerText,
  type HonestTraffic,
  honestTraffic,
  type Segment,
  type Turn,
} from '../support/honest-traffic'
import { pieces } from '../support/knowing-engine'
import { directiveCanary, sseText } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'honest-traffic-test-secret-0123456789abcdef'
const utf8 = new TextEncoder()

function chunk(delta: Record<string, unknown>): string {
  const event = { id: 'c', object: 'chat.completion.chunk', created: 1, model: MODEL }
  return `data: ${JSON.stringify({ ...event, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`
}

/**
 * The scripted model for one turn: it echoes the canary where the format carries one (text, JSON
 * mode; a request with tools carries none), takes a plausible prefill time on the clock, and writes
 * the planned answer whole or as SSE (reasoning first, as GLM-5.3 does).
 */
function model(turn: Turn, clock: VirtualClock, seed: number): AiRunner {
  return {
    run: async (_model, inputs) => {
      const tools = inputs.tools !== undefined
      const own = tools ? '' : directiveCanary(inputs)
      clock.advance(150 + Math.ceil(JSON.stringify(inputs).length / 4 / 20))
      const text = answerText(turn)
      const content = turn.tool
        ? ''
        : turn.json
          ? `{"guard_echo":"${own}",${text}`
          : tools
            ? text
            : `${own}\n${text}`
      const toolCalls = turn.tool
        ? [
            {
              id: 't1',
              type: 'function',
              function: { name: turn.tool.name, arguments: turn.tool.arguments },
            },
          ]
        : undefined
      if (!turn.stream) {
        const message: Record<string, unknown> = {
          role: 'assistant',
          reasoning_content: turn.reasoning,
          content: turn.tool ? null : content,
        }
        if (toolCalls) message.tool_calls = toolCalls
        return {
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: MODEL,
          choices: [{ index: 0, message, finish_reason: turn.tool ? 'tool_calls' : 'stop' }],
        }
      }
      const events: string[] = []
      for (const p of pieces(turn.reasoning, seed)) events.push(chunk({ reasoning_content: p }))
      for (const p of pieces(content, seed + 1)) events.push(chunk({ content: p }))
      if (turn.tool) {
        const args = turn.tool.arguments
        events.push(
          chunk({
            tool_calls: [
              {
                index: 0,
                id: 't1',
                type: 'function',
                function: { name: turn.tool.name, arguments: '' },
              },
            ],
          }),
        )
        for (const p of pieces(args, seed + 2)) {
          events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }))
        }
      }
      events.push('data: [DONE]\n\n')
      let i = 0
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          clock.advance(20)
          if (i < events.length) controller.enqueue(utf8.encode(events[i++]!))
          else controller.close()
        },
      })
    },
  }
}

/** What the client got: the text delivered (reasoning + content + tool arguments) and the error. */
interface Outcome {
  delivered: string
  error: unknown
}

async function send(ai: AiRunner, turn: Turn): Promise<Outcome> {
  try {
    const out = await ai.run(MODEL, { ...turn.inputs, stream: turn.stream, max_tokens: 1_024 })
    if (!turn.stream) return { delivered: JSON.stringify(out), error: undefined }
    const reader = (out as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let body = ''
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        body += decoder.decode(value, { stream: true })
      }
      return { delivered: body, error: undefined }
    } catch (error) {
      return { delivered: body, error }
    }
  } catch (error) {
    return { delivered: '', error }
  }
}

/** The visible text of a streamed body (reasoning, content, tool arguments). */
function streamedText(body: string): string {
  const { reasoning, content, events } = sseText(body)
  let args = ''
  for (const event of events) {
    const choices = (
      event as { choices?: { delta?: { tool_calls?: { function?: { arguments?: string } }[] } }[] }
    ).choices
    for (const call of choices?.[0]?.delta?.tool_calls ?? []) args += call.function?.arguments ?? ''
  }
  return `${reasoning}${content}${args}`
}

/** Which segment of an answer shares the longest run of units with the source tenant's prompts. */
function cause(turn: Turn, sentBy: Map<string, string[]>, source: string | undefined): string {
  const sent = (source && sentBy.get(source)) || []
  const sentUnits = new Set<string>()
  for (const text of sent) {
    const list = units(text).map((u) => u.text.toLowerCase())
    for (let i = 0; i + 5 <= list.length; i++) sentUnits.add(list.slice(i, i + 5).join(' '))
  }
  let best: Segment | undefined
  let bestRun = 0
  for (const segment of turn.content) {
    const list = units(segment.text).map((u) => u.text.toLowerCase())
    let run = 0
    for (let i = 0; i + 5 <= list.length; i++) {
      run = sentUnits.has(list.slice(i, i + 5).join(' ')) ? run + 1 : 0
      if (run > bestRun) {
        bestRun = run
        best = segment
      }
    }
  }
  if (turn.tool) return 'tool-call'
  return best ? `${best.kind} (${bestRun + 4} units)` : 'none shared'
}

/** What one replay found. */
interface Replay {
  honest: number
  streamed: number
  falseQuarantines: {
    turn: number
    tenant: string
    label: string
    reasons: string
    cause: string
  }[]
  /** Honest streams that delivered bytes and then broke off (quarantined after release began). */
  afterBytes: number
  controls: { total: number; withheld: number; streamed: number; quoteEscaped: number }
  /** Honest answers by kind of request, and the false quarantines among them. */
  mix: Record<string, { answers: number; withheld: number }>
}

/** Replays the traffic in time order through one guard (the default policy) on a virtual clock. */
async function replay(traffic: HonestTraffic): Promise<Replay> {
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
  })
  const sentBy = new Map<string, string[]>()
  const out: Replay = {
    honest: 0,
    streamed: 0,
    falseQuarantines: [],
    afterBytes: 0,
    controls: { total: 0, withheld: 0, streamed: 0, quoteEscaped: 0 },
    mix: {},
  }
  for (const [i, turn] of traffic.turns.entries()) {
    clock.advance(turn.gapMs)
    const ai = guard.wrap(model(turn, clock, i + 1), { tenant: turn.tenant })
    const before = verdicts.length
    const got = await send(ai, turn)
    const verdict = verdicts.slice(before).at(-1)
    const delivered = turn.stream ? streamedText(got.delivered) : got.delivered
    if (turn.control) {
      out.controls.total++
      if (turn.stream) out.controls.streamed++
      if (got.error instanceof GuardError && got.error.code === 'response_quarantined') {
        out.controls.withheld++
      }
      // Not a byte of the quote: not even its first unit, where it stands in the answer.
      const quote = turn.control.quote
      const answer = answerText(turn)
      const at = answer.indexOf(quote)
      const first = quote.slice(0, units(quote)[0]!.end)
      if (delivered.includes(`${answer.slice(Math.max(0, at - 24), at)}${first}`)) {
        out.controls.quoteEscaped++
      }
    } else {
      out.honest++
      if (turn.stream) out.streamed++
      out.mix[turn.label] ??= { answers: 0, withheld: 0 }
      out.mix[turn.label]!.answers++
      if (got.error !== undefined) {
        out.mix[turn.label]!.withheld++
        out.falseQuarantines.push({
          turn: i,
          tenant: turn.tenant,
          label: turn.label,
          reasons: verdict?.reasons.join(',') ?? String(got.error),
          cause: cause(turn, sentBy, verdict?.sourceTenants?.[0]),
        })
        if (turn.stream && delivered.length > 0) out.afterBytes++
      }
    }
    const texts = sentBy.get(turn.tenant) ?? []
    // What the guard remembers of a request: not its assistant turns (src/core/plan/prompt-texts.ts).
    for (const m of turn.inputs.messages as { role: string; content?: unknown }[]) {
      if (m.role !== 'assistant' && typeof m.content === 'string') texts.push(m.content)
    }
    sentBy.set(turn.tenant, texts)
  }
  return out
}

/** False quarantines by reason and cause (the segment that shares most with the source). */
function byCause(found: Replay): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const q of found.falseQuarantines) {
    const key = `${q.reasons}: ${q.cause.replace(/ \(\d+ units\)/, '')}`
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

describe('honest multi-tenant traffic from real text, through one guard', () => {
  for (const seed of [45, 4]) {
    it(`should withhold ≤ 0.1% of honest answers, none after bytes left, and every control (seed ${seed})`, async () => {
      const traffic = honestTraffic({ count: 2_400, controls: 48, seed })
      const found = await replay(traffic)
      console.log(
        JSON.stringify({ seed, corpus: traffic.corpus, ...found, byCause: byCause(found) }),
      )
      expect(found.controls.total).toBeGreaterThanOrEqual(40)
      expect(found.controls.withheld).toBe(found.controls.total)
      expect(found.controls.quoteEscaped).toBe(0)
      expect(found.afterBytes).toBe(0)
      expect(found.falseQuarantines.length).toBeLessThanOrEqual(Math.floor(found.honest / 1_000))
    }, 120_000)
  }

  it('should withhold only UDHR answers, in translations the background leaves out', async () => {
    // The same traffic, its UDHR in six translations the background does not hold: a recitation that
    // exactly one other tenant pasted within the hour is indistinguishable from a leak of its prompt
    // (docs/fingerprints.md, limits). Measured, and nothing else may be withheld.
    const traffic = honestTraffic({
      count: 2_400,
      controls: 48,
      seed: 45,
      languages: HELD_OUT_LANGUAGES,
    })
    const found = await replay(traffic)
    console.log(JSON.stringify({ heldOut: true, ...found, byCause: byCause(found) }))
    expect(found.controls.withheld).toBe(found.controls.total)
    expect(found.controls.quoteEscaped).toBe(0)
    for (const q of found.falseQuarantines) expect(q.label).toBe('UDHR')
  }, 120_000)
})
