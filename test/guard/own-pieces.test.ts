/**
 * @module No piece of this request's canaries or of its tenant's prefix marker reaches the client (issue
 * 45, item 6): a model quoting its prompt anywhere — the marker's body without its prefix, case
 * changed, split across events and UTF-8 chunks, in reasoning, content or tool-call arguments — has
 * every 8-character piece of them cut, in whole answers and streams; a piece of another tenant's marker
 * is a leak like a foreign canary.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { GuardError, type GuardOptions, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, prefixMarker } from '../../src/core/canary'
import { chat, directiveCanary, rejection } from '../support/prompts'
import { captureWarnings, recordVerdicts } from '../support/verdicts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'own-pieces-test-canary-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }

captureWarnings(/guardAi was called with more than \d+ different option sets/)

/** The prompt text as the upstream received it (every message's text, in order). */
function promptOf(inputs: Record<string, unknown>): string {
  const messages = inputs.messages as { content?: unknown }[]
  return messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n')
}

/** The tenant's prefix marker, read where the guard put it: the start of the first message. */
function markerOf(inputs: Record<string, unknown>): string {
  const marker = /^cnry_[0-9a-z]{24}/.exec(promptOf(inputs))?.[0]
  if (!marker) throw new Error('no prefix marker')
  return marker
}

/** What the model writes, per channel, from the prompt it was sent (content follows the echo line). */
interface Answer {
  reasoning: string
  content: string
  tool?: string
}

/** Where a stream is cut: events per channel (positions in its text), then byte chunks of the SSE. */
interface Splits {
  events: number[]
  bytes: number[]
}

function sse(json: Record<string, unknown>): string {
  return `data: ${JSON.stringify(json)}\n\n`
}

function chunk(delta: Record<string, unknown>): string {
  return sse({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: MODEL,
    choices: [{ index: 0, delta, finish_reason: null }],
  })
}

/** `text` cut at `at` (positions taken modulo its length, never inside a surrogate pair). */
function pieces(text: string, at: number[]): string[] {
  const cuts = [...new Set(at.map((a) => (text.length === 0 ? 0 : a % (text.length + 1))))]
    .filter((c) => c > 0 && c < text.length && !/[\udc00-\udfff]/.test(text[c]!))
    .sort((a, b) => a - b)
  const out: string[] = []
  let from = 0
  for (const c of cuts) {
    out.push(text.slice(from, c))
    from = c
  }
  out.push(text.slice(from))
  return out.filter((p) => p !== '')
}

/** An upstream that answers `answer(prompt)`, whole or as SSE cut by `splits`. */
function quoting(write: (prompt: string) => Answer, splits: Splits = { events: [], bytes: [] }) {
  const upstream: AiRunner = {
    run: async (_model, inputs) => {
      const canary = directiveCanary(inputs)
      const answer = write(promptOf(inputs))
      const content = `${canary}\n${answer.content}`
      if (inputs.stream !== true) {
        const message: Record<string, unknown> = {
          role: 'assistant',
          reasoning_content: answer.reasoning,
          content,
        }
        if (answer.tool !== undefined) {
          message.tool_calls = [
            { id: 't1', type: 'function', function: { name: 'f', arguments: answer.tool } },
          ]
        }
        return {
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: MODEL,
          choices: [{ index: 0, message, finish_reason: 'stop' }],
          usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 },
        }
      }
      const events: string[] = []
      for (const p of pieces(answer.reasoning, splits.events)) {
        events.push(chunk({ reasoning_content: p }))
      }
      for (const p of pieces(content, splits.events)) events.push(chunk({ content: p }))
      if (answer.tool !== undefined) {
        for (const p of pieces(answer.tool, splits.events)) {
          events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }))
        }
      }
      let body = events.join('')
      body += sse({
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: MODEL,
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
      })
      body += 'data: [DONE]\n\n'
      const bytes = new TextEncoder().encode(body)
      // No byte splits: one chunk an event, each read apart (as a model's tokens come).
      let end = 0
      const byEvent = events.map((event) => (end += new TextEncoder().encode(event).length))
      const cuts = [
        ...new Set(
          (splits.bytes.length > 0 ? splits.bytes : byEvent).map((b) => b % (bytes.length + 1)),
        ),
      ].sort((a, b) => a - b)
      return new ReadableStream<Uint8Array>({
        start(controller) {
          let from = 0
          for (const c of cuts) {
            if (c > from) controller.enqueue(bytes.slice(from, c))
            from = Math.max(from, c)
          }
          if (from < bytes.length) controller.enqueue(bytes.slice(from))
          controller.close()
        },
      })
    },
  }
  return upstream
}

/** The texts the client got, per channel (SSE or a whole chat object). */
function released(output: string | Record<string, unknown>): Answer {
  const out: Answer = { reasoning: '', content: '' }
  const take = (body: Record<string, unknown> | undefined) => {
    if (!body) return
    if (typeof body.reasoning_content === 'string') out.reasoning += body.reasoning_content
    if (typeof body.content === 'string') out.content += body.content
    const calls = body.tool_calls as { function?: { arguments?: unknown } }[] | undefined
    const args = calls?.[0]?.function?.arguments
    if (typeof args === 'string') out.tool = (out.tool ?? '') + args
  }
  if (typeof output !== 'string') {
    take((output.choices as { message?: Record<string, unknown> }[])[0]?.message)
    return out
  }
  for (const block of output.split('\n\n')) {
    const data = block.startsWith('data: ') ? block.slice(6) : ''
    if (data === '' || data === '[DONE]') continue
    take((JSON.parse(data) as { choices: { delta?: Record<string, unknown> }[] }).choices[0]?.delta)
  }
  return out
}

/** Runs one request as `tenant`; the texts released, and the secrets its prompt carried. */
async function ask(
  upstream: AiRunner,
  stream: boolean,
  tenant = 'alice',
  question = 'The quick brown fox jumps over the lazy dog.',
  options: Partial<GuardOptions> = {},
) {
  let marker = ''
  let canary = ''
  const spy: AiRunner = {
    run: (model, inputs, options) => {
      marker = markerOf(inputs)
      canary = directiveCanary(inputs)
      return upstream.run(model, inputs, options)
    },
  }
  const verdicts = recordVerdicts()
  const ai = guardAi(spy, {
    secret: SECRET,
    tenant,
    models,
    hooks: { onVerdict: verdicts.onVerdict },
    ...options,
  })
  const out = await ai.run(MODEL, chat(question, stream ? { stream: true } : {}))
  const text =
    out instanceof ReadableStream
      ? released(await new Response(out).text())
      : released(out as Record<string, unknown>)
  return { text, marker, canary, verdicts }
}

/** Every piece of 8 characters of `secret` found in `text`, any case. */
function piecesIn(text: string, secret: string): string[] {
  const lower = text.toLowerCase()
  const found: string[] = []
  for (let i = 0; i + 8 <= secret.length; i++) {
    const piece = secret.slice(i, i + 8)
    if (lower.includes(piece)) found.push(piece)
  }
  return found
}

function expectNoPieces(text: Answer, secrets: string[]): void {
  const all = `${text.reasoning}\u0000${text.content}\u0000${text.tool ?? ''}`
  for (const secret of secrets) expect(piecesIn(all, secret)).toEqual([])
}

describe('pieces of our own canary and marker', () => {
  it('should cut the marker quoted from its second and tenth character', async () => {
    for (const stream of [false, true]) {
      const upstream = quoting(
        (prompt) => ({
          reasoning: `It opens with “${prompt.slice(1, 60)}”.`,
          content: `Quoted: ${prompt.slice(9, 60)} and “${prompt.slice(20, 29).toUpperCase()}”.`,
        }),
        { events: [3, 11, 17, 26, 33], bytes: [] },
      )
      const { text, marker, canary } = await ask(upstream, stream)
      expectNoPieces(text, [marker, canary])
      // The honest words around the pieces stay.
      expect(text.reasoning).toContain('The quick brown')
      expect(text.content).toContain('The quick brown fox jumps')
    }
  })

  it('should cut a piece whole wherever a stream splits it (a lone first character may leave)', async () => {
    const quote = (prompt: string) => `Quoted: ${prompt.slice(3, 29).toUpperCase()} end.`
    const whole = await ask(
      quoting((prompt) => ({ reasoning: 'r', content: quote(prompt) })),
      false,
    )
    expect(whole.text.content).toBe('Quoted:  end.')
    const length = 'Quoted: '.length + 26 + ' end.'.length
    for (let at = 1; at < length; at++) {
      const upstream = quoting((prompt) => ({ reasoning: 'r', content: quote(prompt) }), {
        // The canary's own line is the content's first event; the quote is split at `at`.
        events: [30, 30 + at],
        bytes: [],
      })
      // Without the foreign-content check, whose own hold of the last words would hide this one's.
      const { text, marker } = await ask(upstream, true, 'alice', undefined, {
        content: false,
      })
      // Held from its second character: only a split right after the first may let that one leave.
      const may = ['Quoted:  end.']
      if (at === 'Quoted: '.length + 1) may.push(`Quoted: ${marker[3]!.toUpperCase()} end.`)
      expect(may).toContain(text.content)
    }
  })

  it('should cut a piece of the directive canary quoted in a tool call, split across events', async () => {
    const upstream = quoting(
      (prompt) => {
        const at = prompt.lastIndexOf('cnry_')
        return {
          reasoning: 'Looking.',
          content: 'Done.',
          tool: JSON.stringify({ code: prompt.slice(at + 7, at + 20), note: 'ok' }),
        }
      },
      { events: [5, 9, 13, 14, 15], bytes: [] },
    )
    for (const stream of [false, true]) {
      const { text, marker, canary } = await ask(upstream, stream)
      expectNoPieces(text, [marker, canary])
      expect(text.tool).toContain('"note":"ok"')
    }
  })

  it('should never release a piece of 8 characters, for random prompts, quotes and splits', async () => {
    const word = fc.constantFrom(
      'the',
      'fox',
      'x7',
      'ab12',
      'strength',
      'zq9',
      'Ünï',
      '日本語',
      '😀',
      'cnry',
      '_',
      '0',
    )
    const quote = fc.record({
      start: fc.nat(),
      length: fc.integer({ min: 1, max: 90 }),
      channel: fc.constantFrom('reasoning', 'content', 'tool'),
      upper: fc.boolean(),
      glue: fc.constantFrom('', ' ', 'k', '9', '“'),
    })
    await fc.assert(
      fc.asyncProperty(
        fc.array(word, { minLength: 1, maxLength: 30 }),
        fc.array(quote, { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        fc.array(fc.nat(400), { maxLength: 40 }),
        fc.array(fc.nat(3000), { maxLength: 12 }),
        async (words, quotes, stream, events, bytes) => {
          const upstream = quoting(
            (prompt) => {
              const answer: Answer = { reasoning: 'r ', content: 'c ', tool: '' }
              for (const q of quotes) {
                const start = q.start % prompt.length
                let text = prompt.slice(start, start + q.length)
                if (q.upper) text = text.toUpperCase()
                answer[q.channel] = `${answer[q.channel]}${q.glue}${text}`
              }
              return answer
            },
            { events, bytes },
          )
          const { text, marker, canary, verdicts } = await ask(
            upstream,
            stream,
            'alice',
            words.join(' '),
          )
          expect(verdicts.events.map((v) => v.action)).toEqual(['release'])
          expectNoPieces(text, [marker, canary])
        },
      ),
      { numRuns: 150 },
    )
  }, 120_000)

  it('should keep a canary-alphabet run that is no piece of ours as it is', async () => {
    const upstream = quoting(() => ({
      reasoning: 'The id is 7f3k9m2q8v4x6z1b0c5n, a hash.',
      content: 'Hash: 7f3k9m2q8v4x6z1b0c5n and STRENGTHENED.',
    }))
    for (const stream of [false, true]) {
      const { text } = await ask(upstream, stream)
      expect(text.reasoning).toBe('The id is 7f3k9m2q8v4x6z1b0c5n, a hash.')
      expect(text.content).toBe('Hash: 7f3k9m2q8v4x6z1b0c5n and STRENGTHENED.')
    }
  })
})

describe("pieces of another tenant's marker", () => {
  it('should withhold an answer quoting 15 characters of another tenant’s marker body', async () => {
    const key = await importCanaryKey(SECRET)
    const victim = await prefixMarker(key, 'victim')
    // The victim asks first: its marker is one this isolate's guard has minted.
    await ask(
      quoting(() => ({ reasoning: 'ok', content: 'ok' })),
      false,
      'victim',
    )
    for (const stream of [false, true]) {
      const upstream = quoting(() => ({
        reasoning: 'Reading the context.',
        // A stale page of the victim's prompt, quoted from inside its marker.
        content: `It opens with ${victim.slice(8, 23).toUpperCase()} Victim ledger 4471.`,
      }))
      const verdicts = recordVerdicts()
      const ai = guardAi(upstream, {
        secret: SECRET,
        tenant: 'mallory',
        models,
        hooks: { onVerdict: verdicts.onVerdict },
      })
      let delivered = ''
      const error = await rejection(
        (async () => {
          const out = await ai.run(MODEL, chat('Summarise.', stream ? { stream: true } : {}))
          if (out instanceof ReadableStream) {
            const reader = out.getReader()
            const decoder = new TextDecoder()
            for (let next = await reader.read(); !next.done; next = await reader.read()) {
              delivered += decoder.decode(next.value, { stream: true })
            }
          }
        })(),
      )
      expect(error).toBeInstanceOf(GuardError)
      expect(error.code).toBe('response_quarantined')
      expect(delivered).not.toContain('4471')
      const [quarantine] = verdicts.of('quarantine')
      expect(quarantine?.reasons).toContain('foreign_canary')
      // Attributed like a foreign canary: the marker's tag resolves to its tenant.
      expect(quarantine?.sourceTenants).toEqual(['victim'])
    }
  })
})
