import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { guardAi } from '../../src'
import { chat, document } from '../support/prompts'
import { deliveredText } from '../support/surfaces'

/**
 * Bounded memory with ~1M-token prompts in flight through guardAi on Node: the guard counts each
 * prompt exactly, hashes it for the prefix record and holds the answer until its verdict — none of
 * that may keep a prompt alive after its answer, or copy it without bound while in flight.
 *
 * The built-in profile refuses 1M tokens (that is its job), so this guard is given a deployment whose
 * pool admits them (2.1M, as after the incident's fix) and an engine whose pool fits three at once.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'memory-test-canary-secret-0123456789abcdef'
const PROMPTS = 3
const TOKENS = 1_000_000

interface MemoryUsage {
  heapUsed: number
  rss: number
}
const memory = (): MemoryUsage =>
  (globalThis as unknown as { process: { memoryUsage(): MemoryUsage } }).process.memoryUsage()
const MB = 1024 * 1024

/** A full collection, so heap figures measure what is still reachable, not garbage not yet swept. */
async function collector(): Promise<() => void> {
  // A computed specifier keeps the type checker from looking for Node's declarations.
  const load = (name: string): Promise<unknown> => import(/* @vite-ignore */ `node:${name}`)
  const v8 = (await load('v8')) as { setFlagsFromString(flags: string): void }
  const vm = (await load('vm')) as { runInNewContext(code: string): unknown }
  v8.setFlagsFromString('--expose-gc')
  return vm.runInNewContext('gc') as () => void
}

/** Three concurrent 1M-token requests of distinct tenants; returns what each client received. */
async function round(
  engine: SimEngine,
  profile: Record<string, number>,
  label: string,
  onCall: () => void,
): Promise<{ answers: string[]; promptBytes: number }> {
  let prompts = Array.from({ length: PROMPTS }, (_, i) =>
    document(`TENANT-${'ABC'[i]}-${label}`, TOKENS),
  )
  const promptBytes = prompts.reduce((n, p) => n + p.length * 2, 0) // UTF-16 in memory
  const answers = await Promise.all(
    prompts.map(async (prompt, i) => {
      const binding = engine.binding(`tenant-${i}`)
      const upstream = {
        run: (m: string, inputs: Record<string, unknown>) => {
          onCall() // every prompt of the round is in flight by the time the engine is called
          return binding.run(m, inputs)
        },
      }
      const ai = guardAi(upstream, {
        secret: SECRET,
        tenant: `tenant-${i}`,
        models: { [MODEL]: profile },
      })
      const out = await ai.run(MODEL, chat(prompt, { stream: i % 2 === 0, max_tokens: 128 }))
      return out instanceof ReadableStream
        ? deliveredText(await new Response(out as ReadableStream<Uint8Array>).text())
        : JSON.stringify(out)
    }),
  )
  prompts = []
  return { answers, promptBytes }
}

describe('memory with 1M-token prompts in flight', () => {
  it('should answer rounds of three concurrent 1M-token prompts without the heap growing per round', async () => {
    const engine = new SimEngine({
      mode: 'fixed',
      poolTokens: 3_400_000,
      contextWindow: 2_097_152,
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    })
    const profile = {
      contextWindow: 2_097_152,
      kvPoolTokens: 2_097_152,
      // The engine prefills instantly here; timing is another suite's subject.
      maxPrefillTokensPerSecond: 1e12,
      defaultOutputReserve: 1_024,
    }
    const gc = await collector()
    const settled = async () => {
      gc()
      await new Promise((r) => setTimeout(r, 20))
      gc()
      return memory().heapUsed
    }
    const start = await settled()
    let peak = start
    const sample = () => {
      peak = Math.max(peak, memory().heapUsed)
    }
    // Round 1 loads both tokenizers and fills their bounded merge caches; later rounds add nothing.
    const heaps: number[] = []
    let promptBytes = 0
    for (const label of ['R1', 'R2', 'R3']) {
      const r = await round(engine, profile, label, sample)
      promptBytes = r.promptBytes
      r.answers.forEach((answer, i) => {
        expect(answer).toContain(`TENANT-${'ABC'[i]}-${label}`)
        expect(answer).not.toMatch(new RegExp(`TENANT-(?!${'ABC'[i]}-${label})[A-C]-R\\d`))
      })
      const served = engine.stats().recent.filter((x) => x.account.startsWith('tenant-'))
      expect(served.map((x) => x.promptTokens > 900_000)).toEqual(Array(PROMPTS).fill(true))
      // The simulator's request log keeps each echoed token, a slice of the decoded 1M-token prompt,
      // and so the whole prompt text (up to 32 requests): clear it, so only the guard is measured.
      engine.reset()
      heaps.push(await settled())
    }
    const figures = {
      event: 'reliability_memory',
      prompts: PROMPTS,
      tokens: TOKENS,
      promptMB: Math.round(promptBytes / MB),
      heapStartMB: Math.round(start / MB),
      heapPeakMB: Math.round(peak / MB),
      heapAfterRound1MB: Math.round(heaps[0]! / MB),
      heapAfterRound2MB: Math.round(heaps[1]! / MB),
      heapAfterRound3MB: Math.round(heaps[2]! / MB),
    }
    console.log(JSON.stringify(figures))
    // In flight: a bounded multiple of the prompts themselves (texts, tokens, digests, the engine's
    // copy, the tokenizers). After a warm round: less than one prompt's worth (10 MB) more, so no
    // prompt, token array or answer is kept alive by the guard.
    expect(peak - start).toBeLessThan(20 * promptBytes)
    expect(heaps[2]! - heaps[0]!).toBeLessThan(promptBytes / PROMPTS)
  }, 120_000)
})
