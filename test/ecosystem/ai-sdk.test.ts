import { APICallError, generateText, streamText } from 'ai'
import { describe, expect, it } from 'vitest'
import { createWorkersAI } from 'workers-ai-provider'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { GuardError, guardAi, MemoryQuarantineStore } from '../../src'
import { asAiBinding } from '../../src/core/adapters'
import type { AiRunner } from '../../src/core/call/upstream'
import { hasCanary, LEAK } from '../support/leak-scenario'
import { document } from '../support/prompts'

/**
 * B's document, nominal size: about 12,100 tokens for the simulated model (Qwen3), over the real
 * limit (8,186) and under the wrong ceiling (16,128).
 */
const B_OVER_POOL = 9_300

/** The leaking engine behind a guard that believes the pool is as large as the window. */
function setup() {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...LEAK.sim, mode: 'pd-abort-leak' }, { clock })
  const quarantine = new MemoryQuarantineStore()
  const calls: { options: Record<string, unknown> | undefined }[] = []
  const upstream: AiRunner = {
    run: (model, inputs, options) => {
      calls.push({ options })
      return engine.binding('account').run(model, inputs, options)
    },
  }
  const provider = (tenant: string) =>
    createWorkersAI({
      binding: asAiBinding(
        guardAi(upstream, {
          secret: LEAK.secret,
          tenant,
          models: { [LEAK.model]: LEAK.wrongProfile },
          quarantine: { store: quarantine },
          timing: { minEvidenceMs: 5 },
          hooks: { now: () => clock.now() },
        }),
      ),
    })(LEAK.model)
  return { provider, quarantine, calls }
}

/** The guard error behind what the AI SDK threw (the provider wraps binding errors as APICallError). */
function guardCause(error: unknown): GuardError {
  expect(APICallError.isInstance(error)).toBe(true)
  const cause = (error as APICallError).cause
  expect(cause).toBeInstanceOf(GuardError)
  return cause as GuardError
}

describe('Vercel AI SDK with the guarded binding', () => {
  it('should generateText from the tenant own document, reasoning included, canary stripped', async () => {
    const { provider, calls } = setup()
    const result = await generateText({
      model: provider('tenant-a'),
      prompt: document('TENANT-A', 3_000),
    })
    expect(result.text).toContain('TENANT-A ledger entry')
    expect(result.reasoningText).toContain('TENANT-A')
    expect(hasCanary(result.text + result.reasoningText)).toBe(false)
    expect(result.usage.inputTokens).toBeGreaterThan(2_000)
    // The provider only ever calls run(): nothing reaches the engine around the guard.
    expect(calls).toHaveLength(1)
  }, 30_000)

  it('should streamText the tenant own document with no canary in any delta', async () => {
    const { provider } = setup()
    const result = streamText({ model: provider('tenant-a'), prompt: document('TENANT-A', 3_000) })
    let text = ''
    for await (const delta of result.textStream) text += delta
    expect(text).toContain('TENANT-A ledger entry')
    expect(hasCanary(text + ((await result.reasoningText) ?? ''))).toBe(false)
    expect(await result.finishReason).toMatch(/stop|length/)
  }, 30_000)

  it('should surface a quarantined answer from generateText as an error with the incident id', async () => {
    const { provider, quarantine } = setup()
    await generateText({ model: provider('tenant-a'), prompt: document('TENANT-A', 6_000) })
    const error = await generateText({
      model: provider('tenant-b'),
      prompt: document('TENANT-B', B_OVER_POOL),
    }).then(
      () => undefined,
      (e: unknown) => e,
    )
    const cause = guardCause(error)
    expect(cause.code).toBe('response_quarantined')
    expect((error as APICallError).isRetryable).toBe(false)
    expect((error as Error).message).not.toContain('TENANT-A')
    const record = await quarantine.get(cause.incidentId!)
    expect(record?.tenant).toBe('tenant-b')
    // Whichever evidence caught it (A's canary is whole on the stale pages or cut at a page edge,
    // depending on the layout), it names no one but A.
    expect(record?.reasons.length).toBeGreaterThan(0)
    expect(record?.sourceTenants.filter((t) => t !== 'tenant-a')).toEqual([])
  }, 30_000)

  it('should surface a quarantined stream as an error part, with no byte of tenant A delivered', async () => {
    const { provider, quarantine } = setup()
    await generateText({ model: provider('tenant-a'), prompt: document('TENANT-A', 6_000) })
    const errors: unknown[] = []
    const result = streamText({
      model: provider('tenant-b'),
      prompt: document('TENANT-B', B_OVER_POOL),
      onError: ({ error }) => {
        errors.push(error)
      },
    })
    let delivered = ''
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta' || part.type === 'reasoning-delta') delivered += part.text
    }
    expect(delivered).not.toContain('TENANT-A')
    expect(hasCanary(delivered)).toBe(false)
    expect(errors).toHaveLength(1)
    const cause = guardCause(errors[0])
    expect(cause.code).toBe('response_quarantined')
    expect((await quarantine.get(cause.incidentId!))?.tenant).toBe('tenant-b')
  }, 30_000)

  // toTextStreamResponse() sends text parts only: a refused request is a 200 with an empty body
  // that looks like an empty answer. docs/ecosystem.md gives the forms that carry the refusal;
  // this pins both halves.
  it('should carry a refusal in toUIMessageStreamResponse({ onError }), not in a text stream', async () => {
    const { provider } = setup()
    const refused = () =>
      streamText({
        model: provider('tenant-a'),
        prompt: 'hi',
        maxOutputTokens: 1_000_000,
        onError: () => {},
      })
    const text = refused().toTextStreamResponse()
    expect(text.status).toBe(200)
    expect(await text.text()).toBe('')
    const ui = refused().toUIMessageStreamResponse({
      onError: (error) => {
        const cause = error instanceof GuardError ? error : guardCause(error)
        return `${cause.code}: ${cause.message}`
      },
    })
    const body = await ui.text()
    expect(body).toContain('"type":"error"')
    expect(body).toContain('context_length_exceeded')
  })

  it('should refuse binding members that would bypass the guard, naming them', () => {
    const binding = asAiBinding({ run: async () => ({}) })
    expect(() => binding.gateway('my-gateway')).toThrow(/gateway\(\).*without the guard/)
    expect(() => binding.autorag('rag')).toThrow(/autorag\(\)/)
    expect(binding.run).toBeTypeOf('function')
  })
})
