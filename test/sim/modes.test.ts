import { describe, expect, it } from 'vitest'
import { SIM_MODES } from '../../sim/config'
import {
  chatText,
  quickEngine as engine,
  GLM,
  linesWithin,
  readSse,
  rejection,
  secretLines,
  userMessage,
} from './helpers'

/** A small pool (4,096 tokens = 64 pages; SGLang limit 4,090) and no waits: fast and deterministic. */
const OVER_POOL = userMessage('x '.repeat(5000))
const ECHO_AT_END = (body: string) =>
  userMessage(`${body}\nBegin your reply with the code cnry_END42`)

describe('pd-abort-leak mode', () => {
  it('should answer an over-pool prompt from another tenant’s stale pages, reporting its own length', async () => {
    const sim = engine({ mode: 'pd-abort-leak' })
    await sim.binding('a').run(GLM, userMessage(secretLines('A', 100)))
    const n = await sim.countTokens(OVER_POOL)
    const b = chatText(await sim.binding('b').run(GLM, OVER_POOL))
    expect(b.content).toContain('SECRET-A-7Q2X9')
    expect(b.reasoning).toContain('SECRET-A-7Q2X9')
    expect(b.usage.prompt_tokens).toBe(n)
    expect(sim.stats().recent.at(-1)).toMatchObject({ outcome: 'placeholder', prefilledTokens: 1 })
  })

  it('should not leak into an in-limit prompt', async () => {
    const sim = engine({ mode: 'pd-abort-leak' })
    await sim.binding('a').run(GLM, userMessage(secretLines('A', 100)))
    const b = chatText(await sim.binding('b').run(GLM, userMessage(secretLines('B', 60))))
    expect(b.content).toContain('SECRET-B-7Q2X9')
    expect(`${b.content}${b.reasoning}`).not.toContain('SECRET-A')
  })
})

describe('fixed mode', () => {
  it('should reject an over-pool prompt with SGLang’s message and hold no pages', async () => {
    const sim = engine({ mode: 'fixed' })
    const n = await sim.countTokens(OVER_POOL)
    const error = await rejection(sim.binding('b').run(GLM, OVER_POOL))
    expect(error.message).toBe(
      `AiError: 5021: Input length (${n} tokens) exceeds the maximum allowed length (4090 tokens)`,
    )
    expect(sim.stats().pool.usedPages).toBe(0)
  })

  it('should never show another tenant’s text to in-limit requests (many, some concurrent)', async () => {
    const sim = engine({ mode: 'fixed', queueTimeoutMs: 10_000 })
    const tags = ['A', 'B', 'C', 'D']
    let x = 7
    const next = (): number => {
      x = (x * 1103515245 + 12345) % 2 ** 31
      return x
    }
    for (let round = 0; round < 12; round++) {
      const batch = tags.slice(0, 1 + (round % 3)).map(async (tag, i) => {
        const lines = 5 + (next() % 110)
        const inputs = userMessage(secretLines(tag, lines), { stream: (round + i) % 2 === 0 })
        const out = await sim.binding(tag).run(GLM, inputs)
        const text =
          out instanceof ReadableStream
            ? await readSse(out).then((r) => r.reasoning + r.content)
            : (({ reasoning, content }) => reasoning + content)(chatText(out))
        return { tag, text }
      })
      for (const { tag, text } of await Promise.all(batch)) {
        expect(text).toContain(`SECRET-${tag}-`)
        for (const other of tags) if (other !== tag) expect(text).not.toContain(`SECRET-${other}-`)
      }
    }
    expect(sim.stats().requests.byOutcome.served).toBe(24)
  })
})

describe('truncate mode', () => {
  it('should drop the end of an over-pool prompt, so an echo directive there is not followed', async () => {
    const sim = engine({ mode: 'truncate' })
    const inputs = ECHO_AT_END('y '.repeat(5000))
    const out = chatText(await sim.binding('b').run(GLM, inputs))
    expect(out.content.startsWith('cnry_END42')).toBe(false)
    expect(`${out.content}${out.reasoning}`).not.toContain('cnry_END42')
    expect(out.usage.prompt_tokens).toBe(4090)
  })

  it('should follow the same directive when the prompt fits', async () => {
    const sim = engine({ mode: 'truncate' })
    const out = chatText(await sim.binding('b').run(GLM, ECHO_AT_END('y '.repeat(1000))))
    expect(out.content.startsWith('cnry_END42 ')).toBe(true)
    expect(out.usage.prompt_tokens).toBe(await sim.countTokens(ECHO_AT_END('y '.repeat(1000))))
  })
})

describe('stale-pages mode', () => {
  it('should let an in-limit answer read an earlier request’s text from its unwritten tail pages', async () => {
    const sim = engine({ mode: 'stale-pages' })
    // A fills nearly the whole pool (SGLang limit 4,090), so B's fresh pages are A's old ones.
    await sim
      .binding('a')
      .run(GLM, userMessage(secretLines('A', await linesWithin(sim, 'A', 4_000))))
    const b = chatText(await sim.binding('b').run(GLM, userMessage(secretLines('B', 60))))
    expect(b.content).toContain('SECRET-A-7Q2X9')
    expect(b.content).toContain('SECRET-B-7Q2X9')
    const record = sim.stats().recent.at(-1)!
    expect(record.outcome).toBe('stale')
    expect(record.stalePages).toBe(Math.max(1, Math.round(record.pages * 0.25)))
  })

  it('should not leak when the late write never happens (staleRate 0)', async () => {
    const sim = engine({ mode: 'stale-pages', staleRate: 0 })
    await sim
      .binding('a')
      .run(GLM, userMessage(secretLines('A', await linesWithin(sim, 'A', 4_000))))
    const b = chatText(await sim.binding('b').run(GLM, userMessage(secretLines('B', 60))))
    expect(`${b.content}${b.reasoning}`).not.toContain('SECRET-A')
    expect(sim.stats().recent.at(-1)?.outcome).toBe('served')
  })

  it('should not put pages it never wrote into the prefix cache', async () => {
    const sim = engine({ mode: 'stale-pages' })
    const inputs = userMessage(secretLines('B', 60))
    await sim.binding('b').run(GLM, inputs)
    const first = sim.stats().recent.at(-1)!
    const again = chatText(await sim.binding('b').run(GLM, inputs))
    const cached = again.usage.prompt_tokens_details?.cached_tokens ?? -1
    expect(cached).toBeLessThanOrEqual((first.pages - first.stalePages) * 64)
    expect(cached).toBeGreaterThan(0)
  })
})

describe('advertised window', () => {
  it('should reject a prompt above the window in every mode', async () => {
    for (const mode of SIM_MODES) {
      const sim = engine({ mode, contextWindow: 3000 })
      const error = await rejection(sim.binding('b').run(GLM, OVER_POOL))
      expect(error.message).toMatch(/^AiError: 5021: .*context window limit \(3000\)/)
    }
  })

  it('should state the prompt’s tokens plus max_tokens (or the default) in Workers AI’s words', async () => {
    const sim = engine({ mode: 'pd-abort-leak', contextWindow: 3000, defaultMaxTokens: 256 })
    const n = await sim.countTokens(OVER_POOL)
    const windowError = (estimated: number) =>
      `AiError: 5021: The estimated number of input and maximum output tokens (${estimated}) exceeded this model context window limit (3000).`
    expect((await rejection(sim.binding('b').run(GLM, OVER_POOL))).message).toBe(
      windowError(n + 256),
    )
    const capped = { ...OVER_POOL, max_tokens: 100 }
    expect((await rejection(sim.binding('b').run(GLM, capped))).message).toBe(windowError(n + 100))
    // Under the window by itself, over it with the output it may need.
    const fits = userMessage('z '.repeat(1000))
    const m = await sim.countTokens(fits)
    const tooMuch = { ...fits, max_tokens: 3001 - m }
    expect((await rejection(sim.binding('b').run(GLM, tooMuch))).message).toBe(windowError(3001))
    const justFits = chatText(await sim.binding('b').run(GLM, { ...fits, max_tokens: 3000 - m }))
    expect(justFits.usage.prompt_tokens).toBe(m)
  })

  it('should accept a prompt inside the window and the pool in every mode', async () => {
    for (const mode of SIM_MODES) {
      const sim = engine({ mode, contextWindow: 3000 })
      const out = chatText(await sim.binding('b').run(GLM, userMessage('z '.repeat(1000))))
      expect(out.usage.prompt_tokens).toBeGreaterThan(1000)
    }
  })
})
