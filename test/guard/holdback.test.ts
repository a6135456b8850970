import { describe, expect, it } from 'vitest'
import { GuardError, guardAi } from '../../src'
import type { AiRunner } from '../../src/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/canary'
import { chat, sseText } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'holdback-test-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }

function chunk(delta: Record<string, unknown>): string {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`
}

/**
 * An upstream whose stream the test writes event by event (and may leave open); `close` sends the
 * given last events, then ends it.
 */
function scripted(
  events: (own: string) => string[],
): AiRunner & { close: (last?: string[]) => void } {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined
  return {
    close: (last = []) => {
      for (const event of last) controller?.enqueue(new TextEncoder().encode(event))
      controller?.close()
    },
    run: async (_model, inputs) => {
      // The directive's canary: the prompt's last (its first is the tenant's prefix marker).
      const own = [...JSON.stringify(inputs).matchAll(/cnry_[0-9a-z]{24}/g)].at(-1)![0]
      return new ReadableStream<Uint8Array>({
        start(c) {
          controller = c
          for (const event of events(own)) c.enqueue(new TextEncoder().encode(event))
        },
      })
    },
  }
}

async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  text: string,
): Promise<string> {
  let got = ''
  const decoder = new TextDecoder()
  while (!sseText(got).content.includes(text)) {
    const next = await reader.read()
    if (next.done) break
    got += decoder.decode(next.value, { stream: true })
  }
  return got
}

/**
 * The canary's hold-back, alone: the foreign-content check holds back the last 21 units of every
 * channel too (tested below), which would keep these open streams' last words until more text came.
 */
describe('hold-back across channels', () => {
  it('should not hold the answer back because the reasoning ended in "c"', async () => {
    const upstream = scripted((own) => [
      chunk({ role: 'assistant', reasoning_content: 'The question is basic' }),
      chunk({ content: `${own}\n` }),
      chunk({ content: 'First words ' }),
      chunk({ content: 'and more words.' }),
    ])
    const ai = guardAi(upstream, { secret: SECRET, models, foreignContent: false })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    // The upstream is still open: the content must flow anyway.
    const got = await readUntil(out.getReader(), 'First words')
    expect(sseText(got).reasoning).toBe('The question is basic')
    expect(sseText(got).content).toContain('First words')
    upstream.close()
  })

  it('should let the answer flow past reasoning cut off inside our own canary, never releasing it', async () => {
    const upstream = scripted((own) => [
      chunk({ role: 'assistant', reasoning_content: `I must begin with ${own.slice(0, 12)}` }),
      chunk({ content: `${own}\n` }),
      chunk({ content: 'First words ' }),
    ])
    const ai = guardAi(upstream, { secret: SECRET, models, foreignContent: false })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    const got = await readUntil(out.getReader(), 'First words')
    expect(sseText(got).content).toContain('First words')
    expect(sseText(got).reasoning).toBe('I must begin with ')
    expect(got).not.toMatch(/cnry/i)
    upstream.close()
  })

  it('should still catch a foreign canary whose first letter was released that way', async () => {
    const foreign = await mintCanary(await importCanaryKey(SECRET), {
      requestId: 'x',
      tenant: 'victim',
    })
    const upstream = scripted((own) => [
      chunk({ role: 'assistant', reasoning_content: `Quoting ${foreign.slice(0, 1)}` }),
      chunk({ content: `${own}\n` }),
      chunk({ content: 'Answer begins.' }),
      chunk({ reasoning_content: `${foreign.slice(1)} VICTIM-DATA` }),
      chunk({ content: ' VICTIM-DATA in content.' }),
      'data: [DONE]\n\n',
    ])
    const ai = guardAi(upstream, { secret: SECRET, models, foreignContent: false })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    let delivered = ''
    let code: string | undefined
    try {
      const reader = out.getReader()
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        delivered += new TextDecoder().decode(next.value)
      }
    } catch (error) {
      code = error instanceof GuardError ? error.code : String(error)
    }
    expect(code).toBe('response_quarantined')
    expect(delivered).not.toContain('VICTIM')
    expect(delivered).not.toMatch(/cnry_/i)
  })
})

describe('hold-back for foreign content', () => {
  it('should release all but the last 21 words while the stream is open, and the rest at its end', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`)
    const upstream = scripted((own) => [
      chunk({ role: 'assistant', content: `${own}\n` }),
      ...words.map((word) => chunk({ content: `${word} ` })),
    ])
    const ai = guardAi(upstream, { secret: SECRET, models })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    const reader = out.getReader()
    // Everything up to w38 is judged while the upstream is still open (w39 … w59 are 21 units).
    const got = await readUntil(reader, 'w38 ')
    expect(sseText(got).content).toContain('w0 w1 ')
    expect(sseText(got).content).not.toContain('w39')
    upstream.close(['data: [DONE]\n\n'])
    const rest = await readUntil(reader, 'w59')
    expect(sseText(got + rest).content.trim()).toBe(words.join(' '))
  })
})
