import { env } from 'cloudflare:test'
import { describe, expect, it, vi } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { createGuard, GuardError, type GuardOptions, MemoryQuarantineStore } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import {
  type FingerprintBatch,
  type FingerprintStore,
  PUBLIC_BACKGROUND,
} from '../../src/plugins/foreign-content'
import { DurableFingerprints } from '../../src/worker/durable-fingerprints'
import type { FingerprintLog } from '../../src/worker/fingerprint-log'
import { drainText } from '../support/open-stream'
import { chat, directiveCanary } from '../support/prompts'
import {
  leakedWords,
  privateText,
  STALE_MIDDLE_PROFILE,
  STALE_MIDDLE_SIM,
} from '../support/stale-middle'
import { recordVerdicts } from '../support/verdicts'

/** Foreign-content fingerprints against the simulator's stale-middle leak (test/support/stale-middle.ts). */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'foreign-content-test-secret-0123456789abcdef'
const SIM = STALE_MIDDLE_SIM
const PROFILE = STALE_MIDDLE_PROFILE

function setup(options: Partial<GuardOptions> = {}) {
  const clock = new VirtualClock()
  const engine = new SimEngine(SIM, { clock })
  const quarantine = new MemoryQuarantineStore()
  const verdicts = recordVerdicts()
  const guard = createGuard({
    secret: SECRET,
    models: { [MODEL]: PROFILE },
    quarantine: { store: quarantine },
    hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
    ...options,
  })
  /** One request of `tenant`; the text the client received (or the error), whatever the outcome. */
  const send = async (tenant: string, text: string, stream: boolean) => {
    const ai = guard.wrap(engine.binding('gateway'), { tenant })
    try {
      const out = await ai.run(MODEL, chat(text, { stream, max_tokens: 1_024 }))
      if (!stream) {
        const message = (out as { choices: { message: Record<string, string> }[] }).choices[0]!
          .message
        return { delivered: `${message.reasoning_content ?? ''}${message.content ?? ''}` }
      }
      const drained = await drainText((out as ReadableStream<Uint8Array>).getReader())
      return { delivered: drained.text, error: drained.error }
    } catch (error) {
      return { delivered: '', error }
    }
  }
  const record = async () => {
    const [summary] = await quarantine.list()
    return summary ? quarantine.get(summary.id) : undefined
  }
  return { engine, send, record, verdicts, guard }
}

describe('foreign content: another tenant’s prompt text in an answer', () => {
  for (const stream of [false, true]) {
    it(`should withhold B's answer quoting A's guarded prompt, naming A (${stream ? 'stream' : 'whole'})`, async () => {
      const { engine, send, record } = setup()
      const a = privateText(1, 24)
      const first = await send('tenant-a', a, stream)
      expect(first.error).toBeUndefined()
      // B's middle pages are A's freed pages, read before B's prompt lands in them.
      engine.configure({ staleRate: 1 })
      const b = await send('tenant-b', privateText(2, 24), stream)
      const sim = engine.stats().recent.findLast((r) => r.staleSources.length > 0)!
      expect(sim.staleSources.map((s) => s.account)).toContain('gateway')
      expect(b.error).toBeInstanceOf(GuardError)
      expect((b.error as GuardError).code).toBe('response_quarantined')
      // Not a word run of A's text reached B (a stream may have released B's own opening).
      expect(leakedWords(b.delivered, a)).toBeLessThan(6)
      const incident = await record()
      expect(incident?.reasons).toEqual(['foreign_content'])
      expect(incident?.sourceTenants).toEqual(['tenant-a'])
      expect(incident?.figures.contentRun).toBeGreaterThanOrEqual(3)
      expect(incident?.tenant).toBe('tenant-b')
    }, 60_000)
  }

  it('should release an answer that quotes only its own prompt', async () => {
    const { send, verdicts } = setup()
    await send('tenant-a', privateText(1, 24), true)
    const own = privateText(2, 24)
    const b = await send('tenant-b', own, true)
    expect(b.error).toBeUndefined()
    expect(leakedWords(b.delivered, own)).toBeGreaterThan(20)
    expect(verdicts.events.map((v) => v.action)).toEqual(['release', 'release'])
  }, 60_000)

  it('should release an answer restating its own earlier tool-call arguments, even if another tenant sent them', async () => {
    const guard = createGuard({ secret: SECRET, models: { [MODEL]: PROFILE } })
    const engine = new SimEngine(SIM, { clock: new VirtualClock() })
    const a = privateText(1, 6)
    await guard.wrap(engine.binding('gateway'), { tenant: 'tenant-a' }).run(MODEL, chat(a))
    // B's conversation: its model called a tool with A's words (say, from a shared document), and
    // now restates those arguments. B's own conversation holds them: no other tenant's pages.
    const args = JSON.stringify({ note: a.slice(0, 700) })
    const restating: AiRunner = {
      run: async (_model, inputs) => ({
        response: `${directiveCanary(inputs)}\nYou asked me to save: ${a.slice(0, 700)}`,
      }),
    }
    const inputs = {
      messages: [
        { role: 'user', content: 'Save the note I gave you, then tell me what it says.' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'save', arguments: args } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'saved' },
        { role: 'user', content: 'What did you save?' },
      ],
    }
    const out = await guard.wrap(restating, { tenant: 'tenant-b' }).run(MODEL, inputs)
    expect((out as { response: string }).response).toContain(a.slice(0, 700))
  }, 60_000)

  it('should not count text two tenants sent (the same licence, the same public document)', async () => {
    const licence = privateText(9, 3)
    // A model that recites the licence from memory to B, whose prompt does not hold it.
    const reciting = async (sent: string[], publicTexts: string[] = []) => {
      const clock = new VirtualClock()
      const engine = new SimEngine(SIM, { clock })
      const quarantine = new MemoryQuarantineStore()
      const guard = createGuard({
        secret: SECRET,
        models: { [MODEL]: PROFILE },
        quarantine: { store: quarantine },
        content: { publicTexts },
      })
      for (const [i, tenant] of sent.entries()) {
        const ai = guard.wrap(engine.binding('gateway'), { tenant })
        await ai.run(MODEL, chat(`${licence}\n${privateText(20 + i, 4)}`))
      }
      const recite: AiRunner = {
        run: async (_model, inputs) => {
          const own = directiveCanary(inputs)
          return { response: `${own}\nThe licence reads: ${licence.slice(0, 600)}` }
        },
      }
      const b = guard.wrap(recite, { tenant: 'tenant-b' })
      return b.run(MODEL, chat('Which licence covers this? Quote it.')).then(
        (out) => (out as { response: string }).response,
        (error: unknown) => error,
      )
    }
    // Sent by two tenants: boilerplate, released.
    expect(await reciting(['tenant-a', 'tenant-c'])).toContain('The licence reads:')
    // Sent by one other tenant only: indistinguishable from a leak of its prompt, withheld…
    expect(await reciting(['tenant-a'])).toBeInstanceOf(GuardError)
    // …unless the operator declared it public.
    expect(await reciting(['tenant-a'], [licence])).toContain('The licence reads:')
  }, 60_000)

  it('should not count a licence one tenant pasted (built in as public), but still its private text', async () => {
    const mit = PUBLIC_BACKGROUND[0]!
    const guard = createGuard({ secret: SECRET, models: { [MODEL]: PROFILE } })
    const engine = new SimEngine(SIM, { clock: new VirtualClock() })
    const secret = privateText(31, 2)
    const pasted = `MIT License\n\nCopyright (c) 2024 Fjordline Widgets AS\n\n${mit}\n${secret}`
    await guard.wrap(engine.binding('gateway'), { tenant: 'tenant-a' }).run(MODEL, chat(pasted))
    const answering = (text: string): AiRunner => ({
      run: async (_model, inputs) => ({ response: `${directiveCanary(inputs)}\n${text}` }),
    })
    const ask = (text: string) =>
      guard
        .wrap(answering(text), { tenant: 'tenant-b' })
        .run(MODEL, chat('Write me an MIT licence for my project.'))
        .then(
          (out) => (out as { response: string }).response,
          (error: unknown) => error,
        )
    // The model writes the licence from memory: released, though only A sent it in the last hour.
    const recited = `MIT License\n\nCopyright (c) 2026 Your Name\n\n${mit}`
    expect(await ask(recited)).toContain('Permission is hereby granted')
    // A's own words inside the same licence are still A's: withheld.
    expect(await ask(`${recited}\n${secret.slice(0, 400)}`)).toBeInstanceOf(GuardError)
  }, 60_000)

  it('should let no tenant get another’s ordinary answers flagged by stuffing its prompts', async () => {
    const { send, verdicts } = setup()
    // C knows the model's habits: it sends the model's stock phrases, over and over.
    const stock =
      'I am asked to begin my reply with a code on its own line. I will answer from this material. ' +
      'From the context, and at the end. That is what the provided material says. '
    const ordinary = async () => {
      for (const seed of [2, 3, 4]) {
        const b = await send(`tenant-${seed}`, privateText(seed, 6), seed % 2 === 0)
        if (b.error) return verdicts.events.at(-1)
      }
      return undefined
    }
    // A cold isolate: the model has told nobody those words yet. Its stock sentences are each far
    // shorter than the span evidence needs (30 units), with the answer's own words between them: the
    // ordinary answers that use them are released. (Only a verbatim run of 30 units the stuffer
    // predicted is indistinguishable from a leak: test/node/fingerprint-watch.test.ts.)
    await send('tenant-c', stock.repeat(40), false)
    expect(await ordinary()).toBeUndefined()
    // Once the model has said them in a released answer to someone, they are its words: C's stuffing
    // weighs nothing, for every tenant.
    const warm = setup()
    await warm.send('tenant-1', privateText(1, 6), true)
    await warm.send('tenant-c', stock.repeat(40), false)
    const flagged: unknown[] = []
    for (const seed of [2, 3, 4]) {
      const b = await warm.send(`tenant-${seed}`, privateText(seed, 6), seed % 2 === 0)
      if (b.error) flagged.push(warm.verdicts.events.at(-1))
    }
    expect(flagged).toEqual([])
  }, 60_000)

  for (const stream of [false, true]) {
    it(`should withhold B’s answer quoting A’s prompt while A’s call is still out and its print not yet run (${stream ? 'stream' : 'whole'})`, async () => {
      // A prompt is printed a moment after its call leaves. B's leaking answer is checked before then
      // (timers held): the check itself must make A's print first.
      vi.useFakeTimers({ toFake: ['setTimeout'] })
      try {
        const guard = createGuard({ secret: SECRET, models: { [MODEL]: PROFILE } })
        const a = privateText(1, 24)
        let sent!: () => void
        const aSent = new Promise<void>((resolve) => (sent = resolve))
        const holding: AiRunner = {
          run: async () => {
            sent()
            return new Promise(() => {})
          },
        }
        // A's outcome does not matter here (its answer never comes in this test).
        guard
          .wrap(holding, { tenant: 'tenant-a' })
          .run(MODEL, chat(a))
          .catch(() => {})
        await aSent
        const quote = `From the material: ${a.slice(300, 900)}`
        const leaking: AiRunner = {
          run: async (_model, inputs) => {
            const own = directiveCanary(inputs)
            if (!stream) return { response: `${own}\n${quote}` }
            const pieces = [`${own}\n`, ...(quote.match(/.{1,40}/gs) ?? [])]
            return new Response(
              pieces.map((p) => `data: ${JSON.stringify({ response: p })}\n\n`).join('') +
                'data: [DONE]\n\n',
            ).body
          },
        }
        let delivered = ''
        let error: unknown
        try {
          const out = await guard
            .wrap(leaking, { tenant: 'tenant-b' })
            .run(MODEL, chat(privateText(2, 4), { stream }))
          if (out instanceof ReadableStream) delivered = await new Response(out).text()
          else delivered = (out as { response: string }).response
        } catch (caught) {
          error = caught
        }
        expect(error).toBeInstanceOf(GuardError)
        expect((error as GuardError).code).toBe('response_quarantined')
        expect(leakedWords(delivered, a)).toBeLessThan(6)
      } finally {
        vi.useRealTimers()
      }
    }, 60_000)
  }

  it('should not look when the check is off (the operator’s choice), so the leak is released', async () => {
    const { engine, send } = setup({ content: false })
    const a = privateText(1, 24)
    await send('tenant-a', a, false)
    engine.configure({ staleRate: 1 })
    const b = await send('tenant-b', privateText(2, 24), false)
    expect(b.error).toBeUndefined()
    expect(leakedWords(b.delivered, a)).toBeGreaterThan(20)
  }, 60_000)
})

/**
 * Two isolates of one Worker: A's prompt is guarded by one, B's leaking answer judged by the other.
 * They share fingerprints only through the FingerprintLog Durable Object (real, from miniflare).
 */
describe('foreign content across isolates', () => {
  it('should catch in one isolate the leak of a prompt guarded in another', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine(SIM, { clock })
    const quarantine = new MemoryQuarantineStore()
    const model = `${MODEL}-${crypto.randomUUID()}` // a fresh log: one object per model
    const isolate = (store?: DurableFingerprints) =>
      createGuard({
        secret: SECRET,
        models: { [model]: PROFILE },
        quarantine: { store: quarantine },
        content: store ? { store } : {},
        hooks: { now: () => Date.now() },
      })
    const namespace = (env as unknown as { FINGERPRINTS: DurableObjectNamespace<FingerprintLog> })
      .FINGERPRINTS
    const store = new DurableFingerprints(namespace)
    const run = (guard: ReturnType<typeof isolate>, tenant: string, text: string) =>
      guard
        .wrap(engine.binding('gateway'), { tenant, waitUntil: (p) => pending.push(p) })
        .run(model, chat(text, { max_tokens: 1_024 }))
        .then(
          () => undefined,
          (error: unknown) => error,
        )
    const pending: Promise<unknown>[] = []
    const a = privateText(1, 24)
    expect(await run(isolate(store), 'tenant-a', a)).toBeUndefined()
    await Promise.all(pending) // A's fingerprints published
    engine.configure({ staleRate: 1 })
    // Without the shared log, the second isolate has never seen A's prompt: the leak is released.
    expect(await run(isolate(), 'tenant-b', privateText(2, 24))).toBeUndefined()
    engine.configure({ staleRate: 0 })
    await run(isolate(), 'tenant-a', a)
    engine.configure({ staleRate: 1 })
    const error = await run(isolate(store), 'tenant-b', privateText(3, 24))
    expect(error).toBeInstanceOf(GuardError)
    const [summary] = await quarantine.list()
    expect((await quarantine.get(summary!.id))?.sourceTenants).toEqual(['tenant-a'])
  }, 60_000)

  it('should publish the prompt of a call that failed at once (it was sent: its pages may exist)', async () => {
    const model = `${MODEL}-${crypto.randomUUID()}`
    const namespace = (env as unknown as { FINGERPRINTS: DurableObjectNamespace<FingerprintLog> })
      .FINGERPRINTS
    const isolate = () =>
      createGuard({
        secret: SECRET,
        models: { [model]: PROFILE },
        content: { store: new DurableFingerprints(namespace) },
      })
    const pending: Promise<unknown>[] = []
    const waitUntil = (p: Promise<unknown>) => void pending.push(p)
    const a = privateText(1, 24)
    const failing: AiRunner = {
      run: async () => {
        throw new Error('engine unavailable')
      },
    }
    const first = await isolate()
      .wrap(failing, { tenant: 'tenant-a', waitUntil })
      .run(model, chat(a))
      .catch((error: unknown) => error)
    expect((first as GuardError).code).toBe('upstream_error')
    // Everything the request kept alive, including what that started (the publish).
    for (let settled = 0; settled < pending.length; ) {
      const batch = pending.slice(settled)
      settled = pending.length
      await Promise.allSettled(batch)
    }
    const leaking: AiRunner = {
      run: async (_model, inputs) => {
        const own = directiveCanary(inputs)
        return { response: `${own}\nFrom the material: ${a.slice(300, 900)}` }
      },
    }
    const b = await isolate()
      .wrap(leaking, { tenant: 'tenant-b', waitUntil })
      .run(model, chat(privateText(2, 4)))
      .then(
        (out) => (out as { response: string }).response,
        (error: unknown) => error,
      )
    expect(b).toBeInstanceOf(GuardError)
    expect((b as GuardError).code).toBe('response_quarantined')
  }, 60_000)
})

describe('foreign content: a shared store that cannot be read in full', () => {
  /** A shared store whose every read leaves out shards 2 and 5 (`shards`) or fails (`down`). */
  function store(gap: 'none' | 'shards' | 'down'): FingerprintStore {
    const batches: FingerprintBatch[] = []
    return {
      publish: async (batch) => {
        batches.push(batch)
      },
      since: async (model) => {
        if (gap === 'down') throw new Error('fingerprint log unreachable')
        return {
          batches: batches.filter((b) => b.model === model),
          cursor: String(batches.length),
          ...(gap === 'shards' ? { unavailable: [2, 5] } : {}),
        }
      },
    }
  }

  for (const [gap, said] of [
    ['shards', { shardsUnread: [2, 5] }],
    ['down', { down: true }],
    ['none', undefined],
  ] as const) {
    it(`should say what it could not read (${gap}), withhold the leak it can see, release the rest`, async () => {
      const { engine, send, record, verdicts } = setup({ content: { store: store(gap) } })
      const quiet = vi.spyOn(console, 'error').mockImplementation(() => {})
      const a = privateText(1, 24)
      expect((await send('tenant-a', a, false)).error).toBeUndefined()
      const released = verdicts.of('release')
      expect(released).toHaveLength(1)
      expect(released[0]?.fingerprintStore).toEqual(said)
      // This isolate guarded A's prompt itself: a store that cannot be read weakens nothing here.
      engine.configure({ staleRate: 1 })
      const b = await send('tenant-b', privateText(2, 24), false)
      quiet.mockRestore()
      expect((b.error as GuardError).code).toBe('response_quarantined')
      expect(leakedWords(b.delivered, a)).toBe(0)
      const incident = await record()
      expect(incident?.sourceTenants).toEqual(['tenant-a'])
      // B's own verdict (a second opinion's request logs its own line, as tenant guard-recall:…).
      const bVerdict = verdicts.of('quarantine').find((v) => v.tenant === 'tenant-b')
      expect(bVerdict?.fingerprintStore).toEqual(said)
      if (gap === 'shards') expect(incident?.figures.fingerprintShardsUnread).toEqual([2, 5])
      if (gap === 'down') expect(incident?.figures.fingerprintStoreDown).toBe(true)
      if (gap === 'none') expect(incident?.figures).not.toHaveProperty('fingerprintStoreDown')
    }, 60_000)
  }
})
