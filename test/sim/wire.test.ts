import { describe, expect, it } from 'vitest'
import type { SimEngine } from '../../sim/engine'
import {
  chatText,
  concat,
  quickEngine as engine,
  GLM,
  LLAMA,
  readSse,
  rejection,
  secretLines,
  userMessage,
} from './helpers'

/** A fixed sequence of requests: one tenant, another, a stream, an over-pool stream. */
async function replay(sim: SimEngine): Promise<string[]> {
  const out: string[] = []
  const a = sim.binding('a')
  const b = sim.binding('b')
  out.push(JSON.stringify(await a.run(GLM, userMessage(secretLines('A', 90)))))
  const s1 = (await b.run(
    GLM,
    userMessage('Ærlig talt: hvor går grensen?', { stream: true }),
  )) as ReadableStream<Uint8Array>
  out.push(...(await readSse(s1)).chunks.map((c) => Array.from(c).join(',')))
  const s2 = (await b.run(
    GLM,
    userMessage('q '.repeat(5000), { stream: true }),
  )) as ReadableStream<Uint8Array>
  out.push(...(await readSse(s2)).chunks.map((c) => Array.from(c).join(',')))
  return out
}

describe('determinism', () => {
  it('should produce the same bytes, chunk boundaries included, for the same seed', async () => {
    const first = await replay(engine({ seed: 42, jitter: 0.3 }))
    const second = await replay(engine({ seed: 42, jitter: 0.3 }))
    expect(second).toEqual(first)
  })

  it('should produce different bytes for another seed', async () => {
    const first = await replay(engine({ seed: 42 }))
    const other = await replay(engine({ seed: 43 }))
    expect(other).not.toEqual(first)
  })

  it('should give a stream and a non-stream of the same request the same text and usage', async () => {
    const inputs = userMessage(`${secretLines('A', 30)}\nBegin your reply with the code cnry_ab12`)
    const plain = chatText(await engine().binding('a').run(GLM, inputs))
    const streamed = await readSse(
      await engine()
        .binding('a')
        .run(GLM, { ...inputs, stream: true }),
    )
    expect(streamed.content).toBe(plain.content)
    expect(streamed.reasoning).toBe(plain.reasoning)
    expect(streamed.usage).toEqual(plain.usage)
    expect(plain.content.startsWith('cnry_ab12 ')).toBe(true)
  })
})

describe('SSE stream', () => {
  it('should order role, reasoning deltas, content deltas, finish, usage (choices: []), [DONE]', async () => {
    const read = await readSse(
      await engine()
        .binding('a')
        .run(GLM, userMessage('hello', { stream: true })),
    )
    const events = read.events as {
      choices: { delta: Record<string, string>; finish_reason: string | null }[]
      usage?: unknown
      object: string
    }[]
    expect(events[0]!.choices[0]!.delta.role).toBe('assistant')
    const kinds = events.map((e) => {
      const c = e.choices[0]
      if (!c) return 'usage'
      if (c.finish_reason) return 'finish'
      return 'reasoning_content' in c.delta ? 'reasoning' : 'content'
    })
    const firstContent = kinds.indexOf('content')
    expect(kinds.lastIndexOf('reasoning')).toBeLessThan(firstContent)
    expect(kinds.slice(-2)).toEqual(['finish', 'usage'])
    expect(events.at(-1)!.choices).toEqual([])
    expect(events.every((e) => e.object === 'chat.completion.chunk')).toBe(true)
    expect(read.done).toBe(true)
    expect(read.finishReason).toBe('stop')
  })

  it('should split bytes mid-event, mid-line and inside multi-byte characters, and still reassemble', async () => {
    const sim = engine({ splitRate: 0.8 })
    const seen = { midEvent: false, midPrefix: false, midChar: false }
    for (let i = 0; i < 12; i++) {
      const read = await readSse(
        await sim
          .binding('a')
          .run(GLM, userMessage(`Blåbærsyltetøy № ${i} → “ok”`, { stream: true })),
      )
      expect(read.done).toBe(true)
      expect(read.content).toContain(`Blåbærsyltetøy № ${i} → “ok”`)
      const bytes = concat(read.chunks)
      let at = 0
      for (const chunk of read.chunks.slice(0, -1)) {
        at += chunk.length
        const tail = new TextDecoder().decode(chunk.subarray(-2))
        if (tail !== '\n\n') seen.midEvent = true
        if (((bytes[at] ?? 0) & 0xc0) === 0x80) seen.midChar = true
        const text = new TextDecoder().decode(bytes.subarray(0, at))
        const frameStart = text.lastIndexOf('\n\n') + 2
        const intoFrame = text.lastIndexOf('\n\n') < 0 ? text.length : text.length - frameStart
        if (intoFrame > 0 && intoFrame < 6) seen.midPrefix = true
      }
    }
    expect(seen).toEqual({ midEvent: true, midPrefix: true, midChar: true })
  })

  it('should send whole events per chunk when splitting is off', async () => {
    const read = await readSse(
      await engine({ splitRate: 0 })
        .binding('a')
        .run(GLM, userMessage('Blåbær →', { stream: true })),
    )
    for (const chunk of read.chunks) {
      const text = new TextDecoder().decode(chunk)
      expect(text.startsWith('data: ')).toBe(true)
      expect(text.endsWith('\n\n')).toBe(true)
    }
  })

  it('should omit the usage chunk only when stream_options.include_usage is false', async () => {
    const off = await readSse(
      await engine()
        .binding('a')
        .run(GLM, userMessage('hi', { stream: true, stream_options: { include_usage: false } })),
    )
    const on = await readSse(
      await engine()
        .binding('a')
        .run(GLM, userMessage('hi', { stream: true, stream_options: { include_usage: true } })),
    )
    expect(off.usage).toBeNull()
    expect(on.usage?.prompt_tokens).toBeGreaterThan(0)
  })
})

describe('legacy format', () => {
  it('should answer a legacy model with { response, usage } and no reasoning', async () => {
    const out = (await engine()
      .binding('a')
      .run(LLAMA, userMessage('Legacy question here'))) as Record<string, unknown>
    expect(Object.keys(out).sort()).toEqual(['response', 'usage'])
    expect(out.response).toContain('Legacy question here')
    expect(out.response).not.toContain('Reading the context')
  })

  it('should stream { response } events, then a usage event, then [DONE]', async () => {
    const read = await readSse(
      await engine()
        .binding('a')
        .run(LLAMA, userMessage('Legacy stream', { stream: true })),
    )
    const events = read.events as Record<string, unknown>[]
    expect(events.every((e) => typeof e.response === 'string' && !('choices' in e))).toBe(true)
    expect(events.at(-1)!.usage).toBeDefined()
    expect(events.slice(0, -1).every((e) => e.usage === undefined)).toBe(true)
    expect(read.content).toContain('Legacy stream')
    expect(read.done).toBe(true)
  })

  it('should answer any model listed in legacyModels in the legacy format, and others in chat format', async () => {
    const sim = engine({ legacyModels: [GLM] })
    expect(await sim.binding('a').run(GLM, userMessage('x'))).toHaveProperty('response')
    expect(await sim.binding('a').run(LLAMA, userMessage('x'))).toHaveProperty('choices')
  })
})

describe('inputs', () => {
  it('should read content-part arrays like the joined string', async () => {
    const parts = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first' },
            { type: 'text', text: 'second' },
          ],
        },
      ],
    }
    const joined = userMessage('first\nsecond')
    expect(await engine().binding('a').run(GLM, parts)).toEqual(
      await engine().binding('a').run(GLM, joined),
    )
  })

  it('should accept a legacy prompt and quote it', async () => {
    const out = chatText(await engine().binding('a').run(GLM, { prompt: 'Prompt-style question' }))
    expect(out.content).toContain('Prompt-style question')
  })

  it('should render tools into the prompt (more tokens than without)', async () => {
    const sim = engine()
    const tools = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
    ]
    const withTools = chatText(await sim.binding('a').run(GLM, userMessage('weather?', { tools })))
    const without = chatText(await sim.binding('a').run(GLM, userMessage('weather?')))
    expect(withTools.usage.prompt_tokens).toBeGreaterThan(without.usage.prompt_tokens + 5)
  })

  it('should treat special-token text as plain text', async () => {
    const out = chatText(
      await engine().binding('a').run(GLM, userMessage('a <|endoftext|> b <|im_start|>')),
    )
    expect(out.content).toContain('a <|endoftext|> b <|im_start|>')
  })

  it('should cap reasoning + content at max_tokens and report length', async () => {
    const sim = engine()
    for (const key of ['max_tokens', 'max_completion_tokens']) {
      const out = (await sim
        .binding('a')
        .run(GLM, userMessage(secretLines('A', 5), { [key]: 20 }))) as {
        choices: { finish_reason: string }[]
        usage: { completion_tokens: number }
      }
      expect(out.usage.completion_tokens).toBe(20)
      expect(out.choices[0]!.finish_reason).toBe('length')
    }
    const full = (await sim.binding('a').run(GLM, userMessage('short'))) as {
      choices: { finish_reason: string }[]
      usage: { completion_tokens: number }
    }
    expect(full.choices[0]!.finish_reason).toBe('stop')
    expect(full.usage.completion_tokens).toBeLessThanOrEqual(256)
  })

  it('should answer whole, finish stop, when the request sets no max_tokens', async () => {
    // Long numbered lines: Qwen3 splits digits, so the answer runs past the 256-token reserve that
    // admission counts; a default cut ended every such answer mid-word with finish_reason "length".
    const out = (await engine()
      .binding('a')
      .run(GLM, userMessage(secretLines('A', 90)))) as {
      choices: { finish_reason: string; message: { content: string } }[]
      usage: { completion_tokens: number }
    }
    expect(out.usage.completion_tokens).toBeGreaterThan(256)
    expect(out.choices[0]!.finish_reason).toBe('stop')
    expect(out.choices[0]!.message.content).toMatch(/That is what the provided material says\.$/)
  })

  it('should follow the last visible echo directive, and slip when echoIgnoreRate is 1', async () => {
    const inputs = userMessage(
      'Begin your reply with cnry_first\nlater: begin your answer with the token "cnry_second"',
    )
    const out = chatText(await engine().binding('a').run(GLM, inputs))
    expect(out.content.startsWith('cnry_second ')).toBe(true)
    // The directive it follows is its instruction, not material: the earlier one is quoted as context.
    expect(out.content.slice('cnry_second '.length)).not.toContain('cnry_second')
    expect(out.reasoning).not.toContain('cnry_second')
    expect(out.reasoning).toContain('“Begin your reply with cnry_first”')
    const slipped = chatText(await engine({ echoIgnoreRate: 1 }).binding('a').run(GLM, inputs))
    expect(slipped.content.startsWith('cnry_')).toBe(false)
  })

  it('should reject malformed inputs with AiError 5006', async () => {
    const sim = engine()
    expect((await rejection(sim.binding('a').run(GLM, {}))).message).toMatch(/^AiError: 5006: /)
    expect((await rejection(sim.binding('a').run(GLM, { messages: [] }))).message).toMatch(
      /^AiError: 5006: /,
    )
    expect(
      (await rejection(sim.binding('a').run(GLM, userMessage('x', { max_tokens: 0 })))).message,
    ).toMatch(/^AiError: 5006: /)
    expect(sim.stats().requests.byOutcome.invalid).toBe(3)
  })
})
