import { describe, expect, it } from 'vitest'
import { prng } from '../../sim/random'
import { GuardError, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { chat, directiveCanary, sseText } from '../support/prompts'
import { ENDING, chunk as event, MODEL } from '../support/secrets'

/**
 * A stream held for its verdict through hundreds of reasoning events is kept as event text, joined a
 * batch at a time (src/core/verify/held-head.ts), and read again on release. What the client receives must
 * be exactly what the upstream said, whole, and a foreign canary deep in the held reasoning must still
 * withhold everything.
 */
const SECRET = 'long-held-head-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }

/** 300 reasoning events (some with escapes and non-Latin text), then the echo and an answer. */
function reasoningTexts(insert?: { at: number; text: string }): string[] {
  const texts = Array.from({ length: 300 }, (_, i) =>
    i % 7 === 0 ? `step ${i}: "quoted" Ключ 账本 ` : `step ${i} of the ledger, `,
  )
  if (insert) texts[insert.at] = insert.text
  return texts
}

/** The upstream: the answer's bytes cut into random chunks. */
function upstream(reasoning: string[], seed: number): AiRunner {
  return {
    run: async (_model, inputs) => {
      const own = directiveCanary(inputs)
      const body =
        reasoning.map((text) => event({ reasoning_content: text })).join('') +
        event({ content: `${own}\n` }) +
        event({ content: 'The ledger balances.' }) +
        ENDING
      const bytes = new TextEncoder().encode(body)
      const next = prng(seed)
      const cuts: Uint8Array[] = []
      for (let at = 0; at < bytes.length; ) {
        const size = 1 + Math.floor(next() * 400)
        cuts.push(bytes.subarray(at, at + size))
        at += size
      }
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          const piece = cuts.shift()
          if (piece) controller.enqueue(piece)
          else controller.close()
        },
      })
    },
  }
}

describe('a long held head', () => {
  it('should release every held reasoning event exactly as it came, whatever the cuts', async () => {
    const reasoning = reasoningTexts()
    for (const seed of [1, 2, 3]) {
      const ai = guardAi(upstream(reasoning, seed), { secret: SECRET, models })
      const out = await ai.run(MODEL, chat('Explain the ledger.', { stream: true }))
      const body = await new Response(out as ReadableStream<Uint8Array>).text()
      const texts = sseText(body)
      expect(texts.reasoning).toBe(reasoning.join(''))
      expect(texts.content).toBe('The ledger balances.')
      // The held events go out as the upstream's own event text.
      expect(
        body.startsWith(reasoning.map((text) => event({ reasoning_content: text })).join('')),
      ).toBe(true)
    }
  })

  it('should withhold the whole answer when a foreign canary lies deep in the held reasoning', async () => {
    const foreign = await mintCanary(await importCanaryKey(SECRET), {
      requestId: 'someone-else/1',
      tenant: 'another-tenant',
    })
    const reasoning = reasoningTexts({ at: 230, text: `${foreign} VICTIM-LEDGER-LINE ` })
    for (const seed of [4, 5]) {
      const ai = guardAi(upstream(reasoning, seed), { secret: SECRET, models })
      const error = await ai
        .run(MODEL, chat('Explain the ledger.', { stream: true }))
        .then(async (out) => new Response(out as ReadableStream<Uint8Array>).text())
        .then(
          (body) => ({ body }),
          (caught: unknown) => caught,
        )
      // Nothing was released: the run itself is refused, no byte of the answer reaches the client.
      expect(error).toBeInstanceOf(GuardError)
      expect((error as GuardError).code).toBe('response_quarantined')
    }
  })
})
