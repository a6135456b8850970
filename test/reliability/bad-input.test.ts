import { env, SELF } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { type GuardOptions, guardAi } from '../../src'
import { importCanaryKey } from '../../src/core/canary'
import { chat } from '../support/prompts'
import { deliveredText, direct, SURFACES, type Surface } from '../support/surfaces'
import { KEY_A, sim } from '../support/worker'
import { MODEL } from './properties'
import { FORGED, liveCanaries, openAiError } from './support'

/**
 * Bad input through every surface: the Worker over HTTP (SELF, in front of the simulator Worker), the
 * Hono middleware in a small app, and guardAi itself. Every case ends in a clear OpenAI-style 4xx with
 * the field at fault, or in a correct answer — never a 500, an uncaught exception or a hang.
 */
const DEV_SECRET = (env as unknown as { GUARD_SECRET: string }).GUARD_SECRET
const FAST_SIM = {
  mode: 'fixed' as const,
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
}
const utf8 = new TextEncoder()
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
const hi = chat('hi')

/** Request inputs (model apart) that every surface must refuse, and what it must say. */
const REFUSED: [string, unknown, number, string, RegExp?][] = [
  ['no messages, no prompt', {}, 400, 'invalid_request'],
  ['empty messages', { messages: [] }, 400, 'invalid_request', /messages/],
  ['messages a string', { messages: 'hi' }, 400, 'invalid_request', /messages/],
  ['a null message', { messages: [null] }, 400, 'invalid_request', /messages\[0\]/],
  ['a message without role', { messages: [{ content: 'x' }] }, 400, 'invalid_request', /role/],
  ['a numeric role', { messages: [{ role: 5, content: 'x' }] }, 400, 'invalid_request', /role/],
  ['numeric content', { messages: [{ role: 'user', content: 5 }] }, 400, 'invalid_request'],
  [
    'a text part without text',
    { messages: [{ role: 'user', content: [{ type: 'text' }] }] },
    400,
    'invalid_request',
    /text/,
  ],
  [
    'a part without type',
    { messages: [{ role: 'user', content: [{ text: 'x' }] }] },
    400,
    'invalid_request',
    /type/,
  ],
  [
    'a numeric name',
    { messages: [{ role: 'user', content: 'x', name: 5 }] },
    400,
    'invalid_request',
    /name/,
  ],
  [
    'tool_calls a string',
    { messages: [{ role: 'assistant', content: null, tool_calls: 'x' }] },
    400,
    'invalid_request',
    /tool_calls/,
  ],
  ['stream a string', { ...hi, stream: 'yes' }, 400, 'invalid_request', /stream/],
  ['max_tokens negative', { ...hi, max_tokens: -1 }, 400, 'invalid_request', /max_tokens/],
  ['max_tokens zero', { ...hi, max_tokens: 0 }, 400, 'invalid_request', /max_tokens/],
  ['max_tokens fractional', { ...hi, max_tokens: 1.5 }, 400, 'invalid_request', /max_tokens/],
  ['max_tokens a string', { ...hi, max_tokens: '64' }, 400, 'invalid_request', /max_tokens/],
  ['max_tokens 1e300', { ...hi, max_tokens: 1e300 }, 400, 'invalid_request', /max_tokens/],
  [
    'max_completion_tokens 2^24+1',
    { ...hi, max_completion_tokens: 2 ** 24 + 1 },
    400,
    'invalid_request',
    /max_completion_tokens/,
  ],
  [
    'max_tokens 2^24 (absurd, well-formed)',
    { ...hi, max_tokens: 2 ** 24 },
    400,
    'context_length_exceeded',
    /max_tokens/,
  ],
  ['tools a string', { ...hi, tools: 'x' }, 400, 'invalid_request', /tools/],
  ['prompt a number', { prompt: 5 }, 400, 'invalid_request', /prompt/],
  [
    '10,000 nested arrays as content',
    { messages: [{ role: 'user', content: JSON.parse(nested(10_000)) }] },
    400,
    'invalid_request',
    /content/,
  ],
]

/** Inputs every surface must answer normally: odd text is still text, a look-alike is not a canary. */
const ANSWERED: [string, string][] = [
  ['NUL and control characters', 'TENANT-A \u0000 bell \u0007 esc \u001b[31m del \u007f end'],
  ['lone surrogates', 'TENANT-A \ud800 high, \udfff low, a\ud83d cut emoji'],
  [
    'a forged canary (right shape, no valid MAC)',
    `TENANT-A code ${FORGED} and ${FORGED.toUpperCase()}`,
  ],
  ['canary near-misses', 'TENANT-A cnry_ cnry_abc cnry_7k2m9q4r8t1v6w3x5z0a2b4 xcnry_'],
  ['multi-byte text', `TENANT-A ${'😀中é'.repeat(200)}`],
]

function surfaceRun(surface: Surface, options: Omit<GuardOptions, 'tenant'>) {
  const engine = new SimEngine(FAST_SIM)
  return surface(engine.binding('tenant-a'), { ...options, tenant: 'tenant-a' })
}

describe('bad input through guardAi and the middleware', { timeout: 30_000 }, () => {
  for (const [name, surface] of SURFACES) {
    it(`should refuse malformed shapes with a 4xx naming the field (${name})`, async () => {
      const send = surfaceRun(surface, { secret: DEV_SECRET })
      for (const [label, inputs, status, code, param] of REFUSED) {
        const got = await send('tenant-a', MODEL, inputs as Record<string, unknown>)
        expect([label, got.status, got.code]).toEqual([label, status, code])
        const { error } = openAiError(got.body)
        if (param) expect(`${error.param ?? ''} ${error.message}`, label).toMatch(param)
      }
    })

    it(`should answer odd but valid text with the tenant's own content (${name})`, async () => {
      const key = await importCanaryKey(DEV_SECRET)
      const send = surfaceRun(surface, { secret: DEV_SECRET })
      for (const [label, content] of ANSWERED) {
        for (const stream of [false, true]) {
          const got = await send('tenant-a', MODEL, chat(content, { stream }))
          expect([label, stream, got.status]).toEqual([label, stream, 200])
          expect(got.text, label).toContain('TENANT-A')
          expect(await liveCanaries(key, got.body), label).toEqual([])
        }
      }
    })
  }

  it('should refuse inputs that are not an object, and a model with no profile (guardAi)', async () => {
    const ai = guardAi(new SimEngine(FAST_SIM).binding(), { secret: DEV_SECRET })
    for (const inputs of [null, [], 'hi', 42]) {
      const error = await ai.run(MODEL, inputs as never).then(
        () => undefined,
        (e: unknown) => e as { status: number; code: string },
      )
      expect([inputs, error?.status, error?.code]).toEqual([inputs, 400, 'invalid_request'])
    }
    for (const model of ['', '../../admin', '@cf/unknown/model']) {
      const error = await ai.run(model, hi).then(
        () => undefined,
        (e: unknown) => e as { status: number; code: string; param?: string },
      )
      expect([model, error?.status, error?.param]).toEqual([model, 400, 'model'])
    }
  })

  it('should release a forged canary unchanged: it does not verify, so it is text', async () => {
    const send = surfaceRun(direct, { secret: DEV_SECRET })
    const lines = Array.from({ length: 40 }, (_, i) => `TENANT-A line ${i} quotes ${FORGED}.`)
    const got = await send('tenant-a', MODEL, chat(lines.join('\n')))
    expect(got.status).toBe(200)
    const content = (JSON.parse(got.body) as { choices: { message: { content: string } }[] })
      .choices[0]!.message.content
    expect(content).toContain(FORGED)
  })
})

/** POST raw bytes or text to the Worker's OpenAI route. */
function postRaw(body: string | Uint8Array, path = '/v1/chat/completions'): Promise<Response> {
  return SELF.fetch(`http://guard.test${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
    body,
  })
}

describe('bad input through the Worker over HTTP', { timeout: 30_000 }, () => {
  beforeEach(async () => {
    await sim.reset(FAST_SIM)
  })

  it('should refuse every malformed shape with the same 4xx as the library', async () => {
    for (const [label, inputs, status, code, shown] of REFUSED) {
      // The OpenAI route requires "messages": a prompt-only body is refused for that first.
      const param = label === 'prompt a number' ? /prompt|messages/ : shown
      const res = await postRaw(JSON.stringify({ model: MODEL, ...(inputs as object) }))
      const { error } = openAiError(await res.text())
      expect([label, res.status, error.code]).toEqual([label, status, code])
      if (param) expect(`${error.param ?? ''} ${error.message}`, label).toMatch(param)
    }
  })

  it('should refuse bodies that are not a JSON object with 400 invalid_request', async () => {
    const valid = JSON.stringify({ model: MODEL, ...chat('TENANT-A hello') })
    const bodies: [string, string | Uint8Array, RegExp][] = [
      ['empty', '', /not valid JSON/],
      ['malformed', '{"model": ', /not valid JSON/],
      ['single quotes', "{'model': 'x'}", /not valid JSON/],
      ['trailing comma', '{"model":"x",}', /not valid JSON/],
      ['null', 'null', /JSON object/],
      ['an array', '[1,2]', /JSON object/],
      ['a number', '42', /JSON object/],
      ['a string', '"hello"', /JSON object/],
      ['model a number', JSON.stringify({ model: 5, ...hi }), /model/],
      ['model empty', JSON.stringify({ model: '', ...hi }), /model/],
      ['n = 2', JSON.stringify({ model: MODEL, ...hi, n: 2 }), /one choice/],
      [
        '100,000 nested arrays',
        `{"model":"${MODEL}","messages":[{"role":"user","content":${nested(100_000)}}]}`,
        /JSON|content/,
      ],
    ]
    for (let cut = 1; cut < valid.length; cut += 9) {
      bodies.push([`truncated at ${cut}`, valid.slice(0, cut), /not valid JSON/])
    }
    for (const [label, body, message] of bodies) {
      const res = await postRaw(body)
      const { error } = openAiError(await res.text())
      expect([label, res.status, error.code]).toEqual([label, 400, 'invalid_request'])
      expect(error.message, label).toMatch(message)
    }
  })

  it('should refuse invalid UTF-8 with 400, and accept a BOM and escaped lone surrogates', async () => {
    const head = utf8.encode(`{"model":"${MODEL}","messages":[{"role":"user","content":"TENANT-A `)
    const tail = utf8.encode('"}]}')
    const invalid: [string, number[]][] = [
      ['a stray 0xff', [0xff]],
      ['0xfe 0xff', [0xfe, 0xff]],
      ['an overlong slash', [0xc0, 0xaf]],
      ['a CESU-8 surrogate', [0xed, 0xa0, 0x80]],
      ['a cut 3-byte sequence', [0xe2, 0x82]],
      ['a 5-byte sequence', [0xf8, 0x88, 0x80, 0x80, 0x80]],
    ]
    for (const [label, bytes] of invalid) {
      const res = await postRaw(new Uint8Array([...head, ...bytes, ...tail]))
      const { error } = openAiError(await res.text())
      expect([label, res.status, error.code]).toEqual([label, 400, 'invalid_request'])
      expect(error.message).toContain('UTF-8')
    }
    const escaped = `{"model":"${MODEL}","messages":[{"role":"user","content":"TENANT-A \\ud800 x \\udfff"}]}`
    for (const body of [escaped, `\ufeff${escaped}`]) {
      const res = await postRaw(body)
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('TENANT-A')
    }
  })

  it('should answer odd but valid text on both routes, whole and streamed', async () => {
    const key = await importCanaryKey(DEV_SECRET)
    for (const [label, content] of ANSWERED) {
      for (const stream of [false, true]) {
        for (const path of ['/v1/chat/completions', `/ai/run/${MODEL}`]) {
          const body = {
            ...(path.startsWith('/v1') ? { model: MODEL } : {}),
            ...chat(content, { stream }),
          }
          const res = await postRaw(JSON.stringify(body), path)
          const text = await res.text()
          expect([label, path, stream, res.status]).toEqual([label, path, stream, 200])
          expect(deliveredText(text), label).toContain('TENANT-A')
          expect(await liveCanaries(key, text), label).toEqual([])
        }
      }
    }
  })

  // Found here, fixed in 0bfee29: the figures went negative when the output reserve alone exceeded the
  // pool ("needs more than -16,095,936 tokens … can safely serve -16,095,936 prompt tokens").
  it('should state an absurd max_tokens without negative figures', async () => {
    const res = await postRaw(JSON.stringify({ model: MODEL, ...hi, max_tokens: 2 ** 24 }))
    const { error } = openAiError(await res.text())
    expect(error.code).toBe('context_length_exceeded')
    // No negative figure (the model name's own "glm-5.3" is not one).
    expect(error.message).not.toMatch(/(?<![\w@/])-\d/)
  })

  // Found here, fixed in 0bfee29: deep nesting the guard does not read (tool schemas, unknown fields)
  // was forwarded; the binding's serializer overflowed its stack and the client got 502
  // upstream_error "Maximum call stack size exceeded" for its own malformed input.
  it('should refuse 10,000 nested arrays in a tool schema or an unknown field with 400', async () => {
    const deep = nested(10_000)
    for (const body of [
      `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`,
      `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"extra":${deep}}`,
    ]) {
      const res = await postRaw(body)
      const { error } = openAiError(await res.text())
      expect([res.status, error.code]).toEqual([400, 'invalid_request'])
    }
  })

  it('should answer deep nesting in fields it forwards with a clear error, never a 500', async () => {
    const deep = nested(10_000)
    const res = await postRaw(
      `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"extra":${deep}}`,
    )
    const { error } = openAiError(await res.text())
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(res.status).not.toBe(500)
    expect(error.message).not.toContain('[[')
  })
})
