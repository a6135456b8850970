/**
 * A released stream's chunks are the client's to keep or hand on: an app that re-enqueues them into a
 * byte stream (which takes each chunk's buffer over) must get every byte, so no two chunks the guard
 * releases may share one buffer — taking one over would empty the others.
 */
import { describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { SimEngine } from '../../sim/engine'
import { guardAi } from '../../src'
import { chat, sseText } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'byte-consumer-test-secret-0123456789abcdef'

/**
 * `stream` re-enqueued chunk by chunk into a byte stream, as a counting or re-framing app does, with a
 * pause before each (the app awaits something of its own): meanwhile the guard's stream fills its queue.
 */
function throughByteStream(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = stream.getReader()
  return new ReadableStream({
    type: 'bytes',
    async pull(controller) {
      const { done, value } = await reader.read()
      await new Promise((resolve) => setTimeout(resolve, 0))
      if (done) controller.close()
      else controller.enqueue(value)
    },
  })
}

/** One streamed answer through the guard over an honest engine, read as `read` reads it. */
async function answer(read: (s: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>) {
  const engine = new SimEngine({
    mode: 'fixed',
    prefillTokensPerSecond: Number.POSITIVE_INFINITY,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    tokensPerEvent: 1,
  })
  const ai = guardAi(engine.binding(), { secret: SECRET, tenant: 'a' })
  const prompt = `${english(7, 1500)}\nSummarise the text above.`
  const out = (await ai.run(MODEL, {
    ...chat(prompt),
    stream: true,
    max_tokens: 400,
  })) as ReadableStream<Uint8Array>
  return new Response(read(out)).text()
}

describe('a released stream re-enqueued into a byte stream', () => {
  it('should arrive whole: the same answer as read directly, to its end', async () => {
    const direct = await answer((s) => s)
    const rewrapped = await answer(throughByteStream)
    expect(sseText(direct).content.length).toBeGreaterThan(200)
    expect(sseText(rewrapped).content).toBe(sseText(direct).content)
    expect(rewrapped.trimEnd().endsWith('data: [DONE]')).toBe(true)
  })
})
