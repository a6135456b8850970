/**
 * @module Secrets' leaks: another request's stand-in in an answer is a leak — quarantined,
 * attributed to its tenant, never restored, in whole and streamed answers, before or after release;
 * against the leaking simulator a tenant's secrets never reach the engine and never reach another
 * tenant; look-alikes and pasted stand-ins hand over no one's value; and no log line or incident
 * record holds a value or a stand-in.
 */
import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { type GuardOptions, MemoryQuarantineStore, type QuarantineRecord } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { LEAK } from '../support/leak-scenario'
import { chat, document } from '../support/prompts'
import {
  channelsOf,
  cutText,
  directThrough,
  expectNoSecretIn,
  GENERATOR_NAMES,
  MODEL,
  middlewareThrough,
  models,
  ownCanary,
  readable,
  type Script,
  SECRET,
  type SecretPrompt,
  SUBSTITUTE_ALL,
  scripted,
  secretPrompt,
  standInsIn,
  standInsOf,
  TOOLS,
  toolDeltas,
  userTextOf,
  valuesIn,
} from '../support/secrets'
import { type Delivered, direct, SURFACES, type Surface } from '../support/surfaces'
import { captureWarnings, recordVerdicts, type VerdictRecorder } from '../support/verdicts'

// Every test builds guards of its own: guardAi's notice of many option sets is expected here.
captureWarnings(/more than \d+ different option sets/)

/** Kinds whose stand-ins are compact (no room for the tenant tag): a leak without a named source. */
const COMPACT = new Set([
  'card-number',
  'iban',
  'no-fodselsnummer',
  'se-personnummer',
  'us-ssn',
  'aws-access-key-id',
])

/** A's answer: its content, or its deltas (text is content; an object is a delta as it is). */
type Answer = { deltas?: (string | Record<string, unknown>)[]; content?: string }

/**
 * One guard (both tenants), and an upstream that answers tenant B's requests with its echo, and
 * tenant A's with `answerA(own)`: whatever the test puts in the leaked answer.
 */
function rig(options: Partial<GuardOptions> = {}, surface: Surface = direct) {
  const quarantine = new MemoryQuarantineStore()
  const verdicts = recordVerdicts()
  let answerA: (own: string) => Answer = (own) => ({
    content: `${own}\nok`,
  })
  let streamA = false
  const upstream = scripted((inputs) => {
    const own = ownCanary(inputs)!
    if (!userTextOf(inputs).startsWith('A:')) return { message: { content: `${own}\nnoted` } }
    const answer = answerA(own)
    if (streamA) {
      const pieces = answer.deltas ?? [answer.content!]
      return { deltas: pieces.map((d) => (typeof d === 'string' ? { content: d } : d)) }
    }
    const text = answer.deltas?.map((d) => (typeof d === 'string' ? d : '')).join('')
    return { message: { content: answer.content ?? text } }
  })
  const send = surface(upstream, {
    secret: SECRET,
    models,
    secrets: SUBSTITUTE_ALL,
    quarantine: { store: quarantine },
    hooks: { onVerdict: verdicts.onVerdict },
    ...options,
  })
  return {
    upstream,
    quarantine,
    verdicts,
    /** Tenant B sends `prompt` (its answer is released); returns the stand-ins the upstream got. */
    async victim(prompt: SecretPrompt): Promise<string[]> {
      upstream.sent.length = 0
      const b = await send('tenant-b', MODEL, chat(prompt.text))
      expect(b.status).toBe(200)
      expect(
        valuesIn(
          upstream.sent,
          prompt.values.map((v) => v.value),
        ),
      ).toEqual([])
      return standInsOf(userTextOf(upstream.sent[0]!), prompt)
    },
    /** Tenant A asks; the upstream answers with `answer` (streamed as its pieces when `stream`). */
    async leaker(
      answer: (own: string) => Answer,
      stream: boolean,
      text = 'A: summarise my notes',
    ): Promise<Delivered> {
      answerA = answer
      streamA = stream
      return send('tenant-a', MODEL, chat(text, { stream }))
    },
  }
}

/** The incident of a quarantined delivery, checked to be a foreign stand-in of `kind` from B. */
async function expectStandInIncident(
  got: Delivered,
  quarantine: MemoryQuarantineStore,
  kind: string,
): Promise<QuarantineRecord> {
  expect(got.code).toBe('response_quarantined')
  expect(got.incidentId).toMatch(/^inc_/)
  const record = (await quarantine.get(got.incidentId!))!
  expect(record.tenant).toBe('tenant-a')
  expect(record.reasons).toContain('foreign_stand_in')
  const entry = record.canaries.find((c) => c.standIn !== undefined)
  expect(entry?.standIn).toBe(kind)
  if (COMPACT.has(kind)) {
    expect(entry?.tenantTag).toBeUndefined()
  } else {
    expect(entry?.tenantTag).toMatch(/^[0-9a-f]+$/)
    expect(record.sourceTenants).toContain('tenant-b')
  }
  return record
}

/** Verdict lines and the record hold no value and no stand-in (of either tenant). */
function expectQuiet(
  verdicts: VerdictRecorder,
  record: QuarantineRecord | undefined,
  values: string[],
  standIns: string[],
): void {
  expectNoSecretIn(verdicts.events, values, standIns)
  // The record's metadata (everything but the withheld text, checked on its own below).
  if (record) {
    const { withheld, ...meta } = record
    expectNoSecretIn(meta, values, standIns)
    expect(valuesIn(withheld, values)).toEqual([])
  }
}

describe('another request’s stand-in in an answer', () => {
  for (const [surfaceName, surface] of SURFACES) {
    for (const stream of [false, true]) {
      it(`should quarantine it, attribute it to B and deliver nothing of it (${surfaceName}, ${stream ? 'stream' : 'whole'}, every kind)`, async () => {
        const { victim, leaker, quarantine, verdicts } = rig({}, surface)
        for (const [i, name] of GENERATOR_NAMES.entries()) {
          const prompt = secretPrompt(100 + i, [name])
          const [standIn] = await victim(prompt)
          const kind = prompt.values[0]!.kind
          verdicts.clear()
          const before = `Sure. From the notes é😀: `
          const got = await leaker(
            (own) => ({
              deltas: [`${own}\n`, before, ...cutText(standIn!, [standIn!.length >> 1]), ' done.'],
            }),
            stream,
          )
          const record = await expectStandInIncident(got, quarantine, kind)
          // Nothing of B's stand-in or value reached A (the body is the error, or a stream cut before it).
          expect(standInsIn(readable(got.body), [standIn!])).toEqual([])
          expect(valuesIn(got.body, [prompt.values[0]!.value])).toEqual([])
          expect(before.startsWith(channelsOf(got.body).content)).toBe(true)
          // One quarantine line, under A, naming the kind.
          const [line, ...more] = verdicts.of('quarantine')
          expect(more).toEqual([])
          expect(line?.tenant).toBe('tenant-a')
          expect(line?.reasons).toContain('foreign_stand_in')
          expect(line?.secrets?.foreign).toEqual({ [kind]: 1 })
          expectQuiet(verdicts, record, [prompt.values[0]!.value], [standIn!])
        }
      }, 60_000)
    }
  }

  it('should quarantine it split across events at every character position (a full and a compact kind, and a PEM block)', async () => {
    const { victim, leaker, quarantine } = rig()
    for (const name of ['openai-key', 'card-number', 'private-key']) {
      const prompt = secretPrompt(200, [name])
      const [standIn] = await victim(prompt)
      for (let p = 1; p < standIn!.length; p++) {
        const got = await leaker(
          (own) => ({ deltas: [`${own}\nSee `, ...cutText(standIn!, [p]), ' there.'] }),
          true,
        )
        await expectStandInIncident(got, quarantine, prompt.values[0]!.kind)
        expect(standInsIn(readable(got.body), [standIn!])).toEqual([])
        expect('See '.startsWith(channelsOf(got.body).content)).toBe(true)
      }
    }
  }, 60_000)

  it('should quarantine it with the upstream bytes cut at every offset', async () => {
    const { victim, leaker, quarantine, upstream } = rig()
    const prompt = secretPrompt(201, ['openai-key'])
    const [standIn] = await victim(prompt)
    const body = (own: string) => ({
      deltas: [`${own}\nKey é😀 `, ...cutText(standIn!, [7, 40]), ' end.'],
    })
    await leaker(body, true)
    const length = upstream.lastBody!.length
    for (let offset = 0; offset <= length; offset++) {
      upstream.cuts = [offset]
      const got = await leaker(body, true)
      await expectStandInIncident(got, quarantine, 'openai-key')
      expect(standInsIn(readable(got.body), [standIn!])).toEqual([])
      expect('Key é😀 '.startsWith(channelsOf(got.body).content)).toBe(true)
    }
  }, 60_000)

  for (const [surfaceName, surface] of [
    ['guardAi', directThrough],
    ['middleware', middlewareThrough],
  ] as [string, Surface][]) {
    it(`should end a stream after release when the stand-in comes late, releasing nothing of it (${surfaceName})`, async () => {
      const { victim, leaker, quarantine, verdicts, upstream } = rig({}, surface)
      for (const name of ['anthropic-key', 'private-key', 'iban']) {
        const prompt = secretPrompt(300, [name])
        const [standIn] = await victim(prompt)
        // 40 KB of the answer's own words go out first; then B's stand-in, cut in three.
        const released = Array.from(
          { length: 400 },
          (_, i) => `Paragraph ${i} of the answer, its own words é😀 and nothing else. `,
        )
        const cuts = [9, standIn!.length - 5]
        verdicts.clear()
        // The bytes in chunks of 2 KB, handed over one at a time: the head is out before the rest comes.
        upstream.cuts = Array.from({ length: 40 }, (_, k) => (k + 1) * 2_048)
        upstream.pacedMs = 1
        const got = await leaker(
          (own) => ({ deltas: [`${own}\n`, ...released, ...cutText(standIn!, cuts), ' tail.'] }),
          true,
        )
        upstream.cuts = []
        upstream.pacedMs = undefined
        const delivered = channelsOf(got.body).content
        const before = released.join('')
        // The stream began (200, lots released), then ended with the quarantine's error event.
        expect(got.status).toBe(200)
        // (The last few KB stay held for the foreign-content check; most of it is out.)
        expect(delivered.length).toBeGreaterThan(before.length / 2)
        expect(before.startsWith(delivered)).toBe(true)
        const record = await expectStandInIncident(got, quarantine, prompt.values[0]!.kind)
        expect(standInsIn(readable(got.body), [standIn!])).toEqual([])
        expectQuiet(verdicts, record, [prompt.values[0]!.value], [standIn!])
      }
    }, 60_000)
  }

  it('should quarantine an answer that also quotes A’s own stand-ins, and record no value of either', async () => {
    const { victim, leaker, quarantine, verdicts, upstream } = rig()
    const b = secretPrompt(400, ['github-token', 'jwt'])
    const bStandIns = await victim(b)
    const a = secretPrompt(401, ['stripe-key', 'url-password', 'private-key'])
    for (const stream of [false, true]) {
      verdicts.clear()
      upstream.sent.length = 0
      const got = await leaker(
        (own) => ({
          deltas: [
            `${own}\n`,
            `Yours: ${userTextOf(upstream.sent.at(-1)!)}\n`,
            `Also ${bStandIns[0]}`,
          ],
        }),
        stream,
        `A: ${a.text}`,
      )
      const aStandIns = standInsOf(userTextOf(upstream.sent[0]!).slice(3), a)
      const record = await expectStandInIncident(got, quarantine, 'github-token')
      const values = [...a.values, ...b.values].map((v) => v.value)
      expectQuiet(verdicts, record, values, [...bStandIns])
      // A's values are not in the incident either: its withheld text holds A's stand-ins, not values.
      expect(
        valuesIn(
          record.withheld,
          a.values.map((v) => v.value),
        ),
      ).toEqual([])
      expect(standInsIn(readable(got.body), [...aStandIns, ...bStandIns])).toEqual([])
    }
  }, 60_000)
})

describe('another request’s stand-in inside JSON (tool arguments, a JSON-mode answer)', () => {
  it('should quarantine it, every kind, whole and streamed', async () => {
    const quarantine = new MemoryQuarantineStore()
    for (const [i, name] of GENERATOR_NAMES.entries()) {
      const prompt = secretPrompt(150 + i, [name])
      let bStandIn = ''
      let mode: 'b' | 'tools' | 'json' = 'b'
      let stream = false
      const upstream = scripted((inputs): Script => {
        const own = ownCanary(inputs)
        if (mode === 'b') {
          bStandIn = standInsOf(userTextOf(inputs), prompt)[0]!
          return { message: { content: `${own}\nok` } }
        }
        // B's stand-in written inside a JSON string: escaped as JSON requires (a PEM's line breaks).
        const json = JSON.stringify({ text: `see ${bStandIn} end` })
        if (mode === 'tools') {
          const call = { id: 'c0', type: 'function', function: { name: 'save', arguments: json } }
          if (!stream) return { message: { content: null, tool_calls: [call] } }
          return { deltas: toolDeltas(cutText(json, [20, 40])) }
        }
        const content = `{"guard_echo":"${own}",${json.slice(1)}`
        if (!stream) return { message: { content } }
        return { deltas: cutText(content, [60, 90]).map((c) => ({ content: c })) }
      })
      const send = direct(upstream, {
        secret: SECRET,
        models,
        secrets: SUBSTITUTE_ALL,
        quarantine: { store: quarantine },
      })
      await send('tenant-b', MODEL, chat(prompt.text))
      for (mode of ['tools', 'json'] as const) {
        for (stream of [false, true]) {
          const format =
            mode === 'tools' ? { tools: TOOLS } : { response_format: { type: 'json_object' } }
          const got = await send('tenant-a', MODEL, chat('A: hello', { stream, ...format }))
          await expectStandInIncident(got, quarantine, prompt.values[0]!.kind)
          expect(standInsIn(readable(got.body), [bStandIn])).toEqual([])
        }
      }
    }
  }, 60_000)
})

describe('an operator pattern’s stand-in of another request', () => {
  it('should quarantine it (a pattern whose classes the stand-in keeps)', async () => {
    const patterns = [
      { name: 'acme-id', pattern: 'ACME-[0-9]{8}-[A-Z]{4}' },
      { name: 'acme-token', pattern: 'acme_[a-z0-9]{32}' },
    ]
    const { victim, leaker, quarantine } = rig({ secrets: { ...SUBSTITUTE_ALL, patterns } })
    for (const [kind, value] of [
      ['acme-id', 'ACME-12345678-QWER'],
      ['acme-token', 'acme_0123456789abcdefghijklmnopqrstuv'],
    ] as const) {
      const prompt: SecretPrompt = {
        text: `Record: ${value} done.`,
        values: [{ kind, value, line: 'Record: $ done.' }],
        literals: ['Record: ', ' done.'],
      }
      const [standIn] = await victim(prompt)
      for (const stream of [false, true]) {
        const got = await leaker(
          (own) => ({ deltas: [`${own}\nsee `, ...cutText(standIn!, [6]), ' end'] }),
          stream,
        )
        const record = (await quarantine.get(got.incidentId!))!
        expect(got.code).toBe('response_quarantined')
        expect(record.reasons).toContain('foreign_stand_in')
        const entry = record.canaries.find((c) => c.standIn)
        expect(entry?.standIn).toBe(kind)
        // 12 characters carry too few bits for the tenant's tag (compact); 32 carry it (full).
        if (kind === 'acme-token') expect(record.sourceTenants).toContain('tenant-b')
        else expect(entry?.tenantTag).toBeUndefined()
        expect(standInsIn(readable(got.body), [standIn!])).toEqual([])
      }
    }
  })
})

describe('another request’s stand-in split across a channel’s pause', () => {
  // Found by these tests (fixed in 12eea33, kept as a regression): a stand-in whose channel paused
  // mid-way (content came between its halves, one event a chunk) was never located — B's stand-in
  // reached A whole, in two events, and the leak went unseen. A paused channel that resumes is now
  // judged again from where a stand-in could have begun.
  for (const name of ['openai-key', 'card-number']) {
    it(`should quarantine it (${name})`, async () => {
      const { victim, leaker, quarantine, upstream } = rig()
      const prompt = secretPrompt(460, [name])
      const [standIn] = await victim(prompt)
      upstream.eventCuts = true
      upstream.pacedMs = 1
      const got = await leaker(
        (own) => ({
          deltas: [
            { reasoning_content: `see ${standIn!.slice(0, 7)}` },
            `${own}\nanswer `,
            { reasoning_content: `${standIn!.slice(7)} end` },
            ' done',
          ],
        }),
        true,
      )
      expect(standInsIn(readable(got.body), [standIn!])).toEqual([])
      await expectStandInIncident(got, quarantine, prompt.values[0]!.kind)
    })
  }
})

describe('the incident record’s withheld text', () => {
  // Found here: the record's `withheld` text kept every stand-in verbatim — the other tenant's that
  // proved the leak, and the request's own — while incidents hold kinds and counts, never values or
  // stand-ins (a stand-in is a bearer proof of its request). Now redacted like canaries.
  for (const stream of [false, true]) {
    it(`should hold no stand-in (${stream ? 'stream' : 'whole'})`, async () => {
      const { victim, leaker, quarantine } = rig()
      const prompt = secretPrompt(450, ['openai-key'])
      const [standIn] = await victim(prompt)
      const got = await leaker((own) => ({ deltas: [`${own}\n`, `Key: ${standIn} ok`] }), stream)
      const record = await expectStandInIncident(got, quarantine, 'openai-key')
      expect(standInsIn(JSON.stringify(record.withheld), [standIn!])).toEqual([])
    })
  }
})

describe('look-alikes and pasted stand-ins', () => {
  it('should neither restore nor quarantine a stand-in minted under another key (right shape, wrong MAC)', async () => {
    // Stand-ins of every kind from a guard with another secret: every check of the shape passes, the MAC fails.
    const other = rig({ secret: 'another-guard-entirely-its-own-secret-0123456789' })
    const { leaker, verdicts } = rig()
    for (const [i, name] of GENERATOR_NAMES.entries()) {
      const prompt = secretPrompt(500 + i, [name])
      const [lookAlike] = await other.victim(prompt)
      for (const stream of [false, true]) {
        verdicts.clear()
        const got = await leaker(
          (own) => ({ deltas: [`${own}\n`, 'Found ', ...cutText(lookAlike!, [5]), ' here.'] }),
          stream,
        )
        expect(got.code).toBeUndefined()
        expect(channelsOf(got.body).content).toBe(`Found ${lookAlike} here.`)
        expect(verdicts.events.map((v) => v.action)).toEqual(['release'])
        expect(verdicts.events[0]!.secrets).toBeUndefined()
      }
    }
  }, 60_000)

  it('should not restore this request’s own stand-in once the model altered a character of it', async () => {
    const { upstream, leaker, verdicts } = rig()
    for (const name of ['openai-key', 'card-number', 'private-key', 'jwt']) {
      const prompt = secretPrompt(600, [name])
      let altered = ''
      const got = await leaker(
        () => {
          const own = ownCanary(upstream.sent.at(-1)!)!
          const [standIn] = standInsOf(userTextOf(upstream.sent.at(-1)!).slice(3), prompt)
          // A character in the middle changed (a digit for a digit, a letter for a letter).
          const at = standIn!.length >> 1
          const c = standIn![at]!
          const swap = /[0-9]/.test(c) ? String((Number(c) + 1) % 10) : c === 'x' ? 'y' : 'x'
          altered = standIn!.slice(0, at) + swap + standIn!.slice(at + 1)
          return { content: `${own}\nIt was ${altered}.` }
        },
        false,
        `A: ${prompt.text}`,
      )
      verdicts.clear()
      expect(got.code).toBeUndefined()
      expect(channelsOf(got.body).content).toBe(`It was ${altered}.`)
      expect(valuesIn(got.body, [prompt.values[0]!.value])).toEqual([])
    }
  })

  it('should give a client pasting another tenant’s stand-in no one’s value', async () => {
    const { victim, upstream, leaker } = rig()
    for (const name of ['openai-key', 'card-number', 'private-key', 'url-password']) {
      const b = secretPrompt(700, [name])
      const [bStandIn] = await victim(b)
      for (const stream of [false, true]) {
        // A pastes B's stand-in as if it were text of its own; the model repeats A's prompt.
        const got = await leaker(
          (own) => ({ content: `${own}\n${userTextOf(upstream.sent.at(-1)!)}` }),
          stream,
          `A: please check ${bStandIn} for me`,
        )
        // A gets back what it wrote — B's stand-in, never B's value — and no quarantine: a stand-in
        // the request's own prompt holds is the client's text, not a leak. (A PEM stand-in is taken
        // for a private key and substituted again, then restored: the same text either way.)
        expect(got.code).toBeUndefined()
        expect(channelsOf(got.body).content).toBe(`A: please check ${bStandIn} for me`)
        expect(valuesIn(got.body, [b.values[0]!.value])).toEqual([])
      }
    }
  })

  it('should give a client pasting its own earlier request’s stand-in no value back', async () => {
    const { upstream, leaker } = rig()
    const prompt = secretPrompt(800, ['anthropic-key', 'iban'])
    await leaker((own) => ({ content: `${own}\nnoted` }), false, `A: ${prompt.text}`)
    const earlier = standInsOf(userTextOf(upstream.sent.at(-1)!).slice(3), prompt)
    for (const standIn of earlier) {
      const got = await leaker(
        (own) => ({ content: `${own}\n${userTextOf(upstream.sent.at(-1)!)}` }),
        false,
        `A: what is ${standIn}?`,
      )
      expect(
        valuesIn(
          got.body,
          prompt.values.map((v) => v.value),
        ),
      ).toEqual([])
    }
  })
})

describe('against the leaking simulator', () => {
  /** A binding that keeps every inputs object the engine was sent. */
  function recorded(engine: SimEngine): AiRunner & { sent: Record<string, unknown>[] } {
    const binding = engine.binding('account')
    const out = {
      sent: [] as Record<string, unknown>[],
      run: (model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>) => {
        out.sent.push(inputs)
        return binding.run(model, inputs, options)
      },
    }
    return out as AiRunner & { sent: Record<string, unknown>[] }
  }

  /** B's document with a secret line after every 12 ledger lines (B's lines quotable, under 90 chars). */
  function victimText(seed: number): { text: string; values: string[] } {
    const names = GENERATOR_NAMES.filter((n) => !n.startsWith('private-key'))
    const prompt = secretPrompt(seed, names)
    const ledger = document('TENANT-B', 4_000).split('\n')
    const secretLines = prompt.text.split('\n')
    const lines: string[] = []
    ledger.forEach((line, i) => {
      lines.push(line)
      if (i % 12 === 11 && secretLines.length > 0) lines.push(secretLines.shift()!)
    })
    lines.push(...secretLines)
    return { text: lines.join('\n'), values: prompt.values.map((v) => v.value) }
  }

  /** A's document sized to `tokens` in the engine's own tokenizer (as test/support/leak-scenario.ts does). */
  async function documentOf(engine: SimEngine, tokens: number): Promise<string> {
    const probe = await engine.countTokens(chat(document('TENANT-A', tokens)))
    return document('TENANT-A', Math.round((tokens * tokens) / probe))
  }

  for (const [surfaceName, surface] of SURFACES) {
    for (const mode of ['pd-abort-leak', 'stale-pages'] as const) {
      for (const stream of [false, true]) {
        it(`should keep B's secrets from the engine and from A (${surfaceName}, ${mode}, ${stream ? 'stream' : 'whole'})`, async () => {
          const clock = new VirtualClock()
          const engine = new SimEngine({ ...LEAK.sim, mode: 'fixed' }, { clock })
          const binding = recorded(engine)
          const quarantine = new MemoryQuarantineStore()
          const verdicts = recordVerdicts()
          const send = surface(binding, {
            secret: LEAK.secret,
            models: { [LEAK.model]: LEAK.wrongProfile },
            secrets: SUBSTITUTE_ALL,
            quarantine: { store: quarantine },
            hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
            timing: { minEvidenceMs: 5 },
          })
          const b = victimText(900)
          const bGot = await send('tenant-b', LEAK.model, chat(b.text, { stream }))
          expect(bGot.status).toBe(200)
          expect(bGot.text).toContain('TENANT-B')

          engine.configure({ mode })
          const aTokens = mode === 'pd-abort-leak' ? 12_000 : 5_000
          const a = await send(
            'tenant-a',
            LEAK.model,
            chat(await documentOf(engine, aTokens), { stream }),
          )
          // A never gets B's values (nor B's stand-ins, nor B's text): its answer is withheld.
          expect(valuesIn(a.body, b.values)).toEqual([])
          expect(a.text).not.toContain('TENANT-B')
          expect(a.code).toBe('response_quarantined')
          // B's values never reached the engine, in any request of either tenant.
          expect(binding.sent.length).toBeGreaterThanOrEqual(2)
          expect(valuesIn(binding.sent, b.values)).toEqual([])
          // The incident holds no value of B's.
          const record = await quarantine.get(a.incidentId!)
          expect(record?.tenant).toBe('tenant-a')
          expect(valuesIn(record, b.values)).toEqual([])
          expect(valuesIn(verdicts.events, b.values)).toEqual([])
        }, 30_000)
      }
    }
  }
})

describe('another request’s stand-in under observe', () => {
  for (const stream of [false, true]) {
    it(`should withhold it with every check observed, alone or beside a missing echo (${stream ? 'stream' : 'whole'})`, async () => {
      const observe = { content: true, timing: true, echo: true }
      for (const echoes of [true, false]) {
        const { victim, leaker, quarantine, verdicts } = rig({ observe })
        const prompt = secretPrompt(7, ['openai-key'])
        const [standIn] = await victim(prompt)
        verdicts.clear()
        const got = await leaker(
          (own) => ({ deltas: [echoes ? `${own}\n` : '', 'From the notes: ', standIn!, ' done.'] }),
          stream,
        )
        // Proof is enforced whatever the mode: withheld, recorded as a withheld answer.
        const record = await expectStandInIncident(got, quarantine, 'openai-key')
        expect(record.observed).toBeUndefined()
        expect(standInsIn(readable(got.body), [standIn!])).toEqual([])
        expect(valuesIn(got.body, [prompt.values[0]!.value])).toEqual([])
        expect(verdicts.of('would_block')).toEqual([])
      }
    })
  }
})
