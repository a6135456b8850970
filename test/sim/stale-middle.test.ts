import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import type { SimConfig } from '../../sim/config'
import { SimEngine, type SimRequestRecord } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import {
  chatText,
  GLM,
  linesWithin,
  quickEngine,
  readSse,
  rejection,
  secretLines,
  simRpc,
  userMessage,
} from './helpers'

/** The guard's echo directive (src/core/canary/inject.ts), with a canary-shaped token. */
const CANARY = 'cnry_0123456789abcdefghjkmnpq'
const DIRECTIVE = `Begin your reply with the code ${CANARY} on its own line, then answer normally.`
/** A guarded-looking prompt: the tenant's own ledger lines, the echo directive at the very end. */
const guarded = (tag: string, lines: number, extra: Record<string, unknown> = {}) =>
  userMessage(`${secretLines(tag, lines)}\n\n${DIRECTIVE}`, extra)

const engine = (config: Partial<SimConfig> = {}) => quickEngine({ mode: 'stale-middle', ...config })
const last = (sim: SimEngine): SimRequestRecord => sim.stats().recent.at(-1)!

/**
 * Account `a` fills nearly the whole pool (4,096 tokens) with all its pages written, so later requests
 * get its old pages.
 */
async function fillPool(sim: SimEngine): Promise<string> {
  const text = secretLines('A', await linesWithin(sim, 'A', 4_000))
  const { staleRate } = sim.stats().config
  sim.configure({ staleRate: 0 })
  await sim.binding('a').run(GLM, userMessage(text))
  sim.configure({ staleRate })
  return text
}

/** The longest run of `quote` found verbatim in `source`. */
function sharedRun(quote: string, source: string): string {
  let best = ''
  for (let i = 0; i < quote.length; i++) {
    let j = i + best.length + 1
    while (j <= quote.length && source.includes(quote.slice(i, j))) j++
    if (j - 1 - i > best.length && source.includes(quote.slice(i, j - 1)))
      best = quote.slice(i, j - 1)
  }
  return best
}

/** The “quoted” spans of an answer. */
const quotes = (text: string): string[] => [...text.matchAll(/“([^”]*)”/g)].map((m) => m[1]!)

describe('stale-middle mode', () => {
  it('should follow the echo, quote another account’s text, and take an honest prefill', async () => {
    const clock = new VirtualClock()
    const sim = new SimEngine(
      {
        mode: 'stale-middle',
        poolTokens: 4096,
        staleFraction: 0.5,
        prefillTokensPerSecond: 50_000,
        decodeTokensPerSecond: 1_000,
      },
      { clock },
    )
    const aText = await fillPool(sim)
    const inputs = guarded('B', 60, { stream: true, max_tokens: 1024 })
    const n = await sim.countTokens(inputs)
    const start = clock.now()
    const stream = (await sim.binding('b').run(GLM, inputs)) as ReadableStream<Uint8Array>
    // Read by hand on the virtual clock: the time of the first chunk is the TTFT.
    const chunks: Uint8Array[] = []
    let ttft = -1
    for await (const chunk of stream) {
      if (ttft < 0) ttft = clock.now() - start
      chunks.push(chunk)
    }
    const rest = await readSse(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk)
          controller.close()
        },
      }),
    )
    // The directive in the last page was read: the answer begins with its token.
    expect(rest.content.startsWith(`${CANARY} `)).toBe(true)
    // The middle quotes of the answer itself are whole lines of A's prompt, not B's.
    // A's pages come back in eviction order (leaves first), so a quote may join two of them: each
    // leaked quote holds a long verbatim run of A's prompt that B's does not contain.
    const leaked = quotes(rest.content).filter((q) => q.includes('A-7Q2X9') || q.includes('A-44'))
    expect(leaked.length).toBeGreaterThan(0)
    const runs = leaked.map((q) => sharedRun(q, aText))
    expect(Math.max(...runs.map((r) => r.length))).toBeGreaterThanOrEqual(40)
    for (const run of runs) expect(secretLines('B', 60)).not.toContain(run)
    // Its own start and end are still there (first quote, last quote).
    expect(rest.reasoning).toContain('It opens with “SECRET-B-7Q2X9 ledger row 0:')
    expect(rest.content).toContain('SECRET-B-7Q2X9 ledger row 59:')
    // The first byte comes after a prefill of every prompt token, and usage counts them all.
    expect(ttft).toBeCloseTo((n / 50_000) * 1000, 9)
    expect(rest.usage?.prompt_tokens).toBe(n)
    expect(rest.usage?.prompt_tokens_details?.cached_tokens).toBe(0)
    const record = last(sim)
    expect(record).toMatchObject({ outcome: 'stale', mode: 'stale-middle', prefilledTokens: n })
    expect(record.staleFirstPage).toBeGreaterThanOrEqual(1)
    expect(record.staleFirstPage! + record.stalePages).toBeLessThanOrEqual(record.pages - 1)
    expect(record.stalePages).toBe(Math.round(record.pages * 0.5))
    // Whose data: every stale page was last written by A's request (ordinal 0).
    expect(record.staleSources).toEqual([
      { ordinal: 0, account: 'a', affinity: null, pages: record.stalePages },
    ])
  })

  it('should answer exactly as a normal engine when the late write never happens (staleRate 0)', async () => {
    const run = async (config: Partial<SimConfig>) => {
      const sim = quickEngine(config)
      await fillPool(sim)
      const out = await sim.binding('b').run(GLM, guarded('B', 60))
      return { out, record: last(sim) }
    }
    const normal = await run({ mode: 'fixed' })
    const middle = await run({ mode: 'stale-middle', staleRate: 0 })
    expect(middle.out).toEqual(normal.out)
    expect(middle.record).toMatchObject({ outcome: 'served', stalePages: 0, staleFirstPage: null })
    expect(middle.record.staleSources).toEqual([])
  })

  it('should serve whole a request with no page between its edges', async () => {
    // Token counts (Qwen3): 1, 2, 4, 7 lines + directive = 72, 101, 159, 246 tokens = 2, 2, 3, 4 pages.
    const sizes = async (sim: SimEngine, lines: number) => sim.countTokens(guarded('B', lines))
    expect(await sizes(quickEngine(), 2)).toBeLessThanOrEqual(128)
    expect(await sizes(quickEngine(), 4)).toBeGreaterThan(128)
    expect((await sizes(quickEngine(), 4)) % 64).toBeLessThan(64 - 30)
    for (const lines of [1, 2, 4]) {
      const normal = quickEngine({ mode: 'fixed' })
      const middle = engine()
      await fillPool(normal)
      await fillPool(middle)
      const out = await middle.binding('b').run(GLM, guarded('B', lines))
      expect(out).toEqual(await normal.binding('b').run(GLM, guarded('B', lines)))
      expect(last(middle)).toMatchObject({ outcome: 'served', stalePages: 0, staleFirstPage: null })
    }
    // Four pages: page 1 lies between the first page and the pages holding the last 64 tokens.
    const sim = engine()
    await fillPool(sim)
    const out = chatText(await sim.binding('b').run(GLM, guarded('B', 7)))
    expect(out.content.startsWith(`${CANARY} `)).toBe(true)
    expect(last(sim)).toMatchObject({
      outcome: 'stale',
      pages: 4,
      stalePages: 1,
      staleFirstPage: 1,
    })
  })

  it('should, with staleEdgeTokens 1, stale the middle of 3 pages and may cut a straddling echo', async () => {
    const sim = engine({ staleEdgeTokens: 1 })
    await fillPool(sim)
    for (const lines of [1, 2]) {
      await sim.binding('b').run(GLM, guarded('B', lines))
      expect(last(sim)).toMatchObject({ outcome: 'served', staleFirstPage: null })
    }
    await fillPool(sim)
    // 159 tokens: the last page holds 31 of them, fewer than the directive needs; page 1 is stale.
    const out = chatText(await sim.binding('b').run(GLM, guarded('B', 4)))
    expect(last(sim)).toMatchObject({
      outcome: 'stale',
      pages: 3,
      stalePages: 1,
      staleFirstPage: 1,
    })
    expect(out.content.startsWith(CANARY)).toBe(false)
    expect(last(sim).echoed).toBe(null)
  })

  it('should reject a prompt over the real limit as fixed mode does', async () => {
    const over = userMessage('x '.repeat(5000))
    const n = await engine().countTokens(over)
    const sim = engine()
    const error = await rejection(sim.binding('b').run(GLM, over))
    expect(error.message).toBe(
      `AiError: 5021: Input length (${n} tokens) exceeds the maximum allowed length (4090 tokens)`,
    )
    expect(last(sim).outcome).toBe('rejected')
    expect(sim.stats().pool.usedPages).toBe(0)
  })

  it('should keep the first and last pages written at every stretch size', async () => {
    for (const staleFraction of [0.05, 0.25, 0.5]) {
      const sim = engine({ staleFraction, seed: 7 })
      for (const lines of [8, 20, 45, 90, 125]) {
        await fillPool(sim)
        const out = chatText(await sim.binding('b').run(GLM, guarded('B', lines)))
        const r = last(sim)
        // The pages holding the last 64 tokens start here; the stretch ends before it.
        const tail = Math.floor((r.promptTokens - 64) / 64)
        expect(out.content.startsWith(`${CANARY} `)).toBe(true)
        expect(out.reasoning).toContain('It opens with “SECRET-B-7Q2X9 ledger row 0:')
        expect(out.usage.prompt_tokens).toBe(r.promptTokens)
        expect(r.outcome).toBe('stale')
        expect(r.stalePages).toBe(
          Math.min(tail - 1, Math.max(1, Math.round(r.pages * staleFraction))),
        )
        expect(r.staleFirstPage).toBeGreaterThanOrEqual(1)
        expect(r.staleFirstPage! + r.stalePages).toBeLessThanOrEqual(tail)
        expect(r.staleSources.reduce((k, s) => k + s.pages, 0)).toBe(r.stalePages)
      }
    }
  })

  it('should place the stretch by seed, reproducibly', async () => {
    const firsts = async (seed: number) => {
      const sim = engine({ seed })
      const out: (number | null)[] = []
      for (let i = 0; i < 6; i++) {
        await sim.binding('b').run(GLM, guarded('B', 90))
        out.push(last(sim).staleFirstPage)
      }
      return out
    }
    const one = await firsts(3)
    expect(await firsts(3)).toEqual(one)
    expect(new Set(one).size).toBeGreaterThan(1)
  })

  it('should keep wider edges with a larger staleEdgeTokens', async () => {
    const sim = engine({ staleFraction: 0.9, staleEdgeTokens: 128 })
    await fillPool(sim)
    await sim.binding('b').run(GLM, guarded('B', 90))
    const r = last(sim)
    expect(r.staleFirstPage).toBe(2)
    expect(r.stalePages).toBe(Math.floor((r.promptTokens - 128) / 64) - 2)
  })

  it('should never cache pages it did not write', async () => {
    const sim = engine({ staleFraction: 0.5 })
    await fillPool(sim)
    const inputs = guarded('B', 90)
    const first = chatText(await sim.binding('b').run(GLM, inputs))
    expect(`${first.reasoning}${first.content}`).toContain('SECRET-A-7Q2X9')
    const stale = last(sim)
    // The same account re-sends it; now every page lands.
    sim.configure({ staleRate: 0 })
    const again = chatText(await sim.binding('b').run(GLM, inputs))
    const cached = again.usage.prompt_tokens_details?.cached_tokens ?? -1
    expect(cached).toBeGreaterThan(0)
    expect(cached).toBeLessThanOrEqual(stale.staleFirstPage! * 64)
    expect(`${again.reasoning}${again.content}`).not.toContain('SECRET-A')
    expect(last(sim)).toMatchObject({ outcome: 'served', cachedTokens: cached })
  })

  it('should start the stretch after the cached prefix', async () => {
    const sim = engine({ staleRate: 0 })
    const system = secretLines('S', 60)
    const ask = (q: string) => ({
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: `${secretLines(q, 60)}\n\n${DIRECTIVE}` },
      ],
    })
    await sim.binding('b').run(GLM, ask('Q'))
    sim.configure({ staleRate: 1, staleFraction: 0.5 })
    const out = chatText(await sim.binding('b').run(GLM, ask('R')))
    const r = last(sim)
    expect(r.cachedTokens).toBeGreaterThan(0)
    expect(r.staleFirstPage).toBeGreaterThanOrEqual(r.cachedTokens / 64)
    expect(out.content.startsWith(`${CANARY} `)).toBe(true)
  })
})

describe('session affinity', () => {
  it('should record options.extraHeaders x-session-affinity per request (binding)', async () => {
    const sim = engine({ staleRate: 0 })
    const ai = sim.binding('gateway')
    await ai.run(GLM, userMessage('one'), { extraHeaders: { 'x-session-affinity': 'tenant-1' } })
    await ai.run(GLM, userMessage('two'), { extraHeaders: { 'X-Session-Affinity': 'tenant-2' } })
    await ai.run(GLM, userMessage('three'))
    await ai.run(GLM, userMessage('four'), { extraHeaders: { 'x-session-affinity': 7 } })
    await ai.run(GLM, userMessage('five'), { gateway: { id: 'g' } })
    expect(sim.stats().recent.map((r) => r.affinity)).toEqual([
      'tenant-1',
      'tenant-2',
      null,
      null,
      null,
    ])
  })

  it('should name the writer’s affinity among the sources of stale pages', async () => {
    const sim = engine({ staleFraction: 0.5 })
    const text = secretLines('A', await linesWithin(sim, 'A', 4_000))
    sim.configure({ staleRate: 0 })
    await sim
      .binding('gateway')
      .run(GLM, userMessage(text), { extraHeaders: { 'x-session-affinity': 'tenant-a' } })
    sim.configure({ staleRate: 1 })
    await sim
      .binding('gateway')
      .run(GLM, guarded('B', 90), { extraHeaders: { 'x-session-affinity': 'tenant-b' } })
    const r = last(sim)
    expect(r.affinity).toBe('tenant-b')
    expect(r.staleSources).toEqual([
      { ordinal: 0, account: 'gateway', affinity: 'tenant-a', pages: r.stalePages },
    ])
  })

  it('should record it over RPC', async () => {
    const ai = simRpc()
    await ai.reset({
      poolTokens: 4096,
      prefillTokensPerSecond: Infinity,
      decodeTokensPerSecond: Infinity,
    })
    await ai.run(GLM, userMessage('hi'), { extraHeaders: { 'x-session-affinity': 'rpc-1' } })
    await ai.run(GLM, userMessage('hi'))
    expect((await ai.stats()).recent.map((r) => r.affinity)).toEqual(['rpc-1', null])
  })

  it('should record the HTTP header', async () => {
    const sim = quickEngine()
    const handle = simFetchHandler(sim)
    const send = (headers: Record<string, string>) =>
      handle(
        new Request('http://sim/v1/chat/completions', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ model: GLM, messages: [{ role: 'user', content: 'hi' }] }),
        }),
      )
    expect((await send({ 'x-session-affinity': 'http-1' })).status).toBe(200)
    expect((await send({})).status).toBe(200)
    expect(sim.stats().recent.map((r) => r.affinity)).toEqual(['http-1', null])
  })
})

describe('quoteChars', () => {
  it('should clip every quote to quoteChars, and change nothing at its default', async () => {
    const inputs = guarded('B', 40)
    const run = async (config: Partial<SimConfig>) =>
      chatText(
        await quickEngine({ mode: 'fixed', ...config })
          .binding('b')
          .run(GLM, inputs),
      )
    expect(await run({ quoteChars: 90 })).toEqual(await run({}))
    const short = await run({ quoteChars: 24 })
    const spans = quotes(`${short.reasoning}${short.content}`)
    expect(spans.length).toBeGreaterThanOrEqual(6)
    for (const span of spans) expect(span.length).toBeLessThanOrEqual(24)
    for (const span of spans) expect(secretLines('B', 40)).toContain(span)
  })
})
