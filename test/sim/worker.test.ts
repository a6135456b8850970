import { beforeEach, describe, expect, it } from 'vitest'
import { chatText, GLM, readSse, rejection, secretLines, simRpc, userMessage } from './helpers'

describe('simulator worker over RPC', () => {
  beforeEach(async () => {
    await simRpc().reset({
      poolTokens: 4096,
      prefillTokensPerSecond: Infinity,
      decodeTokensPerSecond: Infinity,
    })
  })

  it('should answer a chat request with the chat-completions shape', async () => {
    const out = await simRpc().run(GLM, userMessage('What does the harbour manifest list?'))
    const { reasoning, content, usage } = chatText(out)
    expect(out).toMatchObject({ object: 'chat.completion', model: GLM })
    expect(reasoning).toContain('What does the harbour manifest list?')
    expect(content).toContain('What does the harbour manifest list?')
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens)
  })

  it('should stream SSE bytes over RPC', async () => {
    const stream = await simRpc().run(GLM, userMessage('Stream me the answer.', { stream: true }))
    const read = await readSse(stream)
    expect(read.done).toBe(true)
    expect(read.content).toContain('Stream me the answer.')
    expect(read.usage?.prompt_tokens).toBeGreaterThan(0)
  })

  it('should leak one account into another when the second prompt exceeds the pool', async () => {
    const ai = simRpc()
    await ai.run(GLM, userMessage(secretLines('A', 80)))
    const out = await ai.run(GLM, userMessage('x '.repeat(5000)))
    const { reasoning, content } = chatText(out)
    expect(content).toContain('SECRET-A-7Q2X9')
    expect(reasoning).toContain('SECRET-A-7Q2X9')
    const stats = await ai.stats()
    expect(stats.requests.byOutcome.placeholder).toBe(1)
    expect(stats.recent.at(-1)?.account).toBe('worker')
  })

  it('should apply configure() and report it in stats()', async () => {
    const ai = simRpc()
    await ai.configure({ mode: 'fixed' })
    const error = await rejection(ai.run(GLM, userMessage('x '.repeat(5000))))
    expect(error.message).toMatch(
      /^AiError: 5021: Input length \(\d+ tokens\) exceeds the maximum allowed length \(4090 tokens\)/,
    )
    const stats = await ai.stats()
    expect(stats.config.mode).toBe('fixed')
    expect(stats.requests.byMode.fixed).toBe(1)
    expect(stats.requests.byOutcome.rejected).toBe(1)
    expect(stats.pool.totalPages).toBe(64)
  })

  it('should refuse an unknown config option, naming it', async () => {
    const error = await rejection(simRpc().configure({ poolSize: 1 } as never))
    expect(error.message).toMatch(/poolSize/)
  })

  it('should name a tokenizer the test build does not bundle, and keep serving the default', async () => {
    const ai = simRpc()
    await ai.configure({ tokenizer: 'gemma3' })
    const error = await rejection(ai.run(GLM, userMessage('hello')))
    expect(error.message).toMatch(
      /tokenizer-gemma3 is not bundled in this simulator Worker \(vitest.config.ts\)/,
    )
    await ai.configure({ tokenizer: 'qwen3' })
    expect(chatText(await ai.run(GLM, userMessage('hello again'))).content).toContain('hello again')
  })
})
