import { describe, expect, it } from 'vitest'
import {
  chatText,
  quickEngine as engine,
  GLM,
  LLAMA,
  readSse,
  secretLines,
  userMessage,
} from './helpers'

/** The directive the guard ends a JSON-mode prompt with. */
const directive = (canary: string) =>
  `Start your JSON object with the member "guard_echo": "${canary}", then write the object you would otherwise write.`
const JSON_OBJECT = { response_format: { type: 'json_object' } }

describe('JSON mode', () => {
  it('should answer json_object with one JSON object whose first member is the echo', async () => {
    const inputs = userMessage(`${secretLines('A', 20)}\n${directive('cnry_J1x9')}`, JSON_OBJECT)
    const out = chatText(await engine().binding('a').run(GLM, inputs))
    expect(out.content.startsWith('{"guard_echo":"cnry_J1x9",')).toBe(true)
    const object = JSON.parse(out.content) as Record<string, string>
    expect(Object.keys(object)).toEqual(['guard_echo', 'answer'])
    expect(object.answer).toContain('SECRET-A-7Q2X9')
    // Reasoning stays free text.
    expect(out.reasoning).toContain('SECRET-A-7Q2X9')
    expect(out.reasoning.startsWith('{')).toBe(false)
  })

  it('should answer a plain JSON object without a directive, with quotes JSON-escaped', async () => {
    const text = 'He said "hei" \\ then\ttabbed: ქართული 😀'
    const out = chatText(await engine().binding('a').run(GLM, userMessage(text, JSON_OBJECT)))
    const object = JSON.parse(out.content) as Record<string, string>
    expect(Object.keys(object)).toEqual(['answer'])
    expect(object.answer).toContain(text)
  })

  it('should treat json_schema and guided_json as JSON mode, and a null guided_json as text', async () => {
    const body = `${secretLines('A', 5)}\n${directive('cnry_S2')}`
    const schema = {
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } },
    }
    for (const extra of [schema, { guided_json: { type: 'object' } }]) {
      const out = chatText(await engine().binding('a').run(GLM, userMessage(body, extra)))
      expect(out.content.startsWith('{"guard_echo":"cnry_S2",')).toBe(true)
      expect(JSON.parse(out.content)).toMatchObject({ guard_echo: 'cnry_S2' })
    }
    const sim = engine()
    const plain = chatText(
      await sim.binding('a').run(GLM, userMessage(body, { guided_json: null })),
    )
    expect(plain.content.startsWith('{')).toBe(false)
    expect(sim.stats().recent.at(-1)).toMatchObject({ json: false, echoed: null })
  })

  it('should follow the last JSON directive, case-insensitively, and not the text one', async () => {
    const body =
      `${directive('cnry_first')}\n${secretLines('A', 5)}\n` +
      'Begin your reply with the code cnry_text\n' +
      directive('cnry_last').toLowerCase().replace('cnry_last', 'cnry_Last')
    const sim = engine()
    const out = chatText(await sim.binding('a').run(GLM, userMessage(body, JSON_OBJECT)))
    expect(out.content.startsWith('{"guard_echo":"cnry_Last",')).toBe(true)
    expect(sim.stats().recent.at(-1)).toMatchObject({ echoed: 'cnry_Last', json: true })
    // The followed directive is an instruction, never quoted; the others are context, quoted verbatim.
    const answer = (JSON.parse(out.content) as { answer: string }).answer
    expect(`${answer}${out.reasoning}`).not.toMatch(/cnry_last/i)
    expect(out.reasoning).toContain(`“${directive('cnry_first').slice(0, 90)}”`)
  })

  it('should not follow the JSON directive in text mode', async () => {
    const out = chatText(
      await engine()
        .binding('a')
        .run(GLM, userMessage(`hello\n${directive('cnry_T')}`)),
    )
    expect(out.content.startsWith('{')).toBe(false)
  })

  it('should slip with echoIgnoreRate 1, still answering valid JSON', async () => {
    const inputs = userMessage(`${secretLines('A', 5)}\n${directive('cnry_slip')}`, JSON_OBJECT)
    const out = chatText(await engine({ echoIgnoreRate: 1 }).binding('a').run(GLM, inputs))
    const object = JSON.parse(out.content) as Record<string, string>
    expect(object.guard_echo).toBeUndefined()
    expect(Object.keys(object)).toEqual(['answer'])
  })

  it('should split the JSON content across stream events, equal to the non-stream answer', async () => {
    const inputs = userMessage(`${secretLines('A', 20)}\n${directive('cnry_St')}`, JSON_OBJECT)
    const plain = chatText(await engine().binding('a').run(GLM, inputs))
    const read = await readSse(
      await engine()
        .binding('a')
        .run(GLM, { ...inputs, stream: true }),
    )
    const deltas = (read.events as { choices: { delta: { content?: string } }[] }[])
      .map((e) => e.choices[0]?.delta.content)
      .filter((c): c is string => typeof c === 'string' && c.length > 0)
    expect(deltas.length).toBeGreaterThan(3)
    expect(read.content).toBe(plain.content)
    expect(read.content.startsWith('{"guard_echo":"cnry_St",')).toBe(true)
  })

  it('should put the JSON object in a legacy model’s response', async () => {
    const inputs = userMessage(`${secretLines('A', 5)}\n${directive('cnry_L')}`, JSON_OBJECT)
    const out = (await engine().binding('a').run(LLAMA, inputs)) as { response: string }
    expect(JSON.parse(out.response)).toMatchObject({ guard_echo: 'cnry_L' })
  })
})
