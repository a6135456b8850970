/**
 * @module Secrets in streams split anywhere: the upstream's SSE bytes cut at every byte offset, and
 * every stand-in cut across SSE events at every character position (and one character per event). The
 * client always gets the values — never a stand-in, never half of one.
 */
import { describe, expect, it } from 'vitest'
import { MemoryQuarantineStore } from '../../src'
import { chat } from '../support/prompts'
import {
  channelsOf,
  cutText,
  directThrough,
  GENERATOR_NAMES,
  MODEL,
  models,
  ownCanary,
  readable,
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
import { direct, middleware, SURFACES, type Surface } from '../support/surfaces'
import { captureWarnings, recordVerdicts } from '../support/verdicts'

// Every test builds guards of its own: guardAi's notice of many option sets is expected here.
captureWarnings(/more than \d+ different option sets/)

type Mode = 'text' | 'tools' | 'json'

/**
 * Where the stand-ins lie in the text the model quotes, found from the prompt's literals (their
 * start and end in `quoted`).
 */
function spans(quoted: string, prompt: SecretPrompt): { start: number; end: number }[] {
  const standIns = standInsOf(quoted, prompt)
  const out: { start: number; end: number }[] = []
  let at = 0
  standIns.forEach((s, i) => {
    at = quoted.indexOf(s, at + (i === 0 ? 0 : 1))
    out.push({ start: at, end: at + s.length })
  })
  return out
}

/**
 * The quoting model of one mode, its quoted text cut at `cutAt(quotedText, spans)` character
 * positions (positions in the text the model writes in that channel: for JSON channels, the JSON).
 */
function quoting(
  mode: Mode,
  prompt: SecretPrompt,
  cutAt: (text: string, offset: number, spans: { start: number; end: number }[]) => number[],
  reasoning = true,
) {
  return scripted((inputs) => {
    const own = ownCanary(inputs)
    const quoted = userTextOf(inputs)
    const where = spans(quoted, prompt)
    if (mode === 'text') {
      const thought = `Quoting: ${quoted}`
      const content = `${own}\n${quoted}`
      return {
        deltas: [
          ...(reasoning ? cutText(thought, cutAt(thought, 'Quoting: '.length, where)) : []).map(
            (r) => ({ reasoning_content: r }),
          ),
          ...cutText(content, cutAt(content, own!.length + 1, where)).map((c) => ({ content: c })),
        ],
      }
    }
    // Inside JSON: the stand-ins' positions in the JSON text are found by escaping what precedes them.
    const json = JSON.stringify(quoted)
    const jsonWhere = where.map(({ start, end }) => ({
      start: JSON.stringify(quoted.slice(0, start)).length - 1,
      end: JSON.stringify(quoted.slice(0, end)).length - 1,
    }))
    if (mode === 'tools') {
      const args = `{"text":${json}}`
      return { deltas: toolDeltas(cutText(args, cutAt(args, '{"text":'.length, jsonWhere))) }
    }
    const head = `{"guard_echo":"${own}","text":`
    const content = `${head}${json}}`
    return {
      deltas: cutText(content, cutAt(content, head.length, jsonWhere)).map((c) => ({ content: c })),
    }
  })
}

function request(mode: Mode, text: string): Record<string, unknown> {
  if (mode === 'tools') return chat(text, { stream: true, tools: TOOLS })
  if (mode === 'json') return chat(text, { stream: true, response_format: { type: 'json_object' } })
  return chat(text, { stream: true })
}

/** Asserts the client got exactly the prompt back in every channel the mode writes. */
function expectValuesBack(mode: Mode, body: string, prompt: SecretPrompt, standIns: string[]) {
  const channels = channelsOf(body)
  if (mode === 'text') {
    expect(channels.content).toBe(prompt.text)
    if (channels.reasoning !== '') expect(channels.reasoning).toBe(`Quoting: ${prompt.text}`)
  } else if (mode === 'tools') {
    expect(JSON.parse(channels.tools[0]!)).toEqual({ text: prompt.text })
  } else {
    expect(JSON.parse(channels.content)).toEqual({ text: prompt.text })
  }
  expect(standInsIn(readable(body), standIns)).toEqual([])
}

describe('stand-ins split across SSE events at every character position', () => {
  for (const [surfaceName, surface] of SURFACES) {
    for (const mode of ['text', 'tools', 'json'] as const) {
      it(`should restore every value, each stand-in cut at character p for every p (${surfaceName}, ${mode})`, async () => {
        const prompt = secretPrompt(11)
        let p = 1
        const upstream = quoting(mode, prompt, (_text, offset, where) =>
          where.map(({ start }) => offset + start + p),
        )
        const verdicts = recordVerdicts()
        const send = surface(upstream, {
          secret: SECRET,
          models,
          secrets: SUBSTITUTE_ALL,
          hooks: { onVerdict: verdicts.onVerdict },
        })
        // The longest stand-in bounds p: past a stand-in's end the cut falls in the text after it.
        const first = await send('tenant-a', MODEL, request(mode, prompt.text))
        const longest = Math.max(
          ...standInsOf(userTextOf(upstream.sent[0]!), prompt).map((s) => s.length),
        )
        expect(first.status).toBe(200)
        for (p = 1; p < longest + 2; p++) {
          upstream.sent.length = 0
          const got = await send('tenant-a', MODEL, request(mode, prompt.text))
          const standIns = standInsOf(userTextOf(upstream.sent[0]!), prompt)
          expect(got.code).toBeUndefined()
          expectValuesBack(mode, got.body, prompt, standIns)
        }
        expect(
          valuesIn(
            upstream.sent,
            prompt.values.map((v) => v.value),
          ),
        ).toEqual([])
        expect(verdicts.events.every((v) => v.action === 'release')).toBe(true)
      }, 60_000)
    }
  }

  it('should restore every value when every character is an event of its own', async () => {
    for (const mode of ['text', 'tools', 'json'] as const) {
      const prompt = secretPrompt(12)
      const upstream = quoting(mode, prompt, (text, offset) =>
        Array.from({ length: text.length - offset }, (_, i) => offset + i),
      )
      const send = direct(upstream, { secret: SECRET, models, secrets: SUBSTITUTE_ALL })
      const got = await send('tenant-a', MODEL, request(mode, prompt.text))
      const standIns = standInsOf(userTextOf(upstream.sent[0]!), prompt)
      expect(got.code).toBeUndefined()
      expectValuesBack(mode, got.body, prompt, standIns)
    }
  }, 60_000)
})

describe('the upstream’s bytes cut at every offset', () => {
  /**
   * A content-only stream of `prompt` quoted, each stand-in cut across two events at its middle; the
   * bytes cut at `cuts(length, run)`, run after run, until every offset was a cut. Returns the runs.
   */
  async function everyOffset(
    prompt: SecretPrompt,
    cutsOf: (length: number, run: number) => number[] | undefined,
    surface: Surface = direct,
  ): Promise<{ runs: number; length: number }> {
    // No reasoning: the content alone carries every stand-in, so the body stays short.
    const upstream = quoting(
      'text',
      prompt,
      (_text, offset, where) =>
        where.map(({ start, end }) => offset + Math.floor((start + end) / 2)),
      false,
    )
    const verdicts = recordVerdicts()
    const send = surface(upstream, {
      secret: SECRET,
      models,
      secrets: SUBSTITUTE_ALL,
      hooks: { onVerdict: verdicts.onVerdict },
    })
    await send('tenant-a', MODEL, request('text', prompt.text))
    const length = upstream.lastBody!.length
    let runs = 0
    for (let cuts = cutsOf(length, 0); cuts; cuts = cutsOf(length, runs)) {
      upstream.cuts = cuts
      upstream.sent.length = 0
      const got = await send('tenant-a', MODEL, request('text', prompt.text))
      const standIns = standInsOf(userTextOf(upstream.sent[0]!), prompt)
      expect(got.code).toBeUndefined()
      expectValuesBack('text', got.body, prompt, standIns)
      runs++
    }
    expect(verdicts.events.every((v) => v.action === 'release')).toBe(true)
    return { runs, length }
  }

  it('should restore every value with the bytes in two chunks cut at every offset (a full-layout key and a grouped card)', async () => {
    const prompt = secretPrompt(14, ['openai-key', 'card-number'])
    const { runs, length } = await everyOffset(prompt, (length, run) =>
      run <= length ? [run] : undefined,
    )
    expect(runs).toBe(length + 1)
  }, 60_000)

  it('should do the same through the middleware', async () => {
    const prompt = secretPrompt(14, ['openai-key', 'card-number'])
    const { runs, length } = await everyOffset(
      prompt,
      (length, run) => (run <= length ? [run] : undefined),
      middleware,
    )
    expect(runs).toBe(length + 1)
  }, 60_000)

  it('should restore every value of every kind with every byte offset a cut (four cuts a run)', async () => {
    const prompt = secretPrompt(13)
    // Four cuts a quarter of the body apart, moved one byte a run: every offset is a cut once.
    const { runs, length } = await everyOffset(prompt, (length, run) => {
      const quarter = Math.ceil(length / 4)
      return run < quarter ? [0, 1, 2, 3].map((k) => run + k * quarter) : undefined
    })
    expect(runs).toBe(Math.ceil(length / 4))
  }, 60_000)
})

describe('under streamRelease: async (released before the proof)', () => {
  it('should restore this request’s stand-ins and stop another’s, one event a chunk, every kind', async () => {
    const quarantine = new MemoryQuarantineStore()
    for (const [i, name] of GENERATOR_NAMES.entries()) {
      const prompt = secretPrompt(30 + i, [name])
      let p = 1
      let mode: 'own' | 'b' | 'a' = 'own'
      let bStandIn = ''
      const upstream = scripted((inputs) => {
        const own = ownCanary(inputs)
        const [s] = mode === 'a' ? [bStandIn] : standInsOf(userTextOf(inputs), prompt)
        if (mode === 'b') {
          bStandIn = s!
          return { message: { content: `${own}\nok` } }
        }
        return {
          deltas: [
            { reasoning_content: 'Thinking first. ' },
            { content: `${own}\nIt is ` },
            ...cutText(`${s} ok.`, [p]).map((content) => ({ content })),
          ],
        }
      })
      upstream.eventCuts = true
      upstream.pacedMs = 0
      const send = directThrough(upstream, {
        secret: SECRET,
        models,
        secrets: SUBSTITUTE_ALL,
        stream: { release: 'async' },
        quarantine: { store: quarantine },
      })
      for (p = 2; p < 60; p += 19) {
        const got = await send('tenant-a', MODEL, chat(prompt.text, { stream: true }))
        expect(got.code).toBeUndefined()
        expect(channelsOf(got.body).content).toBe(`It is ${prompt.values[0]!.value} ok.`)
      }
      mode = 'b'
      await send('tenant-b', MODEL, chat(prompt.text))
      mode = 'a'
      for (p = 2; p < 60; p += 19) {
        const got = await send('tenant-a', MODEL, chat('A: hi', { stream: true }))
        expect(got.code).toBe('response_quarantined')
        expect(standInsIn(readable(got.body), [bStandIn])).toEqual([])
        expect('It is '.startsWith(channelsOf(got.body).content)).toBe(true)
      }
    }
  }, 60_000)
})

describe('an operator pattern’s stand-in split at every character', () => {
  it('should restore its value wherever the events cut it', async () => {
    const patterns = [
      { name: 'acme-id', pattern: 'ACME-[0-9]{8}-[A-Z]{4}' },
      { name: 'acme-token', pattern: 'acme_[a-z0-9]{32}' },
      // A class narrower than the stand-in keeps (hex): the request's own stand-in is still restored.
      { name: 'hex-key', pattern: 'hk[0-9a-f]{30}' },
    ]
    for (const [kind, value] of [
      ['acme-id', 'ACME-12345678-QWER'],
      ['acme-token', 'acme_0123456789abcdefghijklmnopqrstuv'],
      ['hex-key', 'hk0123456789abcdef0123456789abcd'],
    ] as const) {
      const prompt: SecretPrompt = {
        text: `Record: ${value} done.`,
        values: [{ kind, value, line: 'Record: $ done.' }],
        literals: ['Record: ', ' done.'],
      }
      let p = 1
      const upstream = quoting('text', prompt, (_text, offset, where) =>
        where.map(({ start }) => offset + start + p),
      )
      const send = direct(upstream, {
        secret: SECRET,
        models,
        secrets: { ...SUBSTITUTE_ALL, patterns },
      })
      for (p = 1; p <= value.length; p++) {
        upstream.sent.length = 0
        const got = await send('tenant-a', MODEL, request('text', prompt.text))
        expect(got.code).toBeUndefined()
        expectValuesBack(
          'text',
          got.body,
          prompt,
          standInsOf(userTextOf(upstream.sent[0]!), prompt),
        )
      }
      expect(valuesIn(upstream.sent, [value])).toEqual([])
    }
  })
})

describe('a stand-in split across a channel’s pause', () => {
  // Reported as a bug; now a documented limit (docs/secrets.md, Limits), kept failing so a fix
  // shows. One event a chunk: a stand-in of this request begun in one channel (reasoning, or tool
  // call 0), then an event of another channel (content, or tool call 1), then the rest of the
  // stand-in. The release stage judges a paused channel to its end (src/core/release/release-stream.ts
  // #judgeStandIns: `final || paused`) and releases its first half before the rest exists, so the
  // client gets the stand-in in two halves and never its value (12eea33 catches another request's
  // stand-in split this way). Expected: the value, as when the events arrive together.
  const interleaved = (name: string, tools: boolean) => {
    const prompt = secretPrompt(21, [name])
    const upstream = scripted((inputs) => {
      const own = ownCanary(inputs)
      const [s] = standInsOf(userTextOf(inputs), prompt)
      if (tools) {
        const first = JSON.stringify({ text: `x ${s} y` })
        const second = JSON.stringify({ text: 'another call' })
        return {
          deltas: [
            ...toolDeltas([first.slice(0, 15)]),
            {
              tool_calls: [
                {
                  index: 1,
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'save', arguments: second.slice(0, 5) },
                },
              ],
            },
            { tool_calls: [{ index: 0, function: { arguments: first.slice(15) } }] },
            { tool_calls: [{ index: 1, function: { arguments: second.slice(5) } }] },
          ],
        }
      }
      return {
        deltas: [
          { reasoning_content: `think ${s!.slice(0, 7)}` },
          { content: `${own}\nanswer ` },
          { reasoning_content: `${s!.slice(7)} more` },
          { content: ' done' },
        ],
      }
    })
    upstream.eventCuts = true
    upstream.pacedMs = 1
    return { prompt, upstream }
  }

  for (const name of ['openai-key', 'card-number', 'private-key']) {
    it.fails(`should restore it in the reasoning when content came between its halves (${name})`, async () => {
      const { prompt, upstream } = interleaved(name, false)
      const send = direct(upstream, { secret: SECRET, models, secrets: SUBSTITUTE_ALL })
      const got = await send('tenant-a', MODEL, chat(prompt.text, { stream: true }))
      expect(channelsOf(got.body).reasoning).toBe(`think ${prompt.values[0]!.value} more`)
    })

    it.fails(`should restore it in a tool call when another call’s arguments came between its halves (${name})`, async () => {
      const { prompt, upstream } = interleaved(name, true)
      const send = direct(upstream, { secret: SECRET, models, secrets: SUBSTITUTE_ALL })
      const got = await send('tenant-a', MODEL, chat(prompt.text, { stream: true, tools: TOOLS }))
      expect(JSON.parse(channelsOf(got.body).tools[0]!)).toEqual({
        text: `x ${prompt.values[0]!.value} y`,
      })
    })
  }
})
