import { beforeEach, describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { chatText, GLM, readSse, rejection, secretLines, simRpc, userMessage } from './helpers'

// Full-size replay of the incident against the simulator Worker, with the published figures:
// window 1,048,576 tokens, KV pool 681,280 tokens, 64-token pages.
const counter = new SimEngine()
const A_PROMPT = userMessage(secretLines('A', 11_000))
const B_LINES: string[] = []
for (let i = 0; i < 48_000; i++) {
  B_LINES.push(`B quarterly report paragraph ${i}: revenue grew in the northern region.`)
}
const B_PROMPT = userMessage(B_LINES.join('\n'))
const REAL_PREFILL_RATE = 50_000

describe('incident replay (full size, over RPC)', { timeout: 30_000 }, () => {
  beforeEach(async () => {
    await simRpc().reset({
      mode: 'pd-abort-leak',
      prefillTokensPerSecond: Infinity,
      decodeTokensPerSecond: Infinity,
    })
  })

  it('should hand tenant B tenant A’s secret, fast, with a 200 and B’s own token count', async () => {
    const ai = simRpc()
    const aTokens = await counter.countTokens(A_PROMPT)
    const bTokens = await counter.countTokens(B_PROMPT)
    expect(aTokens).toBeGreaterThan(200_000)
    expect(bTokens).toBeGreaterThan(681_280)
    expect(bTokens).toBeLessThanOrEqual(1_048_576)

    const a = chatText(await ai.run(GLM, A_PROMPT))
    expect(a.usage.prompt_tokens).toBe(aTokens)
    // B's prefill is now "real": a full prefill of B would take bTokens / 50,000 s (about 14 s).
    await ai.configure({ prefillTokensPerSecond: REAL_PREFILL_RATE, decodeTokensPerSecond: 2_000 })
    const start = Date.now()
    const read = await readSse(await ai.run(GLM, { ...B_PROMPT, stream: true }), start)
    const realPrefillMs = (bTokens / REAL_PREFILL_RATE) * 1000

    expect(read.done).toBe(true)
    expect(read.content).toContain('SECRET-A-7Q2X9')
    expect(read.reasoning).toContain('SECRET-A-7Q2X9')
    expect(read.content).not.toContain('B quarterly report')
    expect(read.usage?.prompt_tokens).toBe(bTokens)
    expect(read.ttftMs).toBeLessThan(realPrefillMs / 4)
    const stats = await ai.stats()
    expect(stats.recent.at(-1)).toMatchObject({
      outcome: 'placeholder',
      prefilledTokens: 1,
      pages: 10_645,
      reportedPromptTokens: bTokens,
    })
  })

  it('should reject the same request in fixed mode with SGLang’s message', async () => {
    const ai = simRpc()
    await ai.run(GLM, A_PROMPT)
    await ai.configure({ mode: 'fixed' })
    const bTokens = await counter.countTokens(B_PROMPT)
    const error = await rejection(ai.run(GLM, B_PROMPT))
    expect(error.message).toBe(
      `AiError: 5021: Input length (${bTokens} tokens) exceeds the maximum allowed length (681274 tokens)`,
    )
  })

  it('should serve a prompt that fills the window with its max_tokens, and reject one token more', async () => {
    const ai = simRpc()
    const maxTokens = 256
    const overhead = (await counter.countTokens(userMessage(' alpha'.repeat(10)))) - 10
    const words = 1_048_576 - maxTokens - overhead
    const exact = userMessage(' alpha'.repeat(words), { max_tokens: maxTokens })
    expect(await counter.countTokens(exact)).toBe(1_048_576 - maxTokens)

    const start = Date.now()
    const out = chatText(await ai.run(GLM, exact))
    const elapsed = Date.now() - start
    expect(out.usage.prompt_tokens).toBe(1_048_576 - maxTokens)
    expect(elapsed).toBeLessThan(10_000)
    const over = userMessage(' alpha'.repeat(words + 1), { max_tokens: maxTokens })
    const error = await rejection(ai.run(GLM, over))
    expect(error.message).toBe(
      'AiError: 5021: The estimated number of input and maximum output tokens (1048577) exceeded this model context window limit (1048576).',
    )
  })
})
