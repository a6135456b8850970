import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  importStandInKey,
  type OperatorPattern,
  resolveSecrets,
  type SecretsOptions,
  type StandInKey,
} from '../../src/plugins/secrets'
import { type SecretServices, substituteSecrets } from '../../src/plugins/secrets/prompt-secrets'
import { GENERATORS, rng } from '../secrets/generate'

/**
 * The prompt's secrets out before the engine reads them: message contents (strings and parts), a
 * legacy prompt, and tool-call arguments inside their JSON (escapes respected, valid JSON out), each
 * substituted by the model's policy; `detect` kinds counted and left; inputs copied only where
 * something changed; a `__proto__` key of the arguments stays a key. The book it returns restores
 * every text.
 */

const SECRET = 'a test secret of at least thirty-two bytes'
let key: StandInKey

beforeAll(async () => {
  key = await importStandInKey(SECRET)
})

/** A value with a quote and a backslash in it: only found where the JSON has been decoded. */
const QUOTED: OperatorPattern = {
  name: 'quoted-key',
  pattern: 'KEY\\\\[A-Z]{4}"[0-9]{10}',
  confidence: 'high',
}
const QUOTED_VALUE = 'KEY\\ABCD"0123456789'

function services(options: SecretsOptions | undefined): SecretServices {
  return { secrets: resolveSecrets(options), standInKey: async () => key }
}

const ALL: SecretsOptions = { high: 'substitute', medium: 'substitute', patterns: [QUOTED] }
const request = (model = '@cf/meta/llama-3.1-8b-instruct') => ({
  requestId: 'req-prompt',
  tenant: 'acme',
  model,
})

/** A generated secret of `name` in its line. */
function secretLine(name: string, seed: number): { kind: string; value: string; text: string } {
  const { kind, value, line } = GENERATORS[name]!(rng(seed))
  return { kind, value, text: line.replace('$', value) }
}

/** Every string in a JSON-like value, tool-call arguments parsed when they are JSON. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    out.push(value)
    try {
      const parsed: unknown = JSON.parse(value)
      if (parsed !== null && typeof parsed === 'object') strings(parsed, out)
    } catch {
      // not JSON: the string itself is all there is
    }
  } else if (Array.isArray(value)) for (const v of value) strings(v, out)
  else if (value !== null && typeof value === 'object')
    for (const v of Object.values(value)) strings(v, out)
  return out
}

/** Every string in a parsed JSON value, in order (strings that hold JSON are not parsed again). */
function plainStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (value === null || typeof value !== 'object') return []
  return Object.values(value).flatMap(plainStrings)
}

/**
 * The texts substitution rewrites, in order: contents, text parts, the prompt, and tool-call
 * arguments — the strings inside them when they are JSON, else the arguments themselves.
 */
function prompts(inputs: Record<string, unknown>): string[] {
  const out: string[] = []
  const argumentsText = (args: unknown) => {
    if (typeof args !== 'string') return void out.push(...plainStrings(args))
    let parsed: unknown
    try {
      parsed = JSON.parse(args)
    } catch {
      parsed = undefined
    }
    if (parsed !== null && typeof parsed === 'object') out.push(...plainStrings(parsed))
    else out.push(args)
  }
  for (const message of (inputs.messages ?? []) as Record<string, unknown>[]) {
    const { content, reasoning_content: reasoning, tool_calls: calls, function_call: fn } = message
    if (typeof content === 'string') out.push(content)
    else if (Array.isArray(content)) for (const part of content) out.push(part.text)
    if (typeof reasoning === 'string') out.push(reasoning)
    type Call = { function?: { arguments: unknown }; arguments?: unknown }
    for (const call of (calls ?? []) as Call[]) {
      argumentsText(call.function ? call.function.arguments : call.arguments)
    }
    if (fn !== undefined) argumentsText((fn as Call).arguments)
  }
  if (typeof inputs.prompt === 'string') out.push(inputs.prompt)
  return out
}

describe('substituteSecrets: where secrets are', () => {
  it('should do nothing without a secrets option, or when no rule substitutes or detects', async () => {
    const inputs = { messages: [{ role: 'user', content: secretLine('github-token', 1).text }] }
    for (const options of [undefined, {}, { high: 'off' as const, medium: 'off' as const }]) {
      const out = await substituteSecrets(services(options), request(), inputs)
      expect(out.inputs).toBe(inputs)
      expect(out.secrets).toBeUndefined()
    }
  })

  it('should substitute message contents, strings and text parts, and restore them', async () => {
    const a = secretLine('github-token', 2)
    const b = secretLine('card-number', 3)
    const image = { type: 'image_url', image_url: { url: 'https://example.com/x.png' } }
    const inputs = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: a.text },
        { role: 'user', content: [{ type: 'text', text: b.text }, image] },
      ],
      max_tokens: 64,
    }
    const frozen = structuredClone(inputs)
    const { inputs: out, secrets } = await substituteSecrets(services(ALL), request(), inputs)
    expect(inputs).toEqual(frozen) // nothing mutated
    const messages = out.messages as typeof inputs.messages
    expect(messages[0]).toBe(inputs.messages[0]) // unchanged: the same object
    expect(out.max_tokens).toBe(64)
    const content = messages[1]!.content as string
    const parts = messages[2]!.content as [{ type: string; text: string }, typeof image]
    expect(content).not.toContain(a.value)
    expect(parts[0].text).not.toContain(b.value)
    expect(parts[0].type).toBe('text')
    expect(parts[1]).toBe(image)
    expect(secrets!.substituted).toEqual({ 'github-token': 1, 'card-number': 1 })
    expect(secrets!.detected).toEqual({})
    expect((await secrets!.book.restore(content)).text).toBe(a.text)
    expect((await secrets!.book.restore(parts[0].text)).text).toBe(b.text)
  })

  it('should substitute a legacy prompt', async () => {
    const a = secretLine('aws-access-key-id', 4)
    const inputs = { prompt: `Deploy with ${a.text}`, raw: true }
    const { inputs: out, secrets } = await substituteSecrets(services(ALL), request(), inputs)
    expect(out.prompt).not.toContain(a.value)
    expect(out.raw).toBe(true)
    expect((await secrets!.book.restore(out.prompt as string)).text).toBe(inputs.prompt)
  })

  it('should return the same inputs, messages and parts when no secret is found', async () => {
    const inputs = {
      messages: [
        { role: 'user', content: 'Nothing secret here, 1234 5678.' },
        {
          role: 'user',
          content: [{ type: 'text', text: 'sha 3f786850e387550fdab836ed7e6dc881de23001b' }],
        },
        {
          role: 'assistant',
          tool_calls: [
            { id: 'c', type: 'function', function: { name: 'f', arguments: '{"a": 1}' } },
          ],
        },
      ],
      prompt: 'plain',
    }
    const out = await substituteSecrets(services(ALL), request(), inputs)
    expect(out.inputs).toBe(inputs)
    expect(out.secrets!.substituted).toEqual({})
  })
})

describe('substituteSecrets: tool-call arguments', () => {
  const call = (args: unknown) => ({
    inputs: {
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { id: 'other', type: 'function', function: { name: 'noop', arguments: '{}' } },
            { id: 'call_1', type: 'function', function: { name: 'deploy', arguments: args } },
          ],
        },
      ],
    },
  })
  const argumentsOf = (out: Record<string, unknown>) => {
    const messages = out.messages as { tool_calls: { function: { arguments: unknown } }[] }[]
    return messages[1]!.tool_calls[1]!.function.arguments
  }

  it('should substitute inside the JSON, escapes respected, and give valid JSON back', async () => {
    const pem = secretLine('private-key', 5)
    const token = secretLine('github-token', 6)
    const original = {
      config: { key: pem.value, note: `token ${token.value}` },
      list: ['x', QUOTED_VALUE, 3, null, true],
    }
    const args = JSON.stringify(original, null, 2)
    expect(args).toContain('\\n') // the PEM's newlines, escaped in the JSON
    const { inputs } = call(args)
    const { inputs: out, secrets } = await substituteSecrets(services(ALL), request(), inputs)
    const sent = argumentsOf(out) as string
    expect(typeof sent).toBe('string')
    const parsed = JSON.parse(sent) as typeof original
    for (const value of [pem.value, token.value, QUOTED_VALUE, JSON.stringify(pem.value)]) {
      expect(sent).not.toContain(value)
    }
    expect(sent).not.toContain(JSON.stringify(QUOTED_VALUE).slice(1, -1))
    expect(parsed.list.slice(2)).toEqual([3, null, true])
    expect(secrets!.substituted).toEqual({ 'private-key': 1, 'github-token': 1, 'quoted-key': 1 })
    // Each string restores to the original value.
    const { book } = secrets!
    expect((await book.restore(parsed.config.key)).text).toBe(pem.value)
    expect((await book.restore(parsed.config.note)).text).toBe(`token ${token.value}`)
    expect((await book.restore(parsed.list[1] as string)).text).toBe(QUOTED_VALUE)
    // The untouched call and message stay the same objects.
    const messages = out.messages as unknown[]
    expect(messages[0]).toBe(inputs.messages[0])
    const calls = (messages[1] as { tool_calls: unknown[] }).tool_calls
    expect(calls[0]).toBe(inputs.messages[1]!.tool_calls![0])
  })

  it('should substitute arguments given as an object', async () => {
    const token = secretLine('stripe-key', 7)
    const args = { key: token.value, n: 1 }
    const { inputs } = call(args)
    const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
    const sent = argumentsOf(out) as { key: string; n: number }
    expect(sent.key).not.toBe(token.value)
    expect(sent.n).toBe(1)
    expect(args.key).toBe(token.value) // not mutated
  })

  it('should substitute arguments that are not JSON as text', async () => {
    const token = secretLine('github-token', 8)
    const args = `deploy --token=${token.value} --force`
    const { inputs } = call(args)
    const { inputs: out, secrets } = await substituteSecrets(services(ALL), request(), inputs)
    const sent = argumentsOf(out) as string
    expect(sent).not.toContain(token.value)
    expect(sent.startsWith('deploy --token=')).toBe(true)
    expect((await secrets!.book.restore(sent)).text).toBe(args)
  })

  it('should substitute arguments nested at any depth, keeping them as written and valid JSON', async () => {
    const token = secretLine('github-token', 9)
    // Spaced JSON: substituted in the text as written, the spaces stay (nothing is encoded again).
    const nested = (depth: number) =>
      `${'[ '.repeat(depth - 1)}{ "token": ${JSON.stringify(token.value)} }${' ]'.repeat(depth - 1)}`
    for (const depth of [1, 64, 65, 500]) {
      const args = nested(depth)
      const { inputs } = call(args)
      const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
      const sent = argumentsOf(out) as string
      expect(sent, String(depth)).not.toContain(token.value)
      expect(() => JSON.parse(sent)).not.toThrow()
      expect(sent.length, String(depth)).toBe(args.length - token.value.length + 40)
    }
  })

  it('should keep a "__proto__" key of the arguments a key, polluting no prototype', async () => {
    const token = secretLine('github-token', 10)
    const args = `{"__proto__": {"polluted": ${JSON.stringify(token.value)}}, "b": "x"}`
    const { inputs } = call(args)
    const { inputs: out, secrets } = await substituteSecrets(services(ALL), request(), inputs)
    const sent = argumentsOf(out) as string
    expect(sent).not.toContain(token.value)
    const parsed = JSON.parse(sent) as Record<string, unknown>
    expect(Object.keys(parsed)).toEqual(['__proto__', 'b'])
    const inner = Object.getOwnPropertyDescriptor(parsed, '__proto__')!.value as {
      polluted: string
    }
    expect((await secrets!.book.restore(inner.polluted)).text).toBe(token.value)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype)
    // Arguments given as an object with an own "__proto__" key (as JSON.parse makes them).
    const asObject = JSON.parse(args) as Record<string, unknown>
    const second = await substituteSecrets(services(ALL), request(), call(asObject).inputs)
    const sentObject = argumentsOf(second.inputs) as Record<string, unknown>
    expect(Object.hasOwn(sentObject, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(sentObject)).toBe(Object.prototype)
    expect(JSON.stringify(sentObject)).not.toContain(token.value)
  })

  // Keys used to be kept as they were (only string values rewritten): a token used as a map key
  // reached the engine. Fixed in 00db920.
  it('should substitute a secret used as a key of JSON arguments', async () => {
    const token = secretLine('github-token', 11)
    const { inputs } = call(JSON.stringify({ [token.value]: 'valid' }))
    const { inputs: out, secrets } = await substituteSecrets(services(ALL), request(), inputs)
    const sent = argumentsOf(out) as string
    expect(sent).not.toContain(token.value)
    const [key] = Object.keys(JSON.parse(sent) as object)
    expect((await secrets!.book.restore(key!)).text).toBe(token.value)
  })

  // Arguments given as an object (Workers AI's own shape) are walked like a call record, whose keys
  // are kept: a key of the arguments object is not rewritten.
  it('should substitute a secret used as a key of arguments given as an object', async () => {
    const token = secretLine('github-token', 11)
    const { inputs } = call({ headers: { [token.value]: 'valid' } })
    const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
    expect(JSON.stringify(argumentsOf(out))).not.toContain(token.value)
  })
})

describe('substituteSecrets: every message field the engine reads', () => {
  // Each of these reaches the engine (src/core/ceiling/prompt.ts counts them as prompt text: a template
  // renders them). substituteSecrets used to read only `content`, `tool_calls[n].function.arguments`
  // and `prompt` (fixed in 00db920); the JSON-number and duplicate-key cases are still open.
  const token = () => secretLine('github-token', 16)

  it('should substitute arguments of a tool call in the legacy shape { name, arguments }', async () => {
    // The shape the guard's own legacy answers carry (src/core/format/assemble.ts), sent back next turn.
    const { value } = token()
    const inputs = {
      messages: [
        { role: 'user', content: 'deploy' },
        { role: 'assistant', tool_calls: [{ name: 'deploy', arguments: { token: value } }] },
      ],
    }
    const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
    expect(JSON.stringify(out)).not.toContain(value)
  })

  // Only string values of parsed arguments are rewritten; a card or a fødselsnummer written as a JSON
  // number is a number, so the arguments go up as they came.
  it('should substitute a card number or a fødselsnummer given as a JSON number', async () => {
    const fnr = secretLine('no-fodselsnummer', 17).value
    for (const args of [
      '{"card_number": 4242424242424242, "exp": "09/29"}',
      `{"patient": {"fnr": ${fnr}}}`,
    ]) {
      const inputs = {
        messages: [
          {
            role: 'assistant',
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'pay', arguments: args } }],
          },
        ],
      }
      const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
      const sent = JSON.stringify(out)
      expect(sent).not.toContain('4242424242424242')
      expect(sent).not.toContain(fnr)
    }
  })

  // JSON.parse keeps the last of duplicate keys: a secret under the first is not in the parsed value,
  // nothing changed there, so the arguments text (which the engine reads) goes up as it came.
  it('should substitute a secret under a duplicated key of the arguments', async () => {
    const { value } = token()
    const args = `{"token": ${JSON.stringify(value)}, "token": "redacted"}`
    const inputs = {
      messages: [
        {
          role: 'assistant',
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args } }],
        },
      ],
    }
    const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
    expect(JSON.stringify(out)).not.toContain(value)
  })

  it("should substitute a message's function_call arguments", async () => {
    const { value } = token()
    const inputs = {
      messages: [
        { role: 'user', content: 'deploy' },
        {
          role: 'assistant',
          function_call: { name: 'deploy', arguments: JSON.stringify({ token: value }) },
        },
      ],
    }
    const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
    expect(JSON.stringify(out)).not.toContain(value)
  })

  it('should substitute reasoning a client sends back (reasoning_content)', async () => {
    const { value, text } = token()
    const inputs = {
      messages: [
        { role: 'user', content: 'deploy' },
        { role: 'assistant', content: 'done', reasoning_content: `I will use ${text}` },
      ],
    }
    const { inputs: out } = await substituteSecrets(services(ALL), request(), inputs)
    expect(JSON.stringify(out)).not.toContain(value)
  })
})

describe('substituteSecrets: policies', () => {
  it('should count detect kinds and leave them in place', async () => {
    const ssn = secretLine('us-ssn', 12)
    const token = secretLine('github-token', 13)
    const text = `${ssn.text}\n${token.text}\n${ssn.text}`
    const inputs = { messages: [{ role: 'user', content: text }] }
    const options: SecretsOptions = { high: 'substitute', medium: 'detect' }
    const { inputs: out, secrets } = await substituteSecrets(services(options), request(), inputs)
    const content = (out.messages as { content: string }[])[0]!.content
    expect(content.split(ssn.value)).toHaveLength(3) // both SSNs left as they were
    expect(content).not.toContain(token.value)
    expect(secrets!.detected).toEqual({ 'us-ssn': 2 })
    expect(secrets!.substituted).toEqual({ 'github-token': 1 })
  })

  it('should count detect kinds and change nothing when nothing substitutes', async () => {
    const ssn = secretLine('us-ssn', 14)
    const inputs = { messages: [{ role: 'user', content: ssn.text }], prompt: ssn.text }
    const { inputs: out, secrets } = await substituteSecrets(
      services({ medium: 'detect' }),
      request(),
      inputs,
    )
    expect(out).toBe(inputs)
    expect(secrets!.detected).toEqual({ 'us-ssn': 2 })
    expect(secrets!.substituted).toEqual({})
  })

  it("should follow the model's policy, and still open a book where another model substitutes", async () => {
    const token = secretLine('github-token', 15)
    const inputs = { messages: [{ role: 'user', content: token.text }] }
    const options: SecretsOptions = {
      high: 'substitute',
      models: { '@cf/trusted': { high: 'off' } },
    }
    const trusted = await substituteSecrets(services(options), request('@cf/trusted'), inputs)
    expect(trusted.inputs).toBe(inputs)
    // A book all the same: an answer may carry another request's stand-in.
    expect(trusted.secrets?.substituted).toEqual({})
    const other = await substituteSecrets(services(options), request('@cf/other'), inputs)
    expect(other.secrets!.substituted).toEqual({ 'github-token': 1 })
  })

  it('should send no value of any kind, wherever it is in the request (property)', async () => {
    const names = Object.keys(GENERATORS)
    const place = fc.constantFrom(
      'content',
      'part',
      'json',
      'text-args',
      'prompt',
      'reasoning',
      'legacy-call',
      'function-call',
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom(...names), place, fc.nat()), {
          minLength: 1,
          maxLength: 8,
        }),
        async (items) => {
          const values: string[] = []
          const messages: Record<string, unknown>[] = []
          let prompt: string | undefined
          for (const [name, where, seed] of items) {
            const { value, text } = secretLine(name, seed + 1)
            values.push(value)
            if (where === 'content') messages.push({ role: 'user', content: text })
            else if (where === 'part')
              messages.push({ role: 'user', content: [{ type: 'text', text }] })
            else if (where === 'prompt') prompt = `${prompt ?? ''}${text}\n`
            else if (where === 'reasoning')
              messages.push({ role: 'assistant', content: 'ok', reasoning_content: text })
            else if (where === 'legacy-call')
              messages.push({
                role: 'assistant',
                tool_calls: [{ name: 'f', arguments: { input: text } }],
              })
            else if (where === 'function-call')
              messages.push({
                role: 'assistant',
                function_call: { name: 'f', arguments: JSON.stringify({ input: text }) },
              })
            else {
              const args = where === 'json' ? JSON.stringify({ input: text, n: seed }) : text
              messages.push({
                role: 'assistant',
                tool_calls: [
                  { id: 'c', type: 'function', function: { name: 'f', arguments: args } },
                ],
              })
            }
          }
          const inputs: Record<string, unknown> = { messages }
          if (prompt !== undefined) inputs.prompt = prompt
          const { inputs: out, secrets } = await substituteSecrets(services(ALL), request(), inputs)
          const sent = strings(out)
          for (const value of values) {
            for (const s of sent) expect(s.includes(value), `${value} in ${s}`).toBe(false)
          }
          const count = Object.values(secrets!.substituted).reduce((a, b) => a + b, 0)
          expect(count).toBeGreaterThanOrEqual(new Set(values).size)
          // Every text restores to what it was (JSON arguments by the strings they hold: they come
          // back re-serialised, and a value goes back into JSON escaped, which restore does not do).
          const before = prompts(inputs)
          const after = prompts(out)
          expect(after).toHaveLength(before.length)
          for (let i = 0; i < before.length; i++) {
            expect((await secrets!.book.restore(after[i]!)).text).toBe(before[i])
          }
        },
      ),
      { numRuns: 60, seed: 20 },
    )
  })
})
