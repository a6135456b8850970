/**
 * @module Shared pieces of the secrets property tests: prompts holding a secret of every
 * kind, an upstream that answers by quoting the stand-ins it received (in content, reasoning, tool-call
 * arguments or a JSON-mode object) with its SSE bytes cut where a test says, and readers of what the
 * upstream was sent and what a client was delivered.
 */

import { expect } from 'vitest'
import { GuardError, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import type { StandInBook } from '../../src/plugins/secrets'
import { standInEvidence } from '../../src/plugins/secrets/stand-in-evidence'
import { GENERATORS, type Generated, rng } from '../secrets/generate'
import { sseText } from './prompts'
import { type Delivered, middlewareApp, type Surface } from './surfaces'

export const MODEL = '@cf/zai-org/glm-5.3'
export const SECRET = 'secrets-property-test-canary-secret-0123456789abcdef'
/** A profile fast enough that an answering test upstream is never a timing signal. */
export const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }
/** Every generator: each built-in kind, GitHub's two formats and PEM blocks raw and JSON-escaped. */
export const GENERATOR_NAMES = Object.keys(GENERATORS)
/** Both policies substitute: the property tests cover the medium kinds too. */
export const SUBSTITUTE_ALL = { high: 'substitute', medium: 'substitute' } as const

/**
 * A prompt of realistic lines, each holding one generated secret: `text` is
 * `literals[0] + values[0].value + literals[1] + … + literals[n]`, so the stand-ins the upstream gets
 * can be read back in order between the same literals.
 */
export interface SecretPrompt {
  text: string
  values: Generated[]
  literals: string[]
}

/**
 * One secret of each named generator (all of them by default), seeded, one line each.
 *
 * @example
 * const { text, values } = secretPrompt(3)
 */
export function secretPrompt(
  seed: number,
  names: readonly string[] = GENERATOR_NAMES,
): SecretPrompt {
  const r = rng(seed)
  const values = names.map((name) => GENERATORS[name]!(r))
  const literals: string[] = []
  let pending = `Notes for the deploy (seed ${seed}):\n`
  for (const v of values) {
    const at = v.line.indexOf('$')
    literals.push(pending + v.line.slice(0, at))
    pending = `${v.line.slice(at + 1)}\n`
  }
  literals.push(`${pending}That is all.`)
  let text = literals[0]!
  values.forEach((v, i) => {
    text += v.value + literals[i + 1]!
  })
  return { text, values, literals }
}

/**
 * The stand-ins in `received` (the prompt as the upstream got it), in the order of `prompt.values`:
 * whatever lies between consecutive literals. Throws when the literals are not there in order.
 */
export function standInsOf(received: string, prompt: SecretPrompt): string[] {
  const { literals } = prompt
  if (!received.startsWith(literals[0]!)) throw new Error('the prompt does not start as written')
  const out: string[] = []
  let at = literals[0]!.length
  for (let i = 1; i < literals.length; i++) {
    const next =
      i === literals.length - 1
        ? received.length - literals[i]!.length
        : received.indexOf(literals[i]!, at + 1)
    if (next < at || received.slice(next, next + literals[i]!.length) !== literals[i]) {
      throw new Error(`literal ${i} not found after the stand-in of ${prompt.values[i - 1]!.kind}`)
    }
    out.push(received.slice(at, next))
    at = next + literals[i]!.length
  }
  return out
}

/** The canary the guard's echo directive asks for (text or JSON mode), if one was injected. */
export function ownCanary(inputs: Record<string, unknown>): string | undefined {
  const text = lastUserText(inputs)
  const match = [...text.matchAll(/(?:with the code |"guard_echo": ")(cnry_[0-9a-z]{24})/g)].at(-1)
  return match?.[1]
}

/** Whether the upstream was asked for the JSON-mode echo member. */
export function jsonEcho(inputs: Record<string, unknown>): boolean {
  return lastUserText(inputs).includes('Start your JSON object with the member "guard_echo"')
}

/** The last user message's text as the upstream got it (string content or its text parts). */
export function lastUserText(inputs: Record<string, unknown>): string {
  const messages = (inputs.messages ?? []) as { role: string; content: unknown }[]
  const last = [...messages].reverse().find((m) => m.role === 'user')
  if (!last) return typeof inputs.prompt === 'string' ? inputs.prompt : ''
  if (typeof last.content === 'string') return last.content
  if (Array.isArray(last.content)) {
    return last.content
      .map((p: { text?: unknown }) => (typeof p.text === 'string' ? p.text : ''))
      .join('')
  }
  return ''
}

/**
 * The client's text of the last user turn as the upstream got it: the tenant's prefix marker (a
 * one-message prompt starts with it) and the guard's echo directive cut off.
 */
export function userTextOf(inputs: Record<string, unknown>): string {
  const text = lastUserText(inputs).replace(/^cnry_[0-9a-z]{24} /, '')
  const cut = text.search(/\n\n(?:Begin your reply with the code|Start your JSON object with)/)
  return cut === -1 ? text : text.slice(0, cut)
}

/** Every string anywhere in a JSON value (keys included). */
export function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value)
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out)
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push(k)
      stringsOf(v, out)
    }
  }
  return out
}

/**
 * The forms of a value to look for in anything sent or logged: as written, JSON-escaped, and for
 * grouped numbers (cards, IBANs) the bare digits.
 */
export function formsOf(value: string): string[] {
  const forms = new Set([value, escapeJson(value)])
  if (/^[0-9A-Z][0-9A-Z -]+$/.test(value)) forms.add(value.replace(/[ -]/g, ''))
  return [...forms]
}

/**
 * Which of `values` appear anywhere in `sent` (the inputs of every upstream attempt): in any of its
 * strings, or in its JSON text — in any form of {@link formsOf}. Empty: none reached the upstream.
 */
export function valuesIn(sent: unknown, values: readonly string[]): string[] {
  const strings = stringsOf(sent)
  const json = JSON.stringify(sent)
  return values.filter((v) =>
    formsOf(v).some((form) => json.includes(form) || strings.some((s) => s.includes(form))),
  )
}

/**
 * What identifies a stand-in when looking for it in delivered or logged text: the whole of it, and
 * its middle half (PEM and JWT stand-ins keep their original BEGIN line or header, so their start is
 * shared with the value), each also JSON-escaped.
 */
export function standInForms(standIn: string): string[] {
  const core =
    standIn.length < 16
      ? standIn
      : standIn.slice(Math.floor(standIn.length / 4), Math.ceil((standIn.length * 3) / 4))
  return [...new Set([standIn, core, escapeJson(standIn), escapeJson(core)])]
}

/**
 * Everything a client could read in a delivered body: each channel joined across events (a stand-in
 * split over events is whole here), then the raw bytes.
 */
export function readable(body: string): string {
  const { content, reasoning, tools } = channelsOf(body)
  return [content, reasoning, ...tools, body].join('\n')
}

/** Which of `standIns` appear in `text` in any form of {@link standInForms}. */
export function standInsIn(text: string, standIns: readonly string[]): string[] {
  return standIns.filter((s) => standInForms(s).some((form) => text.includes(form)))
}

/** One SSE chunk of a chat stream. */
export function chunk(delta: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`
}

/** The end of a chat stream: the finish chunk, a usage chunk, `[DONE]`. */
export const ENDING = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [], usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 } })}\n\ndata: [DONE]\n\n`

/** What a scripted answer is: SSE events (the deltas) or a whole message. */
export type Script = { deltas: Record<string, unknown>[] } | { message: Record<string, unknown> }

/**
 * An upstream whose answer is `answer(inputs, call)` — deltas streamed (to a streaming request) as SSE
 * bytes, cut into chunks at `cuts` (byte offsets, set between runs), or a whole message. It keeps
 * every inputs object it was sent (every attempt) in `sent`.
 */
export interface ScriptedUpstream extends AiRunner {
  sent: Record<string, unknown>[]
  /** Byte offsets to cut the next SSE bodies at (in order; out-of-range ones ignored). */
  cuts: number[]
  /** The SSE bytes of the last streamed answer. */
  lastBody: Uint8Array | undefined
  /**
   * When set, each chunk is handed over only when read, this many milliseconds after the previous
   * one: what came before a cut is released before what follows it arrives. @default undefined
   */
  pacedMs: number | undefined
  /** When true, the bytes are also cut after every SSE event (one event a chunk). */
  eventCuts: boolean
}

/**
 * @example
 * const up = scripted((inputs) => ({ deltas: [{ content: `${ownCanary(inputs)}\nhi` }] }))
 */
export function scripted(
  answer: (inputs: Record<string, unknown>, call: number) => Script,
): ScriptedUpstream {
  const upstream: ScriptedUpstream = {
    sent: [],
    cuts: [],
    lastBody: undefined,
    pacedMs: undefined,
    eventCuts: false,
    run: async (_model, inputs) => {
      upstream.sent.push(inputs)
      const script = answer(inputs, upstream.sent.length - 1)
      if ('message' in script) {
        return {
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: MODEL,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', ...script.message },
              finish_reason: script.message.tool_calls ? 'tool_calls' : 'stop',
            },
          ],
          usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 },
        }
      }
      const [head, ...rest] = script.deltas
      const body =
        chunk({ role: 'assistant', ...(head ?? {}) }) + rest.map((d) => chunk(d)).join('') + ENDING
      const bytes = new TextEncoder().encode(body)
      upstream.lastBody = bytes
      const boundaries: number[] = []
      if (upstream.eventCuts) {
        const utf8 = new TextEncoder()
        for (let at = body.indexOf('\n\n'); at !== -1; at = body.indexOf('\n\n', at + 2)) {
          boundaries.push(utf8.encode(body.slice(0, at + 2)).length)
        }
      }
      const cuts = [...new Set([...upstream.cuts, ...boundaries])]
        .filter((c) => c > 0 && c < bytes.length)
        .sort((a, b) => a - b)
      const chunks: Uint8Array[] = []
      let at = 0
      for (const cut of [...cuts, bytes.length]) {
        if (cut > at) chunks.push(bytes.slice(at, cut))
        at = cut
      }
      const paced = upstream.pacedMs
      if (paced !== undefined) {
        let next = 0
        return new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (next > 0) await new Promise((resolve) => setTimeout(resolve, paced))
            if (next < chunks.length) controller.enqueue(chunks[next++]!)
            else controller.close()
          },
        })
      }
      return new ReadableStream<Uint8Array>({
        start(controller) {
          for (const c of chunks) controller.enqueue(c)
          controller.close()
        },
      })
    },
  }
  return upstream
}

/** What a client got per channel: content, reasoning, each tool call's arguments. */
export interface Channels {
  content: string
  reasoning: string
  tools: string[]
}

/**
 * The channels of a delivered body: SSE deltas joined, or a whole answer's message (error bodies
 * give empty channels).
 */
export function channelsOf(body: string): Channels {
  const out: Channels = { content: '', reasoning: '', tools: [] }
  const read = (source: Record<string, unknown> | undefined, streamed: boolean) => {
    if (!source) return
    if (typeof source.content === 'string') out.content += source.content
    if (typeof source.reasoning_content === 'string') out.reasoning += source.reasoning_content
    const calls = source.tool_calls as
      | { index?: number; function?: { arguments?: unknown } }[]
      | undefined
    if (Array.isArray(calls)) {
      calls.forEach((call, k) => {
        const index = streamed ? (call.index ?? 0) : k
        const args = call.function?.arguments
        if (typeof args === 'string') out.tools[index] = (out.tools[index] ?? '') + args
      })
    }
  }
  if (body.startsWith('data:') || body.includes('\ndata:')) {
    for (const event of sseText(body).events) {
      read((event as { choices?: { delta?: Record<string, unknown> }[] }).choices?.[0]?.delta, true)
    }
    return out
  }
  try {
    const json = JSON.parse(body) as { choices?: { message?: Record<string, unknown> }[] }
    read(json.choices?.[0]?.message, false)
  } catch {
    // not JSON: no channels
  }
  return out
}

/**
 * `text` cut into `parts` at the given character positions (sorted, in range), as deltas of one
 * channel; `key` is the delta field (`content`, `reasoning_content`).
 */
export function cutText(text: string, positions: readonly number[]): string[] {
  const cuts = [...new Set(positions)].filter((p) => p > 0 && p < text.length).sort((a, b) => a - b)
  const out: string[] = []
  let at = 0
  for (const p of [...cuts, text.length]) {
    out.push(text.slice(at, p))
    at = p
  }
  return out
}

/** A tools definition the model may call: `save({ text })`. */
export const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'save',
      description: 'Saves a note',
      parameters: { type: 'object', properties: { text: { type: 'string' } } },
    },
  },
]

/** Tool-call deltas: the call's head, then its arguments in the pieces given. */
export function toolDeltas(pieces: readonly string[]): Record<string, unknown>[] {
  return pieces.map((piece, i) => ({
    tool_calls: [
      i === 0
        ? { index: 0, id: 'call_0', type: 'function', function: { name: 'save', arguments: piece } }
        : { index: 0, function: { arguments: piece } },
    ],
  }))
}

/** Every position where a needle occurs in a haystack. */
export function positionsOf(haystack: string, needle: string): number[] {
  const out: number[] = []
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    out.push(at)
  }
  return out
}

/** No value and no stand-in (see standInForms) in what was logged. */
export function expectNoSecretIn(
  logged: unknown,
  values: readonly string[],
  standIns: readonly string[],
): void {
  expect(valuesIn(logged, values)).toEqual([])
  expect(standInsIn(JSON.stringify(logged), standIns)).toEqual([])
}

/**
 * A stream read to its end or its error: the bytes that arrived before the error, and the error's
 * code and incident (a quarantine after release errors the library's stream once its verified bytes
 * are out; the Worker turns that into an error event).
 */
async function readThrough(stream: ReadableStream<Uint8Array>): Promise<Omit<Delivered, 'text'>> {
  const reader = stream.getReader()
  const decoder = new TextDecoder()
  let body = ''
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      body += decoder.decode(next.value, { stream: true })
    }
    return { status: 200, body }
  } catch (error) {
    if (!(error instanceof GuardError)) throw error
    return {
      status: 200,
      body,
      code: error.code,
      ...(error.incidentId ? { incidentId: error.incidentId } : {}),
    }
  }
}

async function refused(error: unknown): Promise<Delivered> {
  if (!(error instanceof GuardError)) throw error
  const body = await error.getResponse().text()
  return {
    status: error.status,
    body,
    text: body,
    code: error.code,
    ...(error.incidentId ? { incidentId: error.incidentId } : {}),
  }
}

/**
 * Like test/support/surfaces.ts `direct`, but a stream that errors after release is delivered as
 * what arrived before the error, with the error's code and incident (status 200: it had begun).
 */
export const directThrough: Surface = (upstream, options) => {
  const runners = new Map<string, ReturnType<typeof guardAi>>()
  return async (tenant, model, inputs) => {
    let ai = runners.get(tenant)
    if (!ai) {
      ai = guardAi(upstream, { ...options, tenant })
      runners.set(tenant, ai)
    }
    let out: unknown
    try {
      out = await ai.run(model, inputs)
    } catch (error) {
      return refused(error)
    }
    if (out instanceof ReadableStream) {
      const got = await readThrough(out as ReadableStream<Uint8Array>)
      return { ...got, text: got.body }
    }
    const body = JSON.stringify(out)
    return { status: 200, body, text: body }
  }
}

/** Like test/support/surfaces.ts `middleware`, reading a stream through its error (see {@link directThrough}). */
export const middlewareThrough: Surface = (upstream, options) => {
  const app = middlewareApp(upstream, options)
  return async (tenant, model, inputs) => {
    const res = await app.request(`/chat/${model}`, {
      method: 'POST',
      headers: { 'x-user': tenant, 'content-type': 'application/json' },
      body: JSON.stringify(inputs),
    })
    if (res.status >= 400) {
      const body = await res.text()
      const parsed = JSON.parse(body) as { error: { code: string; incident_id?: string } }
      return {
        status: res.status,
        body,
        text: body,
        code: parsed.error.code,
        ...(parsed.error.incident_id ? { incidentId: parsed.error.incident_id } : {}),
      }
    }
    const got = await readThrough(res.body!)
    return { ...got, status: res.status, text: got.body }
  }
}

/** A value as the inside of a JSON string. */
function escapeJson(value: string): string {
  return JSON.stringify(value).slice(1, -1)
}

/**
 * `text` as the whole-answer stage releases it (src/plugins/secrets/stand-in-evidence.ts): this request's
 * stand-ins replaced by their values, escaped as JSON where `json`; another request's stand-in is
 * reported in `foreign`.
 */
export async function restoredAsWhole(
  book: StandInBook,
  text: string,
  json: boolean,
): Promise<{ text: string; foreign: number }> {
  const secrets = { book, inPrompt: () => false, substituted: {}, detected: {} }
  const found = await standInEvidence(secrets, { content: text }, json)
  return { text: found.texts.content ?? '', foreign: found.foreign.length }
}
