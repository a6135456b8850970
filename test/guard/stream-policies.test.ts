import { describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { VirtualClock } from '../../sim/clock'
import type { SimConfig } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { GuardError, type GuardOptions, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../../src/core/canary'
import { chat, sseText } from '../support/prompts'
import { recordVerdicts } from '../support/verdicts'

/**
 * The stream release policies and the heartbeat. `verified` (the default) releases nothing before the
 * proof; `async` releases once the first token is timed and the foreign-canary scan passed, and a proof
 * that never comes (or any evidence) ends the stream with an error and an incident — after some
 * unverified reasoning reached the client, which these tests show, not hide.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'stream-policy-test-secret-0123456789abcd'
const SIM: Partial<SimConfig> = {
  mode: 'fixed',
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: 30,
  tokensPerEvent: 3,
}
const TEXT = Array.from({ length: 12 }, (_, i) => english(700 + i, 200)).join('\n')

/** A streamed request through the simulator on a virtual clock: when text first arrived, and what. */
async function timed(options: Partial<GuardOptions>) {
  const clock = new VirtualClock()
  const engine = new SimEngine(SIM, { clock })
  const verdicts = recordVerdicts()
  const ai = guardAi(engine.binding('gateway'), {
    secret: SECRET,
    tenant: 'a',
    hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
    ...options,
  })
  const start = clock.now()
  const out = (await ai.run(MODEL, chat(TEXT, { stream: true }))) as ReadableStream<Uint8Array>
  const decoder = new TextDecoder()
  let raw = ''
  let firstText: number | undefined
  for await (const chunk of out) {
    raw += decoder.decode(chunk, { stream: true })
    const { reasoning, content } = sseText(raw)
    if (firstText === undefined && (reasoning || content)) firstText = clock.now() - start
  }
  return { firstText: firstText!, raw, ...sseText(raw), verdicts }
}

describe('the policy is the operator’s', () => {
  it('should keep a verified stream held whatever the request says about release or heartbeats', async () => {
    // A request may make the guard stricter, never weaker: these fields are not the guard's to read.
    const clock = new VirtualClock()
    const engine = new SimEngine(SIM, { clock })
    const ai = guardAi(engine.binding('gateway'), {
      secret: SECRET,
      tenant: 'a',
      hooks: { now: () => clock.now() },
    })
    const start = clock.now()
    const hostile = chat(TEXT, {
      stream: true,
      streamRelease: 'async',
      stream_release: 'async',
      heartbeatMs: 100,
    })
    const out = (await ai.run(MODEL, hostile)) as ReadableStream<Uint8Array>
    let raw = ''
    let firstText: number | undefined
    for await (const chunk of out) {
      raw += new TextDecoder().decode(chunk)
      if (firstText === undefined && sseText(raw).reasoning) firstText = clock.now() - start
    }
    // Released only after the proof at the content's start (~4 s of reasoning at 30 tokens/s).
    expect(firstText).toBeGreaterThan(3_000)
    expect(raw).not.toContain(': held')
    expect(raw).not.toMatch(/cnry_/i)
  }, 60_000)
})

/** An upstream that answers with the given events (the prompt's own canary handed to `events`). */
type Delta = { reasoning_content: string } | { content: string }

function scripted(events: (own: string) => Delta[], delayMs = 0): AiRunner {
  return {
    run: async (_model, inputs) => {
      const own = [...JSON.stringify(inputs).matchAll(/cnry_[0-9a-z]{24}/g)].at(-1)![0]
      const chunks = [
        ...events(own).map(
          (delta) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`,
        ),
        'data: [DONE]\n\n',
      ].map((text) => new TextEncoder().encode(text))
      // One event per read, as a decoding engine sends them.
      let first = true
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (first && delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
          first = false
          const next = chunks.shift()
          if (next) controller.enqueue(next)
          else controller.close()
        },
      })
    },
  }
}

/** Reads a guarded stream to its end or its error: what was delivered, and how it ended. */
async function deliver(
  upstream: AiRunner,
  options: Partial<GuardOptions>,
): Promise<{ raw: string; error: unknown; verdicts: ReturnType<typeof recordVerdicts> }> {
  const verdicts = recordVerdicts()
  const ai = guardAi(upstream, {
    secret: SECRET,
    tenant: 'a',
    canary: { echoRetries: 0 },
    hooks: { onVerdict: verdicts.onVerdict },
    ...options,
  })
  let raw = ''
  let error: unknown
  try {
    const out = (await ai.run(MODEL, chat('hi', { stream: true }))) as ReadableStream<Uint8Array>
    const decoder = new TextDecoder()
    for await (const chunk of out) raw += decoder.decode(chunk, { stream: true })
  } catch (e) {
    error = e
  }
  return { raw, error, verdicts }
}

const THINKING = 'Thinking about the question carefully. '.repeat(8)

describe('stream release policies', () => {
  it('should release an async stream from its first token, where the default waits for the proof', async () => {
    const verified = await timed({})
    const early = await timed({ stream: { release: 'async' } })
    // The simulator's model echoes at the start of its content, after ~4 s of reasoning at 30 tokens/s.
    expect(verified.firstText).toBeGreaterThan(3_000)
    expect(early.firstText).toBeLessThan(500)
    // The same answer either way (the reasoning quotes the prompt, whose canary differs in length),
    // without the canary.
    expect(early.reasoning.slice(0, 20)).toBe(verified.reasoning.slice(0, 20))
    expect(early.content).toBe(verified.content)
    expect(early.raw).not.toMatch(/cnry_/i)
    // Both logged as releases, with the first delivered byte next to the upstream's first token.
    const [v] = verified.verdicts.events
    const [e] = early.verdicts.events
    expect(v?.action).toBe('release')
    expect(e?.action).toBe('release')
    expect(e!.firstByteMs!).toBeLessThan(500)
    expect(v!.firstByteMs!).toBeGreaterThan(3_000)
  }, 60_000)

  it('should end an async stream whose content opens without the echo, after the reasoning it sent', async () => {
    const events = () => [
      { reasoning_content: THINKING },
      { content: 'OTHER-TENANT text, no echo here.' },
    ]
    const verified = await deliver(scripted(events), {})
    const early = await deliver(scripted(events), { stream: { release: 'async' } })
    // The default releases nothing; async released the reasoning (the trade it makes) and then ended
    // the stream before the content, with an incident.
    expect(verified.raw).toBe('')
    expect((verified.error as GuardError).code).toBe('response_quarantined')
    expect(sseText(early.raw).reasoning).toBe(THINKING)
    expect(early.raw).not.toContain('OTHER-TENANT')
    expect((early.error as GuardError).code).toBe('response_quarantined')
    expect(early.verdicts.events.map((v) => [v.action, v.reasons])).toEqual([
      ['release', []],
      ['quarantine', ['echo_missing']],
    ])
  }, 30_000)

  it('should take its own canary restated in the reasoning as the owed proof, never a look-alike', async () => {
    const paid = await deliver(
      scripted((own) => [
        { reasoning_content: `The instruction at the end: begin with ${own}. ${THINKING}` },
        { content: 'An answer without the echo.' },
      ]),
      { stream: { release: 'async' } },
    )
    expect(paid.error).toBeUndefined()
    expect(sseText(paid.raw).content).toBe('An answer without the echo.')
    expect(paid.raw).not.toMatch(/cnry_/i)
    // Split across the last held event and the first released one: the same watch reads on.
    const split = await deliver(
      scripted((own) => [
        { reasoning_content: `The instruction at the end: begin with ${own.slice(0, 11)}` },
        { reasoning_content: `${own.slice(11)}. ${THINKING}` },
        { content: 'An answer without the echo.' },
      ]),
      { stream: { release: 'async' } },
    )
    expect(split.error).toBeUndefined()
    expect(sseText(split.raw).content).toBe('An answer without the echo.')
    expect(split.raw).not.toMatch(/cnry_/i)
    // A canary-shaped code that is not this request's pays nothing (and is itself suspicious).
    const fake = await deliver(
      scripted(() => [
        { reasoning_content: `Begin with cnry_0123456789abcdefghjkmnpq. ${THINKING}` },
        { content: 'An answer without the echo.' },
      ]),
      { stream: { release: 'async' } },
    )
    expect(fake.error).toBeInstanceOf(GuardError)
    expect(sseText(fake.raw).content).toBe('')
  }, 30_000)

  it('should not take the canary in the reasoning as the owed proof of a JSON answer', async () => {
    // A JSON answer is proven by its `guard_echo` member (which is removed): restating the canary in
    // the reasoning proves nothing about the object, before release or after.
    const verdicts = recordVerdicts()
    const ai = guardAi(
      scripted((own) => [
        { reasoning_content: `Must open with ${own}. ${THINKING}` },
        { content: '{"answer":"no echo member"}' },
      ]),
      {
        secret: SECRET,
        tenant: 'a',
        canary: { echoRetries: 0 },
        stream: { release: 'async' },
        hooks: { onVerdict: verdicts.onVerdict },
      },
    )
    let raw = ''
    const error = await ai
      .run(MODEL, chat('hi', { stream: true, response_format: { type: 'json_object' } }))
      .then(async (out) => {
        for await (const chunk of out as ReadableStream<Uint8Array>)
          raw += new TextDecoder().decode(chunk)
      })
      .catch((e: unknown) => e)
    expect((error as GuardError).code).toBe('response_quarantined')
    expect(sseText(raw).content).toBe('')
    expect(verdicts.of('quarantine')[0]?.reasons).toEqual(['echo_missing'])
  }, 30_000)

  it('should still stop another request’s canary before any piece of it leaves, under async', async () => {
    const foreign = await mintCanary(await importCanaryKey(SECRET), {
      requestId: 'other',
      tenant: 'victim',
    })
    const { raw, error, verdicts } = await deliver(
      scripted((own) => [
        { reasoning_content: THINKING },
        { reasoning_content: `and then ${foreign.slice(0, 9)}` },
        { reasoning_content: `${foreign.slice(9)} VICTIM-DATA follows` },
        { content: `${own}\nAnswer.` },
      ]),
      { stream: { release: 'async' } },
    )
    expect((error as GuardError).code).toBe('response_quarantined')
    expect(raw).not.toMatch(/cnry/i)
    expect(raw).not.toContain('VICTIM')
    expect(verdicts.of('quarantine')[0]?.reasons).toContain('foreign_canary')
  }, 30_000)
})

describe('heartbeat while held', () => {
  it('should send comments while the verdict is pending, then the verified answer', async () => {
    const upstream = scripted(
      (own) => [{ reasoning_content: THINKING }, { content: `${own}\nHi.` }],
      450,
    )
    const { raw, error } = await deliver(upstream, { stream: { heartbeatMs: 100 } })
    expect(error).toBeUndefined()
    const beats = raw.split(': held\n\n')
    // Beats in 450 ms of silence (four are due; a busy isolate runs timers late, but the first beat's
    // timer is due before the upstream's and fires first), all before the first event.
    expect(beats.length).toBeGreaterThanOrEqual(2)
    expect(beats.slice(0, -1).every((b) => b === '')).toBe(true)
    expect(sseText(raw).content).toBe('Hi.')
    expect(raw).not.toMatch(/cnry_/i)
  }, 30_000)

  it('should end a beating stream with the guard’s error when the answer is withheld', async () => {
    const upstream = scripted(() => [{ reasoning_content: THINKING }, { content: 'No echo.' }], 250)
    const { raw, error, verdicts } = await deliver(upstream, { stream: { heartbeatMs: 100 } })
    // The response was already a 200 that beat: the quarantine arrives in the stream, nothing else.
    expect(raw.replaceAll(': held\n\n', '')).toBe('')
    expect(raw).toContain(': held')
    expect((error as GuardError).code).toBe('response_quarantined')
    expect(verdicts.of('quarantine')).toHaveLength(1)
  }, 30_000)

  it('should keep refusals before the upstream call as errors of the call itself', async () => {
    const ai = guardAi(
      scripted(() => []),
      { secret: SECRET, stream: { heartbeatMs: 100 } },
    )
    const huge = 'word '.repeat(3_000_000)
    const error = await ai.run(MODEL, chat(huge, { stream: true })).catch((e: unknown) => e)
    expect((error as GuardError).code).toBe('context_length_exceeded')
  }, 60_000)
})
