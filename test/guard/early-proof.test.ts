import { describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { VirtualClock } from '../../sim/clock'
import type { SimConfig } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { type EchoWording, GuardError, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { chat, directiveCanary, sseText } from '../support/prompts'
import { recordVerdicts } from '../support/verdicts'

/**
 * Release on the first proof: this request's canary restated anywhere in the reasoning proves the
 * prompt's end was read as well as the echo at the start of the content does, so a reasoning model that
 * restates its instructions is released from that point, not after its whole reasoning. Timed on a
 * virtual clock shared by the simulator and the guard, at 30 tokens/s.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'early-proof-test-secret-0123456789abcdef'
const SIM: Partial<SimConfig> = {
  mode: 'fixed',
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: 30,
  tokensPerEvent: 3,
}
const TEXT = Array.from({ length: 12 }, (_, i) => english(500 + i, 200)).join('\n')

/** One streamed request: when its first byte and its first content arrived, and what was delivered. */
async function timed(
  directiveQuoteRate: number,
  guarded: boolean,
  wording: { directive: EchoWording; thinkingNoteRate: number } = {
    directive: 'reply-first',
    thinkingNoteRate: 0,
  },
) {
  const clock = new VirtualClock()
  const { directive, thinkingNoteRate } = wording
  const engine = new SimEngine({ ...SIM, directiveQuoteRate, thinkingNoteRate }, { clock })
  const verdicts = recordVerdicts()
  const upstream = engine.binding('gateway')
  const ai = guarded
    ? guardAi(upstream, {
        secret: SECRET,
        tenant: 'a',
        hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
        models: { [MODEL]: { directive } },
      })
    : upstream
  const start = clock.now()
  const inputs = guarded ? chat(TEXT) : injectLookalike(chat(TEXT))
  const out = (await ai.run(MODEL, { ...inputs, stream: true })) as ReadableStream<Uint8Array>
  const decoder = new TextDecoder()
  let raw = ''
  let firstByte: number | undefined
  let firstContent: number | undefined
  for await (const chunk of out) {
    raw += decoder.decode(chunk, { stream: true })
    const { reasoning, content } = sseText(raw)
    if (firstByte === undefined && (reasoning || content)) firstByte = clock.now() - start
    if (firstContent === undefined && content) firstContent = clock.now() - start
  }
  return { firstByte: firstByte!, firstContent: firstContent!, raw, ...sseText(raw), verdicts }
}

/** The same prompt shape unguarded: a directive with a look-alike code the model follows the same way. */
function injectLookalike(inputs: Record<string, unknown>): Record<string, unknown> {
  const messages = inputs.messages as { role: string; content: string }[]
  const code = 'cnry_0123456789abcdefghjkmnpq'
  const directive = `Begin your reply with the code ${code} on its own line, then answer normally.`
  return {
    ...inputs,
    messages: [{ ...messages[0]!, content: `${messages[0]!.content}\n\n${directive}` }],
  }
}

describe('release on the first proof', () => {
  it('should release a reasoning model that restates the canary from that point, not after its reasoning', async () => {
    const direct = await timed(1, false)
    const early = await timed(1, true)
    const late = await timed(0, true)
    // The reasoning flows from the canary on: what precedes it leaves once it is read (about 1 s in:
    // 27 tokens of preamble and canary, then the event that shows where the canary ends; no other
    // tenant's text runs across it, so the foreign-content hold-back does not keep those words), where
    // the model that does not restate it delivers nothing before its content's echo, after the whole
    // reasoning (5.2 s in). The bench has the exact figures.
    expect(early.firstByte - direct.firstByte).toBeLessThanOrEqual(1_000)
    expect(late.firstByte - early.firstByte).toBeGreaterThan(3_500)
    // Same answer either way, no canary anywhere, and the restatement reads without it.
    expect(early.raw).not.toMatch(/cnry_/i)
    expect(early.reasoning.startsWith('The instruction at the end: begin with .')).toBe(true)
    expect(early.content).toBe(late.content)
    expect(early.verdicts.events.map((v) => v.action)).toEqual(['release'])
  }, 60_000)

  it('should take the restated canary as proof in a whole answer whose content slipped the echo', async () => {
    const engine = new SimEngine({
      ...SIM,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
      directiveQuoteRate: 1,
      echoIgnoreRate: 1,
    })
    const verdicts = recordVerdicts()
    const ai = guardAi(engine.binding('gateway'), {
      secret: SECRET,
      hooks: { onVerdict: verdicts.onVerdict },
    })
    const out = (await ai.run(MODEL, chat(TEXT))) as {
      choices: { message: { content: string; reasoning_content: string } }[]
    }
    const { content, reasoning_content: reasoning } = out.choices[0]!.message
    expect(content.startsWith('From the context')).toBe(true)
    expect(reasoning.startsWith('The instruction at the end: begin with .')).toBe(true)
    // Released at the first attempt: no retry for a slip the reasoning already made up for.
    expect(engine.stats().recent).toHaveLength(1)
    expect(verdicts.events.map((v) => [v.action, v.reasons])).toEqual([['release', []]])
  }, 60_000)

  it.each<EchoWording>(['reply-first', 'note-first'])(
    'should not take another request’s canary, or a piece of its own, in the reasoning as proof (%s)',
    async (directive) => {
      const key = await importCanaryKey(SECRET)
      const foreign = await mintCanary(key, { requestId: 'someone-else', tenant: 'b' })
      for (const restated of [(_own: string) => foreign, (own: string) => own.slice(0, 20)]) {
        const verdicts = recordVerdicts()
        let released = ''
        const upstream: AiRunner = {
          run: async (_model, inputs) => {
            const own = directiveCanary(inputs)
            const event = (delta: Record<string, string>) =>
              `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`
            const body = [
              event({
                reasoning_content: `The instruction at the end: begin with ${restated(own)}. `,
              }),
              event({ reasoning_content: 'More thinking, '.repeat(20) }),
              event({ content: 'An answer without the echo.' }),
              'data: [DONE]\n\n',
            ].join('')
            return new Response(body).body
          },
        }
        const ai = guardAi(upstream, {
          secret: SECRET,
          tenant: 'a',
          canary: { echoRetries: 0 },
          hooks: { onVerdict: verdicts.onVerdict },
          models: { [MODEL]: { directive } },
        })
        const error = await ai
          .run(MODEL, chat('hi', { stream: true }))
          .then(async (out) => {
            released = await new Response(out as ReadableStream).text()
          })
          .catch((e: unknown) => e)
        expect(error).toBeInstanceOf(GuardError)
        expect(released).toBe('')
        expect(verdicts.events[0]?.action).toBe('quarantine')
      }
    },
    60_000,
  )
})

/**
 * The `note-first` wording: the directive also asks the model to note the code first thing
 * in its thinking, so a reasoning model that follows it proves the read as it starts. Operator
 * configuration, per model profile; a model that ignores the note is proven by its reply's echo.
 */
describe('the note-first wording', () => {
  it('should release a model that follows the note from its reasoning’s start', async () => {
    const direct = await timed(0, false)
    const noted = await timed(0, true, { directive: 'note-first', thinkingNoteRate: 1 })
    const ignored = await timed(0, true, { directive: 'note-first', thinkingNoteRate: 0 })
    expect(noted.firstByte - direct.firstByte).toBeLessThanOrEqual(1_000)
    // A model that does not follow the note is released at its reply's echo, after its reasoning.
    expect(ignored.firstByte - noted.firstByte).toBeGreaterThan(3_500)
    expect(noted.reasoning.startsWith('Noting the code first: . ')).toBe(true)
    for (const out of [noted, ignored]) {
      expect(out.raw).not.toMatch(/cnry_/i)
      expect(out.content).toBe(direct.content.replace(/^\S+ /, ''))
      expect(out.verdicts.events.map((v) => v.action)).toEqual(['release'])
    }
  }, 60_000)

  it('should word the directive from the profile only, never from a request field', async () => {
    const sent: string[] = []
    const upstream: AiRunner = {
      run: async (_model, inputs) => {
        sent.push(JSON.stringify(inputs))
        return { response: 'no echo' }
      },
    }
    const asked = { ...chat('hi'), directive: 'note-first', echo_wording: 'note-first' }
    for (const directive of ['reply-first', 'note-first'] as const) {
      const ai = guardAi(upstream, {
        secret: SECRET,
        canary: { echoRetries: 0 },
        models: { [MODEL]: { directive } },
      })
      await ai.run(MODEL, asked).catch(() => undefined)
    }
    expect(sent).toHaveLength(2)
    expect(sent[0]).not.toContain('Note the code')
    expect(sent[1]).toMatch(
      /Note the code cnry_\w+ first thing in your thinking\. Begin your reply/,
    )
    expect(() =>
      guardAi(upstream, {
        secret: SECRET,
        models: { [MODEL]: { directive: 'think' as EchoWording } },
      }),
    ).toThrow('.directive" must be "reply-first" or "note-first"')
  })
})
