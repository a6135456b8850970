import { describe, expect, it } from 'vitest'
import { GuardError, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { chat, directiveCanary, sseText } from '../support/prompts'
import { recordVerdicts } from '../support/verdicts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'split-test-canary-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }

function chunk(delta: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`
}

/**
 * An upstream answering with fixed SSE bytes built around the request's canary, cut into two byte
 * chunks at `offset`. Texts hold multi-byte characters near the canaries, and the canaries are also
 * split across several events.
 */
function upstreamSplitAt(
  offset: number,
  body: (own: string) => string,
): AiRunner & { bytes: (own: string) => Uint8Array } {
  const bytes = (own: string) => new TextEncoder().encode(body(own))
  return {
    bytes,
    run: async (_model, inputs) => {
      const all = bytes(directiveCanary(inputs))
      const at = Math.min(offset, all.length)
      return new ReadableStream<Uint8Array>({
        start(controller) {
          if (at > 0) controller.enqueue(all.slice(0, at))
          if (at < all.length) controller.enqueue(all.slice(at))
          controller.close()
        },
      })
    },
  }
}

const ending = `${chunk({}, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [], usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 } })}\n\ndata: [DONE]\n\n`

function ownBody(own: string): string {
  return (
    chunk({ role: 'assistant', reasoning_content: 'Thinking — é 😀 — the code is ' }) +
    chunk({ reasoning_content: `${own.slice(0, 9)}` }) +
    chunk({ reasoning_content: `${own.slice(9)}.` }) +
    chunk({ content: `**${own.slice(0, 3)}` }) +
    chunk({ content: `${own.slice(3)}**\n` }) +
    chunk({ content: 'Answer: é😀 quoting ' }) +
    chunk({ content: own.slice(0, 14) }) +
    chunk({ content: `${own.slice(14)} and done.` }) +
    ending
  )
}

describe('canaries split anywhere', () => {
  it('should strip our own canary split at every byte offset and across events', async () => {
    const probe = upstreamSplitAt(0, ownBody)
    const length = probe.bytes('cnry_000000000000000000000000').length
    const verdicts = recordVerdicts()
    for (let offset = 0; offset <= length; offset++) {
      const ai = guardAi(upstreamSplitAt(offset, ownBody), {
        secret: SECRET,
        models,
        hooks: { onVerdict: verdicts.onVerdict },
      })
      const out = await ai.run(MODEL, chat('hello', { stream: true }))
      const body = await new Response(out as ReadableStream<Uint8Array>).text()
      const { reasoning, content } = sseText(body)
      expect(body).not.toMatch(/cnry/i)
      expect(reasoning).toBe('Thinking — é 😀 — the code is .')
      expect(content).toBe('Answer: é😀 quoting and done.')
    }
    expect(verdicts.events.map((v) => v.action)).toEqual(Array(length + 1).fill('release'))
  }, 60_000)

  it('should withhold a foreign canary split at every byte offset, and nothing after it', async () => {
    const foreign = await mintCanary(await importCanaryKey(SECRET), {
      requestId: 'other',
      tenant: 'victim',
    })
    const leakBody = (own: string) =>
      chunk({ role: 'assistant', reasoning_content: 'Reading é 😀 context.' }) +
      chunk({ content: `${own}\n` }) +
      chunk({ content: 'Safe start é😀 then ' }) +
      chunk({ content: foreign.slice(0, 11) }) +
      chunk({ content: `${foreign.slice(11)} VICTIM-DATA follows` }) +
      chunk({ content: ' and more VICTIM-DATA.' }) +
      ending
    const length = new TextEncoder().encode(leakBody(foreign)).length
    // Each withheld answer is logged once as a quarantine naming the foreign canary (captured here).
    const verdicts = recordVerdicts()
    for (let offset = 0; offset <= length; offset++) {
      verdicts.clear()
      const ai = guardAi(upstreamSplitAt(offset, leakBody), {
        secret: SECRET,
        models,
        hooks: { onVerdict: verdicts.onVerdict },
      })
      let delivered = ''
      let code: string | undefined
      try {
        const out = await ai.run(MODEL, chat('hello', { stream: true }))
        const reader = (out as ReadableStream<Uint8Array>).getReader()
        const decoder = new TextDecoder()
        for (let next = await reader.read(); !next.done; next = await reader.read()) {
          delivered += decoder.decode(next.value, { stream: true })
        }
      } catch (error) {
        code = error instanceof GuardError ? error.code : String(error)
      }
      expect(code).toBe('response_quarantined')
      expect(delivered).not.toMatch(/cnry/i)
      expect(sseText(delivered).content).not.toContain('VICTIM')
      const [quarantine, ...more] = verdicts.of('quarantine')
      expect(more).toEqual([])
      expect(quarantine?.reasons).toContain('foreign_canary')
      expect(quarantine?.incidentId).toMatch(/^inc_/)
    }
  }, 60_000)
})
