import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import {
  type CacheIsolation,
  createGuard,
  GuardError,
  guardAi,
  MemoryQuarantineStore,
} from '../../src'
import { openAiHttpUpstream } from '../../src/core/adapters'
import type { AiRunner } from '../../src/core/call/upstream'
import { cacheSalt, importCanaryKey, prefixMarker, tenantTag } from '../../src/core/canary'
import { fallbackProfile, resolveOptions } from '../../src/core/vocabulary/options'
import { chat, directiveCanary, document, sseText } from '../support/prompts'
import { captureWarnings, recordVerdicts } from '../support/verdicts'

/**
 * Per-tenant prefix-cache isolation (`cacheIsolation: 'salt'`): one gateway credential in front of
 * many tenants, a simulated vLLM-like engine that honours `cache_salt`. The engine and the guard share
 * a virtual clock and decode is instant, so a client's time to first token is exactly the simulated
 * prefill of the tokens the engine did not have cached: a PROMPTPEEK-style probe (NDSS 2025) reads
 * the prefix cache through it.
 */
const MODEL = 'vllm/glm-5.3'
const SECRET = 'cache-isolation-test-secret-0123456789abcdef'
const SIM = {
  mode: 'fixed' as const,
  poolTokens: 65_536,
  contextWindow: 131_072,
  prefillTokensPerSecond: 50_000,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  jitter: 0,
  seed: 16,
}
const PROFILE = {
  contextWindow: 131_072,
  kvPoolTokens: 65_536,
  maxPrefillTokensPerSecond: 200_000,
  tokenizerDrift: 0.1,
  defaultOutputReserve: 256,
}
/** A public document both tenants know; A's secret is the PIN in front of it. */
const SHARED = document('SHARED-MANUAL', 12_000)
const prompt = (pin: string, question: string) =>
  `Customer account PIN ${pin}.\n${SHARED}\n${question}`

/** The virtual ms the engine takes to prefill `tokens` uncached tokens. */
const fullPrefillMs = (tokens: number) => (tokens / SIM.prefillTokensPerSecond) * 1000

captureWarnings(/guardAi was called with more than \d+ different option sets/)

type Over = 'binding' | 'http'

/** The engine behind one upstream credential, reached over the binding or the OpenAI HTTP adapter. */
function setup(isolation: CacheIsolation | undefined, over: Over, model = MODEL) {
  const clock = new VirtualClock()
  const engine = new SimEngine(SIM, { clock })
  const received: Record<string, unknown>[] = []
  const upstream: AiRunner =
    over === 'binding' ? recording(engine.binding('gateway'), received) : overHttp(engine, received)
  const profile = isolation === undefined ? PROFILE : { ...PROFILE, cacheIsolation: isolation }
  const runners = new Map<string, AiRunner>()
  const runner = (tenant: string): AiRunner => {
    let ai = runners.get(tenant)
    if (!ai) {
      ai = guardAi(upstream, {
        secret: SECRET,
        tenant,
        models: { [model]: profile },
        hooks: { now: () => clock.now() },
      })
      runners.set(tenant, ai)
    }
    return ai
  }
  /** Streams one request as `tenant`: the client's first-token time, the text, the engine's record. */
  const send = async (
    tenant: string,
    inputs: Record<string, unknown>,
    options?: Record<string, unknown>,
  ) => {
    const start = clock.now()
    const out = await runner(tenant).run(model, { ...inputs, stream: true }, options)
    if (!(out instanceof ReadableStream)) throw new Error('expected a stream')
    const reader = (out as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let next = await reader.read()
    const ttftMs = clock.now() - start
    let raw = ''
    for (; !next.done; next = await reader.read()) raw += decoder.decode(next.value)
    const { reasoning, content } = sseText(raw)
    const text = `${reasoning}${content}`
    const record = engine.stats().recent.at(-1)!
    return { ttftMs, text, record, sent: received.at(-1)! }
  }
  return { send, engine, received, runner }
}

/** The binding, noting every `inputs` it receives. */
function recording(binding: AiRunner, received: Record<string, unknown>[]): AiRunner {
  return {
    run: (model, inputs, options) => {
      received.push(inputs)
      return binding.run(model, inputs, options)
    },
  }
}

/** The OpenAI-compatible adapter over the simulator's HTTP surface, noting every body it POSTs. */
function overHttp(engine: SimEngine, received: Record<string, unknown>[]): AiRunner {
  const handle = simFetchHandler(engine)
  return openAiHttpUpstream({
    baseUrl: 'http://vllm.test/v1',
    apiKey: 'gateway',
    fetch: async (url, init) => {
      const request = new Request(url, init)
      received.push((await request.clone().json()) as Record<string, unknown>)
      return handle(request)
    },
  })
}

const saltOf = async (tenant: string) => cacheSalt(await importCanaryKey(SECRET), tenant)

/**
 * The PROMPTPEEK probe against an isolated cache, after A sent its prompt: B sends A's exact long
 * prefix (the right guess of A's PIN) and a wrong guess. Isolated, both are prefilled in full — no
 * cached token, each first token exactly one uncached prefill after the call, the two within 0.5 ms
 * (the prompts differ only by the canary's 13 to 24 tokens) — while A still hits its own pages:
 * isolation splits the cache per tenant, it does not switch it off.
 */
async function probeLearnsNothing(send: ReturnType<typeof setup>['send']) {
  const right = await send('tenant-b', chat(prompt('4821', 'What is the PIN?')))
  const wrong = await send('tenant-b', chat(prompt('7395', 'What is the PIN?')))
  expect(right.record.cachedTokens).toBe(0)
  expect(wrong.record.cachedTokens).toBe(0)
  for (const guess of [right, wrong]) {
    expect(guess.ttftMs).toBeCloseTo(fullPrefillMs(guess.record.promptTokens), 6)
  }
  expect(right.ttftMs).toBeGreaterThan(200)
  expect(Math.abs(right.ttftMs - wrong.ttftMs)).toBeLessThan(0.5)
  const again = await send('tenant-a', chat(prompt('4821', 'And my balance?')))
  expect(again.record.cachedTokens).toBeGreaterThan(10_000)
  expect(again.ttftMs).toBeLessThan(right.ttftMs / 4)
  return { right, wrong }
}

describe('cacheIsolation: the profile option', () => {
  it('should default to salt for self-hosted names and to prefix for Workers AI catalogue names', () => {
    const options = resolveOptions({
      secret: SECRET,
      models: {
        [MODEL]: PROFILE,
        '@cf/meta/llama-3.3-70b-instruct-fp8-fast': PROFILE,
        'zai-org/GLM-5.3': { ...PROFILE, cacheIsolation: 'off' },
        '@cf/zai-org/glm-5.3': { kvPoolTokens: 600_000 },
      },
      ceiling: { unknownModels: 'default-profile', defaultProfile: PROFILE },
    })
    const isolation = (model: string) => options.profiles.get(model)?.cacheIsolation
    expect(isolation(MODEL)).toBe('salt')
    expect(isolation('@cf/meta/llama-3.3-70b-instruct-fp8-fast')).toBe('prefix')
    expect(isolation('zai-org/GLM-5.3')).toBe('off')
    // The built-in Workers AI profile keeps prefix when other figures are overridden.
    expect(isolation('@cf/zai-org/glm-5.3')).toBe('prefix')
    expect(options.fallbackProfiles?.salt.cacheIsolation).toBe('salt')
    expect(options.fallbackProfiles?.prefix.cacheIsolation).toBe('prefix')
  })

  it('should pick the fallback profile by the name: prefix for an unknown @cf/ model, else salt', () => {
    const options = resolveOptions({
      secret: SECRET,
      ceiling: { unknownModels: 'default-profile', defaultProfile: PROFILE },
    })
    expect(
      fallbackProfile(options, '@cf/meta/llama-4-scout-17b-16e-instruct')?.cacheIsolation,
    ).toBe('prefix')
    expect(fallbackProfile(options, '@hf/mistral/mistral-7b-instruct-v0.2')?.cacheIsolation).toBe(
      'prefix',
    )
    expect(fallbackProfile(options, 'vllm/unknown-model')?.cacheIsolation).toBe('salt')
    expect(fallbackProfile(resolveOptions({ secret: SECRET }), '@cf/x/y')).toBeUndefined()
  })

  it('should send an unknown @cf/ model no cache_salt, and start its prompt with the marker', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine(SIM, { clock })
    const received: Record<string, unknown>[] = []
    const ai = createGuard({
      secret: SECRET,
      ceiling: { unknownModels: 'default-profile', defaultProfile: PROFILE },
      hooks: { now: () => clock.now() },
    }).wrap(recording(engine.binding('gateway'), received), { tenant: 'tenant-a' })
    const model = '@cf/meta/llama-4-scout-17b-16e-instruct'
    const out = (await ai.run(model, chat('Say hello.'))) as { response?: string }
    const sent = received.at(-1)!
    expect(sent).not.toHaveProperty('cache_salt')
    const marker = await prefixMarker(await importCanaryKey(SECRET), 'tenant-a')
    const first = (sent.messages as { content: string }[])[0]!.content
    expect(first.startsWith(`${marker} `)).toBe(true)
    expect(JSON.stringify(out)).not.toMatch(/cnry_/i)
  })

  it('should refuse an unknown value, naming the option', () => {
    expect(() =>
      resolveOptions({
        secret: SECRET,
        models: { [MODEL]: { ...PROFILE, cacheIsolation: 'tenant' as CacheIsolation } },
      }),
    ).toThrow(`option "models["${MODEL}"].cacheIsolation" must be "salt", "prefix" or "off"`)
  })

  it('should derive a stable, per-tenant, per-key salt that does not show the tenant', async () => {
    const key = await importCanaryKey(SECRET)
    const other = await importCanaryKey(`${SECRET}-rotated`)
    const a = await cacheSalt(key, 'tenant-a')
    expect(a).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(await cacheSalt(key, 'tenant-a')).toBe(a)
    expect(await cacheSalt(key, 'tenant-b')).not.toBe(a)
    expect(await cacheSalt(other, 'tenant-a')).not.toBe(a)
    expect(a).not.toContain('tenant')
  })
})

describe('cacheIsolation: tenants behind one upstream credential', () => {
  for (const over of ['binding', 'http'] as const) {
    it(`should give B no cached token of A's pages, and a PROMPTPEEK probe nothing (${over})`, async () => {
      const { send } = setup(undefined, over)
      const a = await send('tenant-a', chat(prompt('4821', 'Summarise my account.')))
      expect(a.text).toContain('SHARED-MANUAL')
      expect(a.record.cacheSalt).toBe(await saltOf('tenant-a'))
      expect(a.sent.cache_salt).toBe(await saltOf('tenant-a'))
      // B sends A's exact long prefix (the right guess), then a wrong guess of the PIN.
      const { right } = await probeLearnsNothing(send)
      expect(right.record.cacheSalt).toBe(await saltOf('tenant-b'))
    }, 60_000)

    it(`should let the probe read A's prefix from TTFT when isolation is off (${over})`, async () => {
      const { send } = setup('off', over)
      await send('tenant-a', chat(prompt('4821', 'Summarise my account.')))
      const right = await send('tenant-b', chat(prompt('4821', 'What is the PIN?')))
      const wrong = await send('tenant-b', chat(prompt('7395', 'What is the PIN?')))
      expect(right.sent).not.toHaveProperty('cache_salt')
      expect(right.record.cacheSalt).toBeNull()
      // The right guess is served from A's pages: far faster, and the engine says so.
      expect(right.record.cachedTokens).toBeGreaterThan(10_000)
      expect(wrong.record.cachedTokens).toBe(0)
      expect(wrong.ttftMs).toBeCloseTo(fullPrefillMs(wrong.record.promptTokens), 6)
      expect(right.ttftMs).toBeCloseTo(
        fullPrefillMs(right.record.promptTokens - right.record.cachedTokens),
        6,
      )
      expect(wrong.ttftMs - right.ttftMs).toBeGreaterThan(200)
    }, 60_000)
  }
})

describe('cacheIsolation: a client-supplied cache_salt', () => {
  for (const over of ['binding', 'http'] as const) {
    it(`should never reach the engine: A's own salt guessed, or '' (${over})`, async () => {
      const { send } = setup('salt', over)
      const saltA = await saltOf('tenant-a')
      const saltB = await saltOf('tenant-b')
      await send('tenant-a', chat(prompt('4821', 'Summarise my account.')))
      const cached: number[] = []
      for (const forged of [saltA, '', 'x']) {
        const b = await send(
          'tenant-b',
          chat(prompt('4821', 'What is the PIN?'), { cache_salt: forged }),
        )
        expect(b.sent.cache_salt).toBe(saltB)
        expect(b.record.cacheSalt).toBe(saltB)
        cached.push(b.record.cachedTokens)
      }
      // A's salt bought B nothing: its first try was prefilled in full; later ones hit B's own pages.
      expect(cached[0]).toBe(0)
      expect(cached[1]).toBeGreaterThan(10_000)
    }, 60_000)

    it(`should drop it with isolation off too: the engine gets no salt at all (${over})`, async () => {
      const { send } = setup('off', over)
      const b = await send('tenant-b', chat('hello', { cache_salt: await saltOf('tenant-a') }))
      expect(b.sent).not.toHaveProperty('cache_salt')
      expect(b.record.cacheSalt).toBeNull()
    }, 60_000)
  }
})

/**
 * `cacheIsolation: 'prefix'`, the Workers AI default: the binding takes no salt, so the guard starts
 * every prompt with the tenant's marker (a canary minted for the tenant) and routes by a per-tenant
 * `x-session-affinity`.
 */
describe('cacheIsolation: prefix, for Workers AI (no salt field)', () => {
  const WORKERS_AI = '@cf/zai-org/glm-5.3'
  const markerOf = async (tenant: string) => prefixMarker(await importCanaryKey(SECRET), tenant)
  const firstText = (sent: Record<string, unknown>) =>
    (sent.messages as { content: string }[])[0]!.content

  it("should give B no cached token of A's pages, and a PROMPTPEEK probe nothing", async () => {
    const { send } = setup(undefined, 'binding', WORKERS_AI)
    const a = await send('tenant-a', chat(prompt('4821', 'Summarise my account.')))
    expect(firstText(a.sent).startsWith(`${await markerOf('tenant-a')} Customer`)).toBe(true)
    expect(a.sent).not.toHaveProperty('cache_salt')
    expect(a.record.affinity).toBe(`wag-${await saltOf('tenant-a')}`)
    // The simulated model quotes the prompt's first line, marker included: the marker (and the space
    // after it) never reaches the client, the rest of the quote does.
    expect(a.text).toContain('SHARED-MANUAL')
    expect(a.text).toContain('“Customer account PIN 4821.”')
    expect(a.text).not.toMatch(/cnry_/i)
    const { right } = await probeLearnsNothing(send)
    expect(right.record.affinity).toBe(`wag-${await saltOf('tenant-b')}`)
  }, 60_000)

  it("should route by the tenant's affinity whatever affinity header the client sets", async () => {
    const { send } = setup(undefined, 'binding', WORKERS_AI)
    const forged = { extraHeaders: { 'X-Session-Affinity': `wag-${await saltOf('tenant-a')}` } }
    const b = await send('tenant-b', chat('hello'), forged)
    expect(b.record.affinity).toBe(`wag-${await saltOf('tenant-b')}`)
  }, 60_000)

  it("should withhold an answer that carries another tenant's marker, naming that tenant", async () => {
    const markerA = await markerOf('tenant-a')
    // An engine that serves B an answer opening with A's first page: A's marker, then A's text.
    const leaking: AiRunner = {
      run: async (_model, inputs) => {
        const own = directiveCanary(inputs)
        return {
          response: `${own}\nFrom the context: “${markerA}” and “Customer account PIN 4821.”`,
        }
      },
    }
    const quarantine = new MemoryQuarantineStore()
    const ai = guardAi(leaking, {
      secret: SECRET,
      tenant: 'tenant-b',
      quarantine: { store: quarantine },
    })
    const error = await ai.run(WORKERS_AI, chat('What is the PIN?')).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(GuardError)
    const [summary] = await quarantine.list()
    const record = await quarantine.get(summary!.id)
    expect(record?.reasons).toContain('foreign_canary')
    expect(record?.canaries[0]?.tenantTag).toBe(
      await tenantTag(await importCanaryKey(SECRET), 'tenant-a'),
    )
    expect(JSON.stringify(record?.withheld)).not.toContain(markerA)
  }, 60_000)

  it('should send the prompt unmarked when the profile turns isolation off', async () => {
    const { send } = setup('off', 'binding', WORKERS_AI)
    const b = await send('tenant-b', chat('hello'))
    expect(firstText(b.sent)).toMatch(/^hello\n\nBegin your reply/)
    expect(b.record.affinity).toBeNull()
  }, 60_000)
})

/**
 * Under isolation, no other tenant's prompt can be cached for this one: a cache report larger than the
 * tenant's own verified history is unexplained. It is not proof — here the history is real, recorded
 * by another isolate — so alone it is noted, and with a missing echo it quarantines at once.
 */
describe('cacheIsolation: a cache report the tenant’s own history does not explain', () => {
  const run = async (echoIgnoreRate: number) => {
    const clock = new VirtualClock()
    const engine = new SimEngine(SIM, { clock })
    const verdicts = recordVerdicts()
    const options = {
      secret: SECRET,
      models: { [MODEL]: { ...PROFILE, cacheIsolation: 'salt' as const } },
      timing: { minEvidenceMs: 20 },
      canary: { echoRetries: 1 },
      hooks: { now: () => clock.now(), onVerdict: verdicts.onVerdict },
    }
    // Two isolates of one deployment: same key, so the same salt, but separate records.
    const first = createGuard(options).wrap(engine.binding('gateway'), { tenant: 'tenant-a' })
    const second = createGuard(options).wrap(engine.binding('gateway'), { tenant: 'tenant-a' })
    const text = async (out: unknown) => sseText(await new Response(out as ReadableStream).text())
    const warm = await first.run(MODEL, chat(prompt('4821', 'Summarise.'), { stream: true }))
    await text(warm)
    verdicts.clear()
    engine.configure({ echoIgnoreRate })
    const outcome = await second
      .run(MODEL, chat(prompt('4821', 'And my balance?'), { stream: true }))
      .then(text, (error: unknown) => error)
    return { outcome, verdicts: verdicts.events, record: engine.stats().recent.at(-1)! }
  }

  it('should release an echoed answer and log the reason', async () => {
    const { outcome, verdicts, record } = await run(0)
    expect(record.cachedTokens).toBeGreaterThan(10_000)
    expect((outcome as { content: string }).content).toContain('SHARED-MANUAL')
    expect(verdicts.map((v) => [v.action, v.reasons])).toEqual([['release', ['cache_unexplained']]])
  }, 60_000)

  it('should quarantine at once, without a retry, when the echo is missing too', async () => {
    const { outcome, verdicts } = await run(1)
    expect(outcome).toBeInstanceOf(GuardError)
    expect(verdicts.map((v) => [v.action, v.reasons])).toEqual([
      ['quarantine', ['cache_unexplained', 'echo_missing']],
    ])
  }, 60_000)
})
