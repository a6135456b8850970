import { describe, expect, it } from 'vitest'
import { GuardError, guardAi } from '../../src'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { chatChunk as chunk, readUntil, openStream as scripted } from '../support/open-stream'
import { chat, sseText } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'holdback-test-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }

/**
 * The canary's hold-back, alone: the foreign-content check holds back the last units of every
 * channel too (9 while nothing matched another tenant; tested below), which would keep these open streams' last words until more text came.
 */
describe('hold-back across channels', () => {
  it('should not hold the answer back because the reasoning ended in "c"', async () => {
    const upstream = scripted((own) => [
      chunk({ role: 'assistant', reasoning_content: 'The question is basic' }),
      chunk({ content: `${own}\n` }),
      chunk({ content: 'First words ' }),
      chunk({ content: 'and more words.' }),
    ])
    const ai = guardAi(upstream, { secret: SECRET, models, content: false })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    // The upstream is still open: the content must flow anyway.
    const got = await readUntil(out.getReader(), (seen) => seen.content.includes('First words'))
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
    const ai = guardAi(upstream, { secret: SECRET, models, content: false })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    const got = await readUntil(out.getReader(), (seen) => seen.content.includes('First words'))
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
    const ai = guardAi(upstream, { secret: SECRET, models, content: false })
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
  it('should release all but the last 9 words while the stream is open and nothing matched, and the rest at its end', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`)
    const upstream = scripted((own) => [
      chunk({ role: 'assistant', content: `${own}\n` }),
      ...words.map((word) => chunk({ content: `${word} ` })),
    ])
    const ai = guardAi(upstream, { secret: SECRET, models })
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    const reader = out.getReader()
    // Everything up to w50 is judged while the upstream is still open (w51 … w59 are 9 units; no
    // window matched another tenant, so a span that could still make evidence holds none before).
    const got = await readUntil(reader, (seen) => seen.content.includes('w50 '))
    expect(sseText(got).content).toContain('w0 w1 ')
    expect(sseText(got).content).not.toContain('w51')
    upstream.close(['data: [DONE]\n\n'])
    const rest = await readUntil(reader, (seen) => seen.content.includes('w59'))
    expect(sseText(got + rest).content.trim()).toBe(words.join(' '))
  })
})
