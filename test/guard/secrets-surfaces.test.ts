/**
 * @module Secrets through both surfaces, whole and streamed: a prompt with a secret
 * of every kind reaches the upstream with stand-ins only, and the client gets every value back where
 * the model quoted its stand-in — in content, reasoning, tool-call arguments and a JSON-mode object
 * (values with JSON escapes come back as valid JSON). Then the policies: `detect` and `off` send the
 * prompt unchanged, and no request field lowers the operator's policy.
 */
import { describe, expect, it } from 'vitest'
import type { GuardOptions, VerdictLog } from '../../src'
import { chat, sseText } from '../support/prompts'
import {
  channelsOf,
  cutText,
  expectNoSecretIn,
  GENERATOR_NAMES,
  jsonEcho,
  MODEL,
  models,
  ownCanary,
  readable,
  type Script,
  type ScriptedUpstream,
  SECRET,
  SUBSTITUTE_ALL,
  scripted,
  secretPrompt,
  standInsIn,
  standInsOf,
  TOOLS,
  toolDeltas,
  userTextOf,
  valuesIn,
} from '../support/secrets'
import { direct, SURFACES } from '../support/surfaces'
import { captureWarnings, recordVerdicts } from '../support/verdicts'

// Every test builds guards of its own: guardAi's notice of many option sets is expected here.
captureWarnings(/more than \d+ different option sets/)

const SEEDS = [1, 2, 3, 4]

/** `schema`: `response_format` json_schema; `guided`: `guided_json` (JSON content, no echo). */
type Mode = 'text' | 'tools' | 'json' | 'schema' | 'guided'

/** Pieces of `text` 13 characters long: every stand-in crosses several events. */
const pieces = (text: string) =>
  cutText(
    text,
    Array.from({ length: Math.ceil(text.length / 13) }, (_, i) => i * 13),
  )

/**
 * The quoting model: whatever the user wrote (stand-ins and all) comes back in every channel the
 * request's mode allows — reasoning and content, a tool call's arguments, or a JSON object.
 */
function quoting(mode: Mode, stream: boolean) {
  return scripted((inputs): Script => {
    const own = ownCanary(inputs)
    const quoted = userTextOf(inputs)
    const reasoning = `Quoting: ${quoted}`
    if (mode === 'tools') {
      const args = JSON.stringify({ text: quoted })
      if (!stream) {
        return {
          message: {
            content: null,
            reasoning_content: reasoning,
            tool_calls: [
              { id: 'call_0', type: 'function', function: { name: 'save', arguments: args } },
            ],
          },
        }
      }
      return {
        deltas: [
          ...pieces(reasoning).map((r) => ({ reasoning_content: r })),
          ...toolDeltas(pieces(args)),
        ],
      }
    }
    const content =
      mode === 'json'
        ? `{"guard_echo":"${own}","text":${JSON.stringify(quoted)}}`
        : mode === 'text'
          ? `${own}\n${quoted}`
          : JSON.stringify({ text: quoted })
    if (mode === 'json' && !jsonEcho(inputs)) throw new Error('no JSON-mode directive')
    if (!stream) return { message: { content, reasoning_content: reasoning } }
    return {
      deltas: [
        ...pieces(reasoning).map((r) => ({ reasoning_content: r })),
        ...pieces(content).map((c) => ({ content: c })),
      ],
    }
  })
}

function request(mode: Mode, text: string, stream: boolean): Record<string, unknown> {
  if (mode === 'tools') return chat(text, { stream, tools: TOOLS })
  if (mode === 'json') return chat(text, { stream, response_format: { type: 'json_object' } })
  if (mode === 'schema') {
    const schema = { type: 'object', properties: { text: { type: 'string' } } }
    return chat(text, {
      stream,
      response_format: { type: 'json_schema', json_schema: { name: 'note', schema } },
    })
  }
  if (mode === 'guided') {
    return chat(text, { stream, guided_json: { type: 'object', properties: { text: {} } } })
  }
  return chat(text, { stream })
}

describe('secrets through both surfaces, whole and streamed', () => {
  for (const [surfaceName, surface] of SURFACES) {
    for (const mode of ['text', 'tools', 'json', 'schema', 'guided'] as const) {
      for (const stream of [false, true]) {
        it(`should send only stand-ins and deliver every value back (${surfaceName}, ${mode}, ${stream ? 'stream' : 'whole'})`, async () => {
          const verdicts = recordVerdicts()
          for (const seed of SEEDS) {
            verdicts.clear()
            const prompt = secretPrompt(seed)
            const upstream = quoting(mode, stream)
            const send = surface(upstream, {
              secret: SECRET,
              models,
              secrets: SUBSTITUTE_ALL,
              hooks: { onVerdict: verdicts.onVerdict },
            })
            const got = await send('tenant-a', MODEL, request(mode, prompt.text, stream))
            expect(got.code).toBeUndefined()
            expect(got.status).toBe(200)

            // The upstream never saw a value, in any attempt, in any field.
            expect(upstream.sent.length).toBeGreaterThan(0)
            const values = prompt.values.map((v) => v.value)
            expect(valuesIn(upstream.sent, values)).toEqual([])
            // What it saw in their place: one stand-in per secret, none equal to its value.
            const standIns = standInsOf(userTextOf(upstream.sent[0]!), prompt)
            standIns.forEach((s, i) => {
              expect(s).not.toBe(values[i])
              expect(s.length).toBeGreaterThan(0)
            })

            // The client got every value back where the model quoted its stand-in.
            const channels = channelsOf(got.body)
            expect(channels.reasoning).toBe(`Quoting: ${prompt.text}`)
            if (mode === 'text') expect(channels.content).toBe(prompt.text)
            if (mode === 'json' || mode === 'schema' || mode === 'guided') {
              expect(JSON.parse(channels.content)).toEqual({ text: prompt.text })
            }
            if (mode === 'tools') {
              expect(channels.tools).toHaveLength(1)
              expect(JSON.parse(channels.tools[0]!)).toEqual({ text: prompt.text })
            }
            // No stand-in reached the client, in any channel or in the raw bytes.
            expect(standInsIn(readable(got.body), standIns)).toEqual([])

            // The verdict line: kinds and counts only.
            const [line, ...more] = verdicts.events
            expect(more).toEqual([])
            expect(line?.action).toBe('release')
            expect(line?.secrets?.substituted).toEqual(expectedCounts(prompt.values))
            if (!stream) {
              const perChannel = mode === 'text' ? 2 : 2 // reasoning + content, or + the tool call
              expect(line?.secrets?.restored).toEqual(
                scale(expectedCounts(prompt.values), perChannel),
              )
            }
            expectNoSecretIn(verdicts.events, values, standIns)
          }
        })
      }
    }
  }
})

describe('a stand-in the model rewrote with other separators', () => {
  it('should still restore a card (spaces to dashes, grouping dropped) and a compact IBAN', async () => {
    const rewrites = [(s: string) => s.replace(/ /g, '-'), (s: string) => s.replace(/[ -]/g, '')]
    for (let seed = 1; seed <= 6; seed++) {
      for (const name of ['card-number', 'iban']) {
        const prompt = secretPrompt(seed, [name])
        for (const [r, rewrite] of rewrites.entries()) {
          if (name === 'iban' && r === 0) continue // an IBAN is written in fours with spaces, or not at all
          for (const stream of [false, true]) {
            const upstream = scripted((inputs) => {
              const [standIn] = standInsOf(userTextOf(inputs), prompt)
              const content = `${ownCanary(inputs)}\nIt is ${rewrite(standIn!)} ok`
              return stream ? { deltas: [{ content }] } : { message: { content } }
            })
            const send = direct(upstream, { secret: SECRET, models, secrets: SUBSTITUTE_ALL })
            const got = await send('tenant-a', MODEL, chat(prompt.text, { stream }))
            // The value, as the client wrote it or in the model's writing.
            const value = prompt.values[0]!.value
            expect([`It is ${value} ok`, `It is ${rewrite(value)} ok`]).toContain(
              channelsOf(got.body).content,
            )
          }
        }
      }
    }
  })
})

describe('a retried request', () => {
  for (const stream of [false, true]) {
    it(`should send every attempt the same stand-ins and restore them in the retry (${stream ? 'stream' : 'whole'})`, async () => {
      const prompt = secretPrompt(7)
      // The first answer misses its echo (the guard retries); the second quotes the first attempt's
      // prompt — the same request's stand-ins.
      const upstream: ScriptedUpstream = scripted((inputs, call) => {
        const content =
          call === 0 ? 'no echo here' : `${ownCanary(inputs)}\n${userTextOf(upstream.sent[0]!)}`
        return stream ? { deltas: [{ content }] } : { message: { content } }
      })
      const verdicts = recordVerdicts()
      const send = direct(upstream, {
        secret: SECRET,
        models,
        secrets: SUBSTITUTE_ALL,
        hooks: { onVerdict: verdicts.onVerdict },
      })
      const got = await send('tenant-a', MODEL, chat(prompt.text, { stream }))
      expect(upstream.sent).toHaveLength(2)
      expect(
        valuesIn(
          upstream.sent,
          prompt.values.map((v) => v.value),
        ),
      ).toEqual([])
      const [first, second] = upstream.sent.map((sent) => standInsOf(userTextOf(sent), prompt))
      expect(second).toEqual(first)
      expect(channelsOf(got.body).content).toBe(prompt.text)
      expect(verdicts.events.map((v) => [v.action, v.reasons])).toEqual([
        ['release', ['released_after_retry']],
      ])
    })
  }
})

describe('the legacy format: a `prompt` in, `{ response }` out', () => {
  const LEGACY = '@cf/meta/llama-3.1-8b-instruct'
  const profile = {
    contextWindow: 16_384,
    kvPoolTokens: 16_384,
    maxPrefillTokensPerSecond: 1e9,
    defaultOutputReserve: 256,
    tokenizerDrift: 0.1,
  }

  /** A legacy model quoting its prompt (the tenant's marker and the echo directive cut off). */
  function legacyQuoting(stream: boolean): ScriptedUpstream {
    const upstream = scripted(() => ({ message: {} }))
    const run = async (_model: string, inputs: Record<string, unknown>) => {
      upstream.sent.push(inputs)
      const prompt = inputs.prompt as string
      const own = ownCanary({ messages: [{ role: 'user', content: prompt }] })
      const quoted = userTextOf({ messages: [{ role: 'user', content: prompt }] })
      const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 }
      if (!stream) return { response: `${own}\n${quoted}`, usage }
      const pieces = [
        `${own}\n`,
        ...cutText(
          quoted,
          Array.from({ length: 300 }, (_, i) => i * 11),
        ),
      ]
      const body = `${pieces.map((p) => `data: ${JSON.stringify({ response: p })}\n\n`).join('')}data: [DONE]\n\n`
      const bytes = new TextEncoder().encode(body)
      return new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes)
          controller.close()
        },
      })
    }
    return Object.assign(upstream, { run })
  }

  for (const [surfaceName, surface] of SURFACES) {
    for (const stream of [false, true]) {
      it(`should send stand-ins and give the values back (${surfaceName}, ${stream ? 'stream' : 'whole'})`, async () => {
        const prompt = secretPrompt(6)
        const upstream = legacyQuoting(stream)
        const send = surface(upstream, {
          secret: SECRET,
          models: { [LEGACY]: profile },
          secrets: SUBSTITUTE_ALL,
        })
        const got = await send('tenant-a', LEGACY, { prompt: prompt.text, stream })
        expect(got.code).toBeUndefined()
        expect(
          valuesIn(
            upstream.sent,
            prompt.values.map((v) => v.value),
          ),
        ).toEqual([])
        const content = stream ? sseText(got.body).content : JSON.parse(got.body).response
        expect(content).toBe(prompt.text)
      })
    }
  }
})

describe('a JSON-escaped PEM block quoted inside JSON', () => {
  // Found by the property above (fixed in ddf05bd, kept as a regression): the prompt holds a PEM
  // block written JSON-escaped (`"private_key": "-----BEGIN…\\n…"`); a model quoting that text
  // inside a JSON string writes its backslashes escaped again, and the stand-in must still be found.
  for (const mode of ['tools', 'json'] as const) {
    for (const stream of [false, true]) {
      it(`should restore it (${mode}, ${stream ? 'stream' : 'whole'})`, async () => {
        const prompt = secretPrompt(1, ['private-key-escaped'])
        const send = direct(quoting(mode, stream), {
          secret: SECRET,
          models,
          secrets: SUBSTITUTE_ALL,
        })
        const got = await send('tenant-a', MODEL, request(mode, prompt.text, stream))
        const channels = channelsOf(got.body)
        const json = mode === 'tools' ? channels.tools[0]! : channels.content
        expect(JSON.parse(json)).toEqual({ text: prompt.text })
      })
    }
  }

  it('should restore it in a text channel (where it is not escaped again)', async () => {
    const prompt = secretPrompt(1, ['private-key-escaped'])
    const send = direct(quoting('text', false), { secret: SECRET, models, secrets: SUBSTITUTE_ALL })
    const got = await send('tenant-a', MODEL, request('text', prompt.text, false))
    expect(channelsOf(got.body).content).toBe(prompt.text)
  })
})

/** The kinds of the generated values with their counts. */
function expectedCounts(values: readonly { kind: string }[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const v of values) counts[v.kind] = (counts[v.kind] ?? 0) + 1
  return counts
}

function scale(counts: Record<string, number>, by: number): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n * by]))
}

describe('the operator’s policy, and only the operator’s', () => {
  /** An upstream that answers with its echo and the user's text. */
  const echoing = () =>
    scripted((inputs) => ({ message: { content: `${ownCanary(inputs)}\n${userTextOf(inputs)}` } }))

  async function once(
    options: Partial<GuardOptions>,
    extra: Record<string, unknown> = {},
    append = '',
  ) {
    const prompt = secretPrompt(5)
    const upstream = echoing()
    const verdicts = recordVerdicts()
    const send = direct(upstream, {
      secret: SECRET,
      models,
      hooks: { onVerdict: verdicts.onVerdict },
      ...options,
    })
    const got = await send('tenant-a', MODEL, chat(prompt.text + append, extra))
    return { prompt, upstream, got, verdicts: verdicts.events as VerdictLog[] }
  }

  it('should send the prompt unchanged under detect, and log the kinds and counts only', async () => {
    const { prompt, upstream, got, verdicts } = await once({
      secrets: { high: 'detect', medium: 'detect' },
    })
    expect(userTextOf(upstream.sent[0]!)).toBe(prompt.text)
    expect(channelsOf(got.body).content).toBe(prompt.text)
    expect(verdicts).toHaveLength(1)
    expect(verdicts[0]!.secrets).toEqual({ detected: expectedCounts(prompt.values) })
    expectNoSecretIn(
      verdicts,
      prompt.values.map((v) => v.value),
      [],
    )
  })

  it('should send the prompt unchanged under off and by default (the library’s default is off)', async () => {
    for (const secrets of [{ high: 'off', medium: 'off' } as const, undefined]) {
      const { prompt, upstream, got, verdicts } = await once(secrets ? { secrets } : {})
      expect(userTextOf(upstream.sent[0]!)).toBe(prompt.text)
      expect(channelsOf(got.body).content).toBe(prompt.text)
      expect(verdicts[0]!.secrets).toBeUndefined()
    }
  })

  it('should refuse, not send, a secret too short to carry a stand-in (an operator pattern)', async () => {
    const { upstream, got } = await once(
      { secrets: { ...SUBSTITUTE_ALL, patterns: [{ name: 'employee-id', pattern: 'E[0-9]{6}' }] } },
      {},
      '\nEmployee E123456 joined.',
    )
    expect(got.code).toBe('invalid_request')
    expect(got.body).toContain('employee-id')
    expect(upstream.sent).toEqual([])
  })

  it('should follow per-kind and per-model rules', async () => {
    const { prompt, upstream } = await once({
      secrets: {
        high: 'substitute',
        medium: 'detect',
        kinds: { 'card-number': 'off' },
        models: { [MODEL]: { kinds: { 'us-ssn': 'substitute' } } },
      },
    })
    const sent = upstream.sent[0]!
    const value = (kind: string) => prompt.values.find((v) => v.kind === kind)!.value
    expect(valuesIn(sent, [value('card-number'), value('aws-secret-access-key')])).toEqual([
      value('card-number'),
      value('aws-secret-access-key'),
    ])
    expect(valuesIn(sent, [value('us-ssn'), value('openai-key'), value('iban')])).toEqual([])
  })

  for (const [name, field] of [
    ['secrets: off', { secrets: 'off' }],
    ['secrets: {high: off}', { secrets: { high: 'off', medium: 'off' } }],
    ['guard_secrets: off', { guard_secrets: 'off' }],
    ['guard: {secrets: off}', { guard: { secrets: 'off' } }],
  ] as const) {
    it(`should not let a request field lower the policy (${name})`, async () => {
      const { prompt, upstream, got } = await once({ secrets: SUBSTITUTE_ALL }, field)
      const values = prompt.values.map((v) => v.value)
      // Refused or ignored — either way no value reaches the upstream.
      for (const sent of upstream.sent) expect(valuesIn(sent, values)).toEqual([])
      if (got.status === 200) expect(channelsOf(got.body).content).toBe(prompt.text)
    })
  }

  it('should cover every generator (the prompt holds one secret of each)', () => {
    expect(secretPrompt(1).values.map((v) => v.kind)).toHaveLength(GENERATOR_NAMES.length)
  })
})
