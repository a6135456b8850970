import { describe, expect, it } from 'vitest'
import type { SimConfig } from '../../sim/config'
import { chatText, GLM, quickEngine, readSse, rejection, secretLines, userMessage } from './helpers'

const engine = (config: Partial<SimConfig> = {}) => quickEngine({ mode: 'fixed', ...config })

const cached = (out: unknown): number =>
  chatText(out).usage.prompt_tokens_details?.cached_tokens ?? -1

describe('prefix cache', () => {
  it('should report cached page-aligned tokens for a repeated prompt of the same account', async () => {
    const sim = engine()
    const inputs = userMessage(secretLines('A', 40))
    const n = await sim.countTokens(inputs)
    expect(cached(await sim.binding('a').run(GLM, inputs))).toBe(0)
    expect(cached(await sim.binding('a').run(GLM, inputs))).toBe(Math.floor((n - 1) / 64) * 64)
  })

  it('should not share cached pages with another account', async () => {
    const sim = engine()
    const inputs = userMessage(secretLines('A', 40))
    await sim.binding('a').run(GLM, inputs)
    expect(cached(await sim.binding('b').run(GLM, inputs))).toBe(0)
  })

  it('should reuse only the shared page-aligned prefix of a longer prompt', async () => {
    const sim = engine()
    const base = secretLines('A', 40)
    await sim.binding('a').run(GLM, {
      messages: [
        { role: 'system', content: base },
        { role: 'user', content: 'one' },
      ],
    })
    const out = await sim.binding('a').run(GLM, {
      messages: [
        { role: 'system', content: base },
        { role: 'user', content: 'two, longer' },
      ],
    })
    const shared = await sim.countTokens({ messages: [{ role: 'system', content: base }] })
    expect(cached(out)).toBeGreaterThan(shared - 200)
    expect(cached(out) % 64).toBe(0)
    expect(cached(out)).toBeLessThanOrEqual(shared)
  })

  it('should share one account’s cache between requests without a salt (one gateway credential)', async () => {
    const sim = engine()
    const inputs = userMessage(secretLines('A', 40))
    const n = await sim.countTokens(inputs)
    await sim.binding('gateway').run(GLM, inputs)
    expect(cached(await sim.binding('gateway').run(GLM, inputs))).toBe(
      Math.floor((n - 1) / 64) * 64,
    )
  })

  it('should root the cache at (account, cache_salt): different salts never share a page', async () => {
    const sim = engine()
    const inputs = userMessage(secretLines('A', 40))
    const n = await sim.countTokens(inputs)
    const full = Math.floor((n - 1) / 64) * 64
    const ai = sim.binding('gateway')
    expect(cached(await ai.run(GLM, { ...inputs, cache_salt: 'salt-a' }))).toBe(0)
    // Another salt, and no salt at all, miss; the same salt on the same account hits.
    expect(cached(await ai.run(GLM, { ...inputs, cache_salt: 'salt-b' }))).toBe(0)
    expect(cached(await ai.run(GLM, inputs))).toBe(0)
    expect(cached(await ai.run(GLM, { ...inputs, cache_salt: 'salt-a' }))).toBe(full)
    // The salt scopes within an account, never across accounts.
    expect(cached(await sim.binding('other').run(GLM, { ...inputs, cache_salt: 'salt-a' }))).toBe(0)
    expect(sim.stats().recent.map((r) => r.cacheSalt)).toEqual([
      'salt-a',
      'salt-b',
      null,
      'salt-a',
      'salt-a',
    ])
  })

  it('should prefill a salted request in full when only another salt has its prefix', async () => {
    const sim = engine({ prefillTokensPerSecond: 1_000_000 })
    const inputs = userMessage(secretLines('A', 40))
    const n = await sim.countTokens(inputs)
    await sim.binding('gateway').run(GLM, { ...inputs, cache_salt: 'a' })
    await sim.binding('gateway').run(GLM, { ...inputs, cache_salt: 'b' })
    const [, second] = sim.stats().recent
    expect(second!.prefilledTokens).toBe(n)
    expect(second!.prefillMs).toBeCloseTo((n / 1_000_000) * 1000, 6)
  })

  it('should refuse a cache_salt that is not a non-empty string, as vLLM does', async () => {
    const sim = engine()
    for (const salt of ['', 7, { a: 1 }]) {
      const error = await rejection(
        sim.binding('a').run(GLM, userMessage('hi', { cache_salt: salt })),
      )
      expect(error.message).toContain("'cache_salt' must be a non-empty string")
    }
    // null is absent (OpenAI clients send null for unset optional fields).
    expect(
      chatText(await sim.binding('a').run(GLM, userMessage('hi', { cache_salt: null }))).content,
    ).toBeTypeOf('string')
  })

  it('should report nothing cached when the cache is off', async () => {
    const sim = engine({ prefixCache: false })
    const inputs = userMessage(secretLines('A', 40))
    await sim.binding('a').run(GLM, inputs)
    expect(cached(await sim.binding('a').run(GLM, inputs))).toBe(0)
    // Nothing is kept: the finished prompt's pages are free again (stale, for leak modes to read).
    expect(sim.stats().pool.cachedPages).toBe(0)
  })

  it('should evict cached pages (LRU) when another request needs the room', async () => {
    const sim = engine()
    const aInputs = userMessage(secretLines('A', 100))
    await sim.binding('a').run(GLM, aInputs)
    const before = sim.stats().pool.cachedPages
    await sim.binding('b').run(GLM, userMessage(secretLines('B', 100)))
    expect(sim.stats().pool.cachedPages).toBeLessThan(before * 2)
    expect(cached(await sim.binding('a').run(GLM, aInputs))).toBeLessThan(before * 64)
  })

  it('should prefill only uncached tokens', async () => {
    const sim = engine({ prefillTokensPerSecond: 1_000_000 })
    const inputs = userMessage(secretLines('A', 40))
    const n = await sim.countTokens(inputs)
    await sim.binding('a').run(GLM, inputs)
    const hit = cached(await sim.binding('a').run(GLM, inputs))
    const [first, second] = sim.stats().recent
    expect(first!.prefillMs).toBeCloseTo((n / 1_000_000) * 1000, 6)
    expect(second!.prefillMs).toBeCloseTo(((n - hit) / 1_000_000) * 1000, 6)
  })
})

describe('pool concurrency', () => {
  it('should fail with the capacity error when pages do not come free in time', async () => {
    const sim = engine({ queueTimeoutMs: 50 })
    const held = (await sim
      .binding('a')
      .run(GLM, userMessage(secretLines('A', 110), { stream: true }))) as ReadableStream<Uint8Array>
    const error = await rejection(sim.binding('b').run(GLM, userMessage(secretLines('B', 80))))
    expect(error.message).toBe('AiError: 3040: Capacity temporarily exceeded, please try again.')
    await held.cancel()
    const ok = chatText(await sim.binding('b').run(GLM, userMessage(secretLines('B', 80))))
    expect(ok.content).toContain('SECRET-B')
  })

  it('should serve waiting requests first come, first served once pages are freed', async () => {
    const sim = engine({ queueTimeoutMs: 5_000 })
    const held = (await sim
      .binding('a')
      .run(GLM, userMessage(secretLines('A', 110), { stream: true }))) as ReadableStream<Uint8Array>
    const order: string[] = []
    const big = sim
      .binding('b')
      .run(GLM, userMessage(secretLines('B', 80)))
      .then(() => order.push('big'))
    const small = sim
      .binding('c')
      .run(GLM, userMessage('small'))
      .then(() => order.push('small'))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(order).toEqual([])
    expect(sim.stats().pool.waiting).toBe(2)
    await readSse(held)
    await Promise.all([big, small])
    expect(order).toEqual(['big', 'small'])
  })
})

describe('timing', () => {
  it('should wait for prefill and decode on real timers', async () => {
    const sim = engine({ prefillTokensPerSecond: 20_000, decodeTokensPerSecond: 2_000 })
    const inputs = userMessage(secretLines('A', 80))
    const n = await sim.countTokens(inputs)
    const start = Date.now()
    const out = chatText(await sim.binding('a').run(GLM, inputs))
    const minimum = (n / 20_000) * 1000 + ((out.usage.completion_tokens - 3) / 2_000) * 1000
    expect(Date.now() - start).toBeGreaterThanOrEqual(minimum * 0.9)
  })

  it('should pace a stream: first bytes after prefill, the rest at decode speed', async () => {
    const sim = engine({ prefillTokensPerSecond: 10_000, decodeTokensPerSecond: 1_000 })
    const inputs = userMessage(secretLines('A', 40), { stream: true })
    const n = await sim.countTokens(inputs)
    const start = Date.now()
    const read = await readSse(await sim.binding('a').run(GLM, inputs), start)
    const total = Date.now() - start
    expect(read.ttftMs).toBeGreaterThanOrEqual((n / 10_000) * 1000 * 0.9)
    expect(total - read.ttftMs).toBeGreaterThanOrEqual((read.usage!.completion_tokens - 6) * 0.9)
  })

  it('should apply seeded jitter within its bound, identically on identical engines', async () => {
    const inputs = userMessage(secretLines('A', 40))
    const run = async () => {
      const sim = engine({ prefillTokensPerSecond: 1e9, jitter: 0.5, seed: 9 })
      await sim.binding('a').run(GLM, inputs)
      return sim.stats().recent[0]!.prefillMs
    }
    const n = await engine().countTokens(inputs)
    const nominal = (n / 1e9) * 1000
    const first = await run()
    expect(first).toBe(await run())
    expect(first).not.toBe(nominal)
    expect(Math.abs(first - nominal)).toBeLessThanOrEqual(nominal * 0.5)
  })
})
