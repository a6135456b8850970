/**
 * @module Observe mode, as the client sees it: an observed check's verdict releases the answer (whole,
 * or a stream not cut) and records what enforce would have withheld — an incident marked `observed`,
 * a `would_block` verdict line — and the answer teaches nothing. A request cannot turn it on, and proof
 * (another request's canary) is withheld in every mode, alone or beside observed reasons.
 */
import { describe, expect, it, vi } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import {
  createGuard,
  GuardError,
  type GuardOptions,
  MemoryCalibration,
  MemoryQuarantineStore,
} from '../../src'
import { answersOf, FingerprintTable } from '../../src/plugins/foreign-content'
import { drainText } from '../support/open-stream'
import { chat, document } from '../support/prompts'
import { MODEL, models, ownCanary, SECRET, scripted, userTextOf } from '../support/secrets'
import {
  leakedWords,
  privateText,
  STALE_MIDDLE_PROFILE,
  STALE_MIDDLE_SIM,
} from '../support/stale-middle'
import { direct } from '../support/surfaces'
import { captureWarnings, recordVerdicts } from '../support/verdicts'

// Every test builds guards of its own: guardAi's notice of many option sets is expected here.
captureWarnings(/more than \d+ different option sets/)

const ALL = { content: true, timing: true, echo: true } as const

/** What a request might carry to turn observe on: fields in its body (headers: the Worker's test). */
const HOSTILE = {
  observe: ALL,
  guard_mode: 'observe',
  guard: { observe: true, mode: 'observe' },
  mode: 'observe',
}

/** A calibration store that counts what it is taught (the honest answers' lessons prove it can). */
function countingCalibration() {
  const store = new MemoryCalibration()
  const taught = { tokens: 0, timing: 0 }
  const counting = {
    snapshot: (model: string) => store.snapshot(model),
    observeTokens: (model: string, o: Parameters<MemoryCalibration['observeTokens']>[1]) => {
      taught.tokens++
      return store.observeTokens(model, o)
    },
    observeTiming: (model: string, s: Parameters<MemoryCalibration['observeTiming']>[1]) => {
      taught.timing++
      return store.observeTiming(model, s)
    },
  }
  return { store: counting, taught }
}

/** Lets background teaching (no `waitUntil` in these hosts) run to its end. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

describe('observe mode: foreign content', () => {
  /** Tenant B's answer quotes tenant A's prompt through the simulator's stale middle pages. */
  function setup(options: Partial<GuardOptions>) {
    const clock = new VirtualClock()
    const engine = new SimEngine(STALE_MIDDLE_SIM, { clock })
    const quarantine = new MemoryQuarantineStore()
    const verdicts = recordVerdicts()
    const guard = createGuard({
      secret: 'observe-content-test-secret-0123456789abcdef',
      models: { [MODEL]: STALE_MIDDLE_PROFILE },
      quarantine: { store: quarantine },
      hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
      ...options,
    })
    const send = async (tenant: string, inputs: Record<string, unknown>) => {
      const ai = guard.wrap(engine.binding('gateway'), { tenant })
      try {
        const out = await ai.run(MODEL, inputs)
        if (!inputs.stream) {
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
    const leak = async (stream: boolean, extra: Record<string, unknown> = {}) => {
      const a = privateText(1, 24)
      expect((await send('tenant-a', chat(a, { stream, max_tokens: 1_024 }))).error).toBeUndefined()
      engine.configure({ staleRate: 1 })
      const b = await send(
        'tenant-b',
        chat(privateText(2, 24), { stream, max_tokens: 1_024, ...extra }),
      )
      return { a, b }
    }
    return { leak, quarantine, verdicts }
  }

  for (const stream of [false, true]) {
    const how = stream ? 'stream' : 'whole'

    it(`should release B's answer whole, record the incident as observed and count would_block (${how})`, async () => {
      const added = vi.spyOn(FingerprintTable.prototype, 'add')
      const { leak, quarantine, verdicts } = setup({ observe: { content: true } })
      const { a, b } = await leak(stream)
      // The client got the answer, not cut: the same words enforce withholds (A's, in this test).
      expect(b.error).toBeUndefined()
      expect(leakedWords(b.delivered, a)).toBeGreaterThan(6)
      // The incident enforce would have made, marked observed, with what it would have withheld.
      const [summary, ...others] = await quarantine.list()
      expect(others).toEqual([])
      expect(summary).toMatchObject({
        tenant: 'tenant-b',
        reasons: ['foreign_content'],
        sourceTenants: ['tenant-a'],
        observed: true,
      })
      const record = await quarantine.get(summary!.id)
      expect(leakedWords(Object.values(record!.withheld).join(''), a)).toBeGreaterThan(3)
      expect(await quarantine.list({ observed: false })).toEqual([])
      // One would_block line naming it; B's answer also has its release line.
      const [blocked, ...more] = verdicts.of('would_block')
      expect(more).toEqual([])
      expect(blocked).toMatchObject({
        tenant: 'tenant-b',
        reasons: ['foreign_content'],
        incidentId: summary!.id,
      })
      // The second opinion's own requests log lines of their own (tenants guard-recall:…).
      expect(
        verdicts
          .of('release')
          .map((v) => v.tenant)
          .filter((t) => !t.startsWith('guard-recall:')),
      ).toEqual(['tenant-a', 'tenant-b'])
      expect(verdicts.of('quarantine')).toEqual([])
      // A's verified answer taught the model's answers table; B's observed one did not.
      await settle()
      const taughtBy = (tenant: string) =>
        added.mock.calls.filter(([model, t]) => model === answersOf(MODEL) && t === tenant).length
      expect(taughtBy('tenant-a')).toBeGreaterThan(0)
      expect(taughtBy('tenant-b')).toBe(0)
      added.mockRestore()
    }, 60_000)

    it(`should still withhold B's answer when the request asks for observe (${how})`, async () => {
      const { leak, quarantine, verdicts } = setup({})
      const { a, b } = await leak(stream, HOSTILE)
      expect(b.error).toBeInstanceOf(GuardError)
      expect(['response_quarantined', 'invalid_request']).toContain((b.error as GuardError).code)
      expect(leakedWords(b.delivered, a)).toBeLessThan(6)
      expect(verdicts.of('would_block')).toEqual([])
      expect(await quarantine.list({ observed: true })).toEqual([])
    }, 60_000)
  }
})

describe('observe mode: foreign content after the first byte', () => {
  /**
   * B's stream echoes, so it is released at once; then it quotes A's prompt: the evidence comes
   * while the stream is under way.
   */
  function setup(options: Partial<GuardOptions>) {
    const quarantine = new MemoryQuarantineStore()
    const verdicts = recordVerdicts()
    const a = privateText(1, 12)
    const upstream = scripted((inputs) => {
      const own = ownCanary(inputs)!
      if (userTextOf(inputs).startsWith('A:')) return { message: { content: `${own}\nnoted` } }
      const answer = `Sure. Here is what I have on file: ${a}\nThat is all.`
      const pieces = answer.match(/[\s\S]{1,40}/g)!
      return { deltas: [{ content: `${own}\n` }, ...pieces.map((content) => ({ content }))] }
    })
    // One event a chunk, each read on its own: the verdict comes with the echo, before the quote.
    upstream.eventCuts = true
    upstream.pacedMs = 0
    const send = direct(upstream, {
      secret: SECRET,
      models,
      quarantine: { store: quarantine },
      hooks: { onVerdict: verdicts.onVerdict },
      ...options,
    })
    return { a, send, quarantine, verdicts }
  }

  it('should end the stream under enforce, and let it run to its end, recorded, under observe', async () => {
    for (const observe of [false, true]) {
      const { a, send, quarantine, verdicts } = setup(observe ? { observe: { content: true } } : {})
      expect((await send('tenant-a', MODEL, chat(`A: ${a}`))).status).toBe(200)
      const b = await send('tenant-b', MODEL, chat('B: what is on file?', { stream: true }))
      // Released on its echo, before the evidence: the verdict after it is a line of its own.
      // The second opinion's own requests log lines of their own (tenants guard-recall:…).
      expect(
        verdicts
          .of('release')
          .map((v) => v.tenant)
          .filter((t) => !t.startsWith('guard-recall:')),
      ).toEqual(['tenant-a', 'tenant-b'])
      const [summary] = await quarantine.list()
      expect(summary?.reasons).toEqual(['foreign_content'])
      if (!observe) {
        // Enforced, the held-back words never left: the stream ended in the quarantine.
        expect(b.body).toContain('response_quarantined')
        expect(leakedWords(b.text, a)).toBeLessThan(40)
        expect(summary?.observed).toBeUndefined()
        continue
      }
      expect(b.status).toBe(200)
      expect(b.body).not.toContain('response_quarantined')
      expect(b.text).toContain('That is all.')
      expect(b.text).toContain(a)
      expect(summary).toMatchObject({ observed: true, sourceTenants: ['tenant-a'] })
      expect(verdicts.of('would_block')).toMatchObject([
        { tenant: 'tenant-b', reasons: ['foreign_content'], incidentId: summary!.id },
      ])
    }
  })
})

describe('observe mode: timing', () => {
  /** The timing guard alone (echo off, no content check), against an engine that skips prefill. */
  function setup(options: Partial<GuardOptions>) {
    const clock = new VirtualClock()
    const engine = new SimEngine(
      {
        poolTokens: 65_536,
        contextWindow: 131_072,
        prefillTokensPerSecond: 50_000,
        decodeTokensPerSecond: 100,
        seed: 5,
        mode: 'pd-abort-leak',
      },
      { clock },
    )
    const quarantine = new MemoryQuarantineStore()
    const verdicts = recordVerdicts()
    const calibration = countingCalibration()
    const send = direct(engine.binding('account'), {
      secret: 'observe-timing-test-secret-0123456789abcdef',
      models: {
        [MODEL]: {
          contextWindow: 131_072,
          kvPoolTokens: 131_072,
          maxPrefillTokensPerSecond: 200_000,
          defaultOutputReserve: 256,
          echo: 'off',
        },
      },
      quarantine: { store: quarantine },
      ceiling: { calibration: calibration.store },
      hooks: { now: () => clock.now(), onVerdict: verdicts.onVerdict },
      content: false,
      ...options,
    })
    return { send, quarantine, verdicts, taught: calibration.taught }
  }

  for (const stream of [false, true]) {
    const how = stream ? 'stream' : 'whole'

    it(`should release an over-pool answer, record ttft_impossible as observed and teach nothing (${how})`, async () => {
      const { send, quarantine, verdicts, taught } = setup({ observe: { timing: true } })
      const a = await send('tenant-a', MODEL, chat(document('TENANT-A', 40_000), { stream }))
      expect(a.status).toBe(200)
      await settle()
      // A's honest answer taught: the counter sees teaching.
      const before = { ...taught }
      expect(before.tokens).toBeGreaterThan(0)
      const b = await send('tenant-b', MODEL, chat(document('TENANT-B', 70_000), { stream }))
      // Released, whole or streamed to its end: the placeholder answer enforce withholds.
      expect(b.status).toBe(200)
      expect(b.code).toBeUndefined()
      expect(b.text).toContain('TENANT-A')
      const [summary, ...others] = await quarantine.list()
      expect(others).toEqual([])
      expect(summary).toMatchObject({
        tenant: 'tenant-b',
        reasons: ['ttft_impossible'],
        observed: true,
      })
      expect(summary!.figures.ttftMs).toBeLessThan(10)
      expect(verdicts.of('would_block')).toMatchObject([
        { tenant: 'tenant-b', reasons: ['ttft_impossible'], incidentId: summary!.id },
      ])
      // Neither the tokenizer margins nor the timing baseline learned from B's answer.
      await settle()
      expect(taught).toEqual(before)
    }, 30_000)

    it(`should still withhold it when the request asks for observe (${how})`, async () => {
      const { send, quarantine, verdicts } = setup({})
      await send('tenant-a', MODEL, chat(document('TENANT-A', 40_000), { stream }))
      const b = await send(
        'tenant-b',
        MODEL,
        chat(document('TENANT-B', 70_000), { stream, ...HOSTILE }),
      )
      expect(b.status).not.toBe(200)
      expect(b.text).not.toContain('TENANT-A')
      expect(verdicts.of('would_block')).toEqual([])
      expect(await quarantine.list({ observed: true })).toEqual([])
    }, 30_000)
  }
})

describe('observe mode: a missing echo', () => {
  /** An engine that never echoes: the answer is its own words only. */
  function setup(options: Partial<GuardOptions>) {
    const quarantine = new MemoryQuarantineStore()
    const verdicts = recordVerdicts()
    const upstream = scripted((_inputs, call) => {
      const content = `Here is the summary, attempt ${call + 1}.`
      return { deltas: [{ content: content.slice(0, 9) }, { content: content.slice(9) }] }
    })
    const wholeUpstream = scripted((_inputs, call) => ({
      message: { content: `Here is the summary, attempt ${call + 1}.` },
    }))
    const sendWith = (stream: boolean) =>
      direct(stream ? upstream : wholeUpstream, {
        secret: SECRET,
        models,
        quarantine: { store: quarantine },
        hooks: { onVerdict: verdicts.onVerdict },
        ...options,
      })
    return { sendWith, quarantine, verdicts, upstream, wholeUpstream }
  }

  for (const stream of [false, true]) {
    const how = stream ? 'stream' : 'whole'

    it(`should retry, then release the last answer and record echo_missing_repeatedly as observed (${how})`, async () => {
      const { sendWith, quarantine, verdicts, upstream, wholeUpstream } = setup({
        observe: { echo: true },
      })
      const got = await sendWith(stream)('tenant-a', MODEL, chat('Summarise my notes.', { stream }))
      expect(got.status).toBe(200)
      // A lone slip is still retried (echoRetries: 2); the third answer is the one released.
      expect((stream ? upstream : wholeUpstream).sent).toHaveLength(3)
      expect(got.text).toContain('Here is the summary, attempt 3.')
      const [summary, ...others] = await quarantine.list()
      expect(others).toEqual([])
      expect(summary).toMatchObject({ reasons: ['echo_missing_repeatedly'], observed: true })
      expect((await quarantine.get(summary!.id))!.withheld.content).toContain('attempt 3')
      expect(verdicts.of('would_block')).toMatchObject([
        { reasons: ['echo_missing_repeatedly'], incidentId: summary!.id },
      ])
      expect(verdicts.of('release')).toHaveLength(1)
    })

    it(`should still withhold it when the request asks for observe (${how})`, async () => {
      const { sendWith, quarantine, verdicts } = setup({})
      const got = await sendWith(stream)(
        'tenant-a',
        MODEL,
        chat('Summarise my notes.', { stream, ...HOSTILE }),
      )
      expect(got.status).not.toBe(200)
      expect(got.text).not.toContain('Here is the summary')
      expect(verdicts.of('would_block')).toEqual([])
      expect(await quarantine.list({ observed: true })).toEqual([])
    })
  }

  it('should let an async stream whose echo never came run to its end, and record it', async () => {
    const { sendWith, quarantine, verdicts } = setup({
      observe: { echo: true },
      stream: { release: 'async' },
    })
    const got = await sendWith(true)('tenant-a', MODEL, chat('Summarise.', { stream: true }))
    expect(got.status).toBe(200)
    // Not cut: the whole text and the stream's end, no error event.
    expect(got.text).toContain('Here is the summary, attempt 1.')
    expect(got.body).toContain('[DONE]')
    expect(got.body).not.toContain('response_quarantined')
    const [summary] = await quarantine.list()
    expect(summary).toMatchObject({ reasons: ['echo_missing'], observed: true })
    expect(verdicts.of('would_block')).toHaveLength(1)
  })
})

describe('observe mode never releases proof', () => {
  /**
   * Tenant A's answer is honest; tenant B's engine answer carries A's canary (a stale read), with or
   * without B's own echo.
   */
  function setup(bEchoes: boolean) {
    const quarantine = new MemoryQuarantineStore()
    const verdicts = recordVerdicts()
    let canaryOfA = ''
    const upstream = scripted((inputs) => {
      const own = ownCanary(inputs)!
      if (userTextOf(inputs).startsWith('A:')) {
        canaryOfA = own
        return { message: { content: `${own}\nnoted` } }
      }
      const head = bEchoes ? `${own}\n` : ''
      return { message: { content: `${head}From the notes: ${canaryOfA} TENANT-A ledger` } }
    })
    const send = direct(upstream, {
      secret: SECRET,
      models,
      quarantine: { store: quarantine },
      hooks: { onVerdict: verdicts.onVerdict },
      observe: ALL,
    })
    return { send, quarantine, verdicts }
  }

  for (const bEchoes of [true, false]) {
    it(`should withhold another request's canary with every check observed (${bEchoes ? 'alone' : 'beside a missing echo'})`, async () => {
      const { send, quarantine, verdicts } = setup(bEchoes)
      expect((await send('tenant-a', MODEL, chat('A: my notes'))).status).toBe(200)
      const b = await send('tenant-b', MODEL, chat('B: my notes'))
      expect(b.status).toBe(422)
      expect(b.code).toBe('response_quarantined')
      expect(b.text).not.toContain('TENANT-A')
      const record = await quarantine.get(b.incidentId!)
      expect(record?.reasons).toContain('foreign_canary')
      expect(record?.observed).toBeUndefined()
      expect(record?.sourceTenants).toEqual(['tenant-a'])
      expect(verdicts.of('would_block')).toEqual([])
    })
  }
})
