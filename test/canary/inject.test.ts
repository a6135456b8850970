import { describe, expect, it } from 'vitest'
import { buildEchoDirective, injectCanary } from '../../src/core/canary'
import { GuardError } from '../../src/core/errors'

const CANARY = 'cnry_0123456789abcdefghjkmnpq'
// The regex the simulator's model uses to find the code it must echo.
const SIM =
  /begin your (?:reply|answer|response) with(?: the (?:code|token|marker))?\s*[:"'`]*\s*([A-Za-z0-9_-]+)/i

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}

/** The last text the model reads, whatever the input shape. */
function lastText(inputs: Record<string, unknown>): string {
  const messages = inputs.messages as { content: unknown }[]
  const content = messages[messages.length - 1]!.content
  if (typeof content === 'string') return content
  const parts = content as { text?: string }[]
  return parts[parts.length - 1]!.text ?? ''
}

describe('buildEchoDirective', () => {
  it('should match the simulator regex capturing exactly the canary', () => {
    const match = SIM.exec(buildEchoDirective(CANARY))
    expect(match?.[1]).toBe(CANARY)
    expect(SIM.exec(`Prompt text.\n\n${buildEchoDirective(CANARY)}`)?.[1]).toBe(CANARY)
  })

  it('should be plain text without markup a pipeline would strip', () => {
    expect(buildEchoDirective(CANARY)).not.toMatch(/[<>`*#[\]]/)
  })

  it('should not match the simulator regex when no directive is present', () => {
    expect(SIM.exec('Please answer the question about Oslo.')).toBeNull()
  })
})

describe('injectCanary', () => {
  it('should append to the last user message with string content, without mutating', () => {
    const inputs = deepFreeze({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is the capital of Norway?' },
      ],
      max_tokens: 50,
    })
    const out = injectCanary(inputs, CANARY)
    expect(out).not.toBe(inputs)
    expect(out.max_tokens).toBe(50)
    const messages = out.messages as { role: string; content: string }[]
    expect(messages).toHaveLength(2)
    expect(messages[0]).toBe(inputs.messages[0])
    expect(messages[1]!.content).toBe(
      `What is the capital of Norway?\n\n${buildEchoDirective(CANARY)}`,
    )
    expect(lastText(out).endsWith(buildEchoDirective(CANARY))).toBe(true)
    expect(inputs.messages[1]!.content).toBe('What is the capital of Norway?')
  })

  it('should add a text part at the end of a parts array', () => {
    const inputs = deepFreeze({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Describe this.' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    })
    const out = injectCanary(inputs, CANARY)
    const parts = (out.messages as { content: { type: string; text?: string }[] }[])[0]!.content
    expect(parts).toHaveLength(3)
    expect(parts[2]).toEqual({ type: 'text', text: buildEchoDirective(CANARY) })
    expect(inputs.messages[0]!.content).toHaveLength(2)
  })

  it('should append a new user message when the last message is not a user message', () => {
    for (const last of [
      { role: 'assistant', content: 'Earlier answer.' },
      { role: 'tool', content: '{"temp":3}', tool_call_id: 'x' },
    ]) {
      const inputs = deepFreeze({ messages: [{ role: 'user', content: 'Q' }, last] })
      const out = injectCanary(inputs, CANARY)
      const messages = out.messages as unknown[]
      expect(messages).toHaveLength(3)
      expect(messages[1]).toBe(last)
      expect(messages[2]).toEqual({ role: 'user', content: buildEchoDirective(CANARY) })
    }
    const empty = injectCanary({ messages: [] }, CANARY)
    expect(empty.messages).toEqual([{ role: 'user', content: buildEchoDirective(CANARY) }])
  })

  it('should append to a legacy prompt', () => {
    const inputs = deepFreeze({ prompt: 'Tell me a joke.', stream: true })
    const out = injectCanary(inputs, CANARY)
    expect(out).toEqual({
      prompt: `Tell me a joke.\n\n${buildEchoDirective(CANARY)}`,
      stream: true,
    })
    expect(SIM.exec(out.prompt as string)?.[1]).toBe(CANARY)
  })

  it('should inject into both when both messages and prompt are present', () => {
    const out = injectCanary({ prompt: 'P', messages: [{ role: 'user', content: 'M' }] }, CANARY)
    expect((out.prompt as string).endsWith(buildEchoDirective(CANARY))).toBe(true)
    expect(lastText(out).endsWith(buildEchoDirective(CANARY))).toBe(true)
  })

  it('should reject inputs with neither messages nor prompt, or malformed ones', () => {
    for (const inputs of [{}, { messages: 'hi' }, { prompt: 42 }]) {
      expect(() => injectCanary(inputs, CANARY)).toThrow(GuardError)
    }
  })
})
