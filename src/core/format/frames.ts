/**
 * @module The two Workers AI answer formats (chat-completions chunks and legacy `{response}`), read as
 * text channels and rewritten in the upstream's own format — for streams and for whole answers.
 *
 * Why channels: GLM-5.3 is a reasoning model and reasoning leaks as much as content, and tool-call
 * arguments are model-written text too (another request's text can land in any of them). The
 * guard therefore scans and rewrites every text the model wrote, per channel, and leaves every other
 * field (ids, usage, padding, finish reasons) exactly as the upstream sent it. Shapes it cannot read
 * fail closed as `upstream_error`: text the guard cannot see is text it cannot release.
 */

import { GuardError } from '../errors'
import type { StreamFormat } from '../vocabulary/request-facts'
import type { SseEvent } from './sse'

/** Token accounting as chat-completions upstreams report it. */
export interface Usage {
  prompt_tokens?: number
  completion_tokens?: number
  total_tokens?: number
  prompt_tokens_details?: { cached_tokens?: number } | null
}

/**
 * A stream of model-written text: reasoning, visible content, the arguments of tool call `n`, or any
 * other string field of the answer (`field:<path>`, e.g. `field:choices/0/delta/reasoning`, as vLLM
 * names reasoning, or `message.refusal`). Every string an upstream sends, outside a few metadata keys,
 * is a channel: a leak can land in any of them, and a field the guard did not read is a field it
 * could not verify.
 */
export type Channel = 'reasoning' | 'content' | `tool:${number}` | `field:${string}`

/** One decoded stream event with its texts per channel. */
export interface Frame {
  /** The event as received. */
  event: SseEvent
  /** The event's exact text when it can be re-sent unchanged (see `SseParser`). */
  raw?: string
  /**
   * The upstream chunk that was exactly this event: re-sent unchanged, it goes out as these bytes,
   * not encoded again.
   */
  chunk?: Uint8Array
  /** `data: [DONE]`, the end-of-stream marker. */
  done: boolean
  /**
   * The parsed data: absent for `[DONE]`, and for an event read by its shape (./frame-reader.ts), whose
   * texts were taken out without parsing the rest.
   */
  json?: Record<string, unknown>
  /** Absent for `[DONE]`. */
  format?: StreamFormat
  /** The texts this event carries, per channel (only channels present in the event). */
  texts: Partial<Record<Channel, string>>
  /** `choices[0].finish_reason` (chat), `finish_reason` (legacy), when the event has the key. */
  finishReason?: string | null
  usage?: Usage
  /**
   * An event read by its shape (./frame-reader.ts): where its one text lies, so that the event with
   * that text replaced is written by splicing, not by parsing and serialising it again.
   */
  slot?: TextSlot
}

/**
 * An event's data as `before` + one channel's text as the body of a JSON string + `after` (read so by
 * ./frame-reader.ts). Where {@link withTexts} of that channel alone writes exactly that splice (same
 * keys, same order, same bytes around the text: proved on first use, see {@link splices}), the event
 * with its text replaced is written by splicing, not by parsing and serialising it again.
 */
export interface TextSlot {
  channel: Channel
  before: string
  after: string
  /** Whether the splice holds, once proved; and whether the event with an empty text is blank. */
  splices?: boolean
  blank?: boolean
}

/** Written in a slot to prove it (any string that cannot need escaping). */
const SPLICE_PROBE = 'wag-splice-0c9d'

/**
 * Whether the frame's slot holds: writing another text into it the full way (parse, write, serialise)
 * gives the slot's bytes around that text. Why that proves it for every text: serialising the same
 * object with one string value changed changes that string's token alone; the reader proved that the
 * string in that place is the channel's whole text. Proved once per slot, on its first cut.
 */
function splices(frame: Frame, slot: TextSlot): boolean {
  if (slot.splices !== undefined) return slot.splices
  const { channel, before, after } = slot
  const data = `${before}${SPLICE_PROBE}${after}`
  // The frame's event with the probe for its text: what withTexts reads of it is its data and format.
  const probe: Frame = { event: { data }, done: false, texts: {} }
  if (frame.format !== undefined) probe.format = frame.format
  try {
    slot.splices = withTexts(probe, { [channel]: SPLICE_PROBE }).data === data
  } catch {
    slot.splices = false
  }
  return slot.splices
}

type Json = Record<string, unknown>

/**
 * The channels of a per-channel record that hold a value, typed (`Object.entries` loses the key type).
 *
 * @example
 * for (const [channel, text] of channelEntries(frame.texts)) raw[channel] = (raw[channel] ?? '') + text
 */
export function channelEntries<V>(record: Partial<Record<Channel, V>>): [Channel, V][] {
  return (Object.entries(record) as [Channel, V | undefined][]).filter(
    (entry): entry is [Channel, V] => entry[1] !== undefined,
  )
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function malformed(message: string): GuardError {
  // Never include payload text: it may be another tenant's prompt.
  return new GuardError('upstream_error', message)
}

/** The tool-channel name for tool call index `n`. */
function toolChannel(index: number): Channel {
  return `tool:${index}`
}

/** Index `n` of a `tool:n` channel, or undefined for other channels. */
function toolIndex(channel: Channel): number | undefined {
  if (!channel.startsWith('tool:')) return undefined
  const n = Number(channel.slice(5))
  if (!Number.isInteger(n) || n < 0) throw new Error(`invalid tool channel ${channel}`)
  return n
}

/**
 * A text-bearing value as a string: strings as-is; objects (Workers AI returns JSON-mode answers and
 * some tool arguments as parsed objects) as their JSON text, so a canary inside them is still seen.
 */
function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (value === undefined || value === null) return undefined
  if (typeof value === 'object') return JSON.stringify(value)
  return undefined
}

/** The inverse of {@link asText}: an object-valued field gets its (rewritten) JSON text parsed back. */
function fromText(original: unknown, text: string): unknown {
  if (typeof original !== 'object' || original === null) return text
  try {
    return JSON.parse(text)
  } catch (cause) {
    throw new GuardError('upstream_error', 'A rewritten structured field is no longer JSON.', {
      cause,
    })
  }
}

function usageOf(json: Json): Usage | undefined {
  return isObject(json.usage) ? (json.usage as Usage) : undefined
}

/**
 * The single choice of a chat object. More than one choice fails closed: the guard verifies one
 * answer per request, and an unverified second choice could carry anything.
 */
function onlyChoice(json: Json): Json | undefined {
  const choices = json.choices
  if (!Array.isArray(choices)) throw malformed('The upstream chat answer has no choices array.')
  if (choices.length > 1) throw malformed('The upstream returned more than one choice.')
  const choice = choices[0]
  if (choice === undefined) return undefined
  if (!isObject(choice)) throw malformed('The upstream chat answer has a malformed choice.')
  return choice
}

function detectFormat(json: Json): StreamFormat | undefined {
  if ('choices' in json) return 'chat'
  if ('response' in json || 'tool_calls' in json) return 'legacy'
  return undefined
}

/** Texts of a chat `delta` or `message` (same fields). */
function chatTexts(body: Json): Partial<Record<Channel, string>> {
  const texts: Partial<Record<Channel, string>> = {}
  const reasoning = asText(body.reasoning_content)
  if (reasoning !== undefined) texts.reasoning = reasoning
  const content = asText(body.content)
  if (content !== undefined) texts.content = content
  const calls = body.tool_calls
  if (Array.isArray(calls)) {
    calls.forEach((call, position) => {
      if (!isObject(call)) throw malformed('The upstream returned a malformed tool call.')
      const index = typeof call.index === 'number' ? call.index : position
      const fn = call.function
      if (!isObject(fn)) return
      const args = asText(fn.arguments)
      if (args !== undefined) texts[toolChannel(index)] = (texts[toolChannel(index)] ?? '') + args
    })
  }
  return texts
}

/** Texts of a legacy object: `response`, and `tool_calls[n].arguments`. */
function legacyTexts(json: Json): Partial<Record<Channel, string>> {
  const texts: Partial<Record<Channel, string>> = {}
  const response = asText(json.response)
  if (response !== undefined) texts.content = response
  const calls = json.tool_calls
  if (Array.isArray(calls)) {
    calls.forEach((call, position) => {
      if (!isObject(call)) throw malformed('The upstream returned a malformed tool call.')
      const args = asText(call.arguments)
      if (args !== undefined) texts[toolChannel(position)] = args
    })
  }
  return texts
}

/**
 * Keys whose string values are not model-written (identifiers, names of things the upstream chose),
 * or repeat in every event rather than continue: they are not channels.
 */
const METADATA = new Set([
  'id',
  'object',
  'model',
  'created',
  'system_fingerprint',
  'service_tier',
  'finish_reason',
  'stop_reason',
  'role',
  'type',
  'index',
  'usage',
])

/**
 * Every other string leaf of `json`, as `field:<path>` channels: everything but metadata and the known
 * channels (read by chatTexts / legacyTexts: chat `choices/0/(delta|message)/(reasoning_content|content|
 * tool_calls/n/function/arguments)`, legacy `response` and `tool_calls/n/arguments`, whatever their
 * type). Hot path (every stream event): the known places are skipped by structure, not by matching
 * path strings, and metadata keys before descending.
 */
function fieldTexts(
  json: Json,
  format: StreamFormat | undefined,
): Partial<Record<Channel, string>> {
  const texts: Partial<Record<Channel, string>> = {}
  for (const key in json) {
    if (METADATA.has(key)) continue
    const value = json[key]
    if (format === 'chat' && key === 'choices' && Array.isArray(value)) {
      for (let k = 0; k < value.length; k++) {
        if (k === 0 && isObject(value[0])) choiceFields(value[0], texts)
        else walkFields(value[k], `choices/${k}`, texts)
      }
    } else if (format === 'legacy' && key === 'tool_calls' && Array.isArray(value)) {
      for (let k = 0; k < value.length; k++) {
        walkExcept(value[k], `tool_calls/${k}`, 'arguments', texts)
      }
    } else if (!(format === 'legacy' && key === 'response')) walkFields(value, key, texts)
  }
  return texts
}

/** The fields of the one chat choice, outside its delta's (or message's) known channels. */
function choiceFields(choice: Json, texts: Partial<Record<Channel, string>>): void {
  for (const key in choice) {
    if (METADATA.has(key)) continue
    const value = choice[key]
    const path = `choices/0/${key}`
    if ((key !== 'delta' && key !== 'message') || !isObject(value)) {
      walkFields(value, path, texts)
      continue
    }
    for (const field in value) {
      if (METADATA.has(field) || field === 'reasoning_content' || field === 'content') continue
      const inner = value[field]
      if (field === 'tool_calls' && Array.isArray(inner)) {
        for (let k = 0; k < inner.length; k++)
          toolCallFields(inner[k], `${path}/tool_calls/${k}`, texts)
      } else walkFields(inner, `${path}/${field}`, texts)
    }
  }
}

/** A chat tool call's fields but its arguments (a known channel). */
function toolCallFields(
  call: unknown,
  path: string,
  texts: Partial<Record<Channel, string>>,
): void {
  if (!isObject(call)) {
    walkFields(call, path, texts)
    return
  }
  for (const part in call) {
    if (METADATA.has(part)) continue
    if (part === 'function') walkExcept(call[part], `${path}/function`, 'arguments', texts)
    else walkFields(call[part], `${path}/${part}`, texts)
  }
}

/** An object's fields but one (a known channel), walked. */
function walkExcept(
  value: unknown,
  path: string,
  except: string,
  texts: Partial<Record<Channel, string>>,
): void {
  if (!isObject(value)) {
    walkFields(value, path, texts)
    return
  }
  for (const key in value) {
    if (key !== except && !METADATA.has(key)) walkFields(value[key], `${path}/${key}`, texts)
  }
}

/** Every string leaf under `value` (at `path`), metadata keys skipped. */
function walkFields(value: unknown, path: string, texts: Partial<Record<Channel, string>>): void {
  if (typeof value === 'string') {
    texts[`field:${path}`] = value
    return
  }
  if (value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (let k = 0; k < value.length; k++) walkFields(value[k], `${path}/${k}`, texts)
    return
  }
  for (const key in value as Json) {
    if (!METADATA.has(key)) walkFields((value as Json)[key], `${path}/${key}`, texts)
  }
}

/** Writes `field:<path>` channel texts back into `json` (in place; the caller owns a copy). */
function writeFields(json: Json, texts: Partial<Record<Channel, string>>): void {
  for (const [channel, text] of channelEntries(texts)) {
    if (text === undefined || !channel.startsWith('field:')) continue
    const path = channel.slice('field:'.length).split('/')
    let node: unknown = json
    for (const key of path.slice(0, -1)) node = (node as Record<string, unknown> | undefined)?.[key]
    const last = path.at(-1)!
    if (node === null || typeof node !== 'object' || typeof (node as Json)[last] !== 'string') {
      throw new Error(`no string field at ${channel}`)
    }
    ;(node as Json)[last] = text
  }
}

/**
 * Parse one SSE event of a Workers AI stream. Throws `GuardError('upstream_error')` when the data is
 * neither `[DONE]` nor a JSON object (the message never quotes the payload).
 *
 * @example
 * const frame = parseFrame({ data: '{"response":"Hel"}' })
 * frame.format        // 'legacy'
 * frame.texts.content // 'Hel'
 */
export function parseFrame(event: SseEvent, raw?: string): Frame {
  if (event.data.trim() === '[DONE]') {
    return raw === undefined
      ? { event, done: true, texts: {} }
      : { event, raw, done: true, texts: {} }
  }
  let json: unknown
  try {
    json = JSON.parse(event.data)
  } catch (cause) {
    throw new GuardError(
      'upstream_error',
      'The upstream stream carried an event that is not JSON.',
      {
        cause,
      },
    )
  }
  if (!isObject(json))
    throw malformed('The upstream stream carried an event that is not an object.')
  const frame: Frame = { event, done: false, json, texts: {} }
  if (raw !== undefined) frame.raw = raw
  const usage = usageOf(json)
  if (usage !== undefined) frame.usage = usage
  const format = detectFormat(json)
  if (format === undefined) {
    frame.texts = fieldTexts(json, undefined)
    return frame
  }
  frame.format = format
  if (format === 'chat') {
    const choice = onlyChoice(json)
    if (choice !== undefined) {
      const delta = choice.delta ?? choice.message
      if (delta !== undefined && delta !== null) {
        if (!isObject(delta)) throw malformed('The upstream chat chunk has a malformed delta.')
        frame.texts = chatTexts(delta)
      }
      if ('finish_reason' in choice) frame.finishReason = choice.finish_reason as string | null
    }
  } else {
    frame.texts = legacyTexts(json)
    if ('finish_reason' in json) frame.finishReason = json.finish_reason as string | null
  }
  Object.assign(frame.texts, fieldTexts(json, format))
  return frame
}

/** Write `texts` into a chat `delta`/`message` object in place (the caller owns a copy). */
function writeChat(body: Json, texts: Partial<Record<Channel, string>>): void {
  for (const [channel, text] of channelEntries(texts)) {
    if (text === undefined || channel.startsWith('field:')) continue
    if (channel === 'reasoning') body.reasoning_content = fromText(body.reasoning_content, text)
    else if (channel === 'content') body.content = fromText(body.content, text)
    else {
      const index = toolIndex(channel) as number
      const calls: unknown[] = Array.isArray(body.tool_calls) ? body.tool_calls : []
      body.tool_calls = calls
      const matching = calls.filter(
        (call, position) =>
          isObject(call) && (typeof call.index === 'number' ? call.index : position) === index,
      ) as Json[]
      if (matching.length === 0) {
        calls.push({ index, function: { arguments: text } })
        continue
      }
      // Several entries for one index in a single chunk: the text goes to the first, the rest empty.
      matching.forEach((call, k) => {
        const fn = isObject(call.function) ? call.function : {}
        call.function = fn
        fn.arguments = fromText(fn.arguments, k === 0 ? text : '')
      })
    }
  }
}

/** Write `texts` into a legacy object in place (the caller owns a copy). */
function writeLegacy(json: Json, texts: Partial<Record<Channel, string>>): void {
  for (const [channel, text] of channelEntries(texts)) {
    if (text === undefined || channel.startsWith('field:')) continue
    if (channel === 'content') json.response = fromText(json.response, text)
    else if (channel === 'reasoning') {
      if (text !== '') throw new Error('the legacy format has no reasoning channel')
    } else {
      const index = toolIndex(channel) as number
      const calls = json.tool_calls
      const call = Array.isArray(calls) ? calls[index] : undefined
      if (!isObject(call)) {
        if (text !== '') throw new Error(`the legacy answer has no tool call ${index}`)
        continue
      }
      call.arguments = fromText(call.arguments, text)
    }
  }
}

/**
 * The frame's event with the given channels' text replaced (`''` empties a channel; channels absent
 * from `texts` keep their text); every other field is kept. Used to re-emit held or stripped text in
 * the upstream's own format.
 *
 * @example
 * const frame = parseFrame({ data: '{"response":"cnry_… Hello","p":"abc"}' })
 * withTexts(frame, { content: 'Hello' }) // { data: '{"response":"Hello","p":"abc"}' }
 */
function withTexts(frame: Frame, texts: Partial<Record<Channel, string>>): SseEvent {
  const slot = frame.slot
  const text = slot && slotText(slot, texts)
  if (text !== undefined && splices(frame, slot!)) {
    const { before, after } = slot!
    return { ...frame.event, data: `${before}${JSON.stringify(text).slice(1, -1)}${after}` }
  }
  if (frame.done) {
    if (Object.values(texts).some((t) => t !== undefined && t !== '')) {
      throw new Error('cannot put text into an event that has no JSON')
    }
    return frame.event
  }
  // A fresh copy to write into: the event's own data parsed again — cheaper than cloning a parse, and
  // the one way for a frame read by its shape (./frame-reader.ts), which carries no parsed object.
  const json = JSON.parse(frame.event.data) as Json
  writeFields(json, texts)
  if (frame.format === undefined) return { ...frame.event, data: JSON.stringify(json) }
  if (frame.format === 'chat') {
    const choice = onlyChoice(json)
    if (choice === undefined) throw new Error('cannot put text into a chat chunk without a choice')
    const key = isObject(choice.delta) || !isObject(choice.message) ? 'delta' : 'message'
    const body = isObject(choice[key]) ? (choice[key] as Json) : {}
    choice[key] = body
    writeChat(body, texts)
  } else writeLegacy(json, texts)
  const event: SseEvent = { ...frame.event, data: JSON.stringify(json) }
  return event
}

/** The one text `texts` replaces, when it is the slot's channel's alone. */
function slotText(slot: TextSlot, texts: Partial<Record<Channel, string>>): string | undefined {
  let text: string | undefined
  for (const key in texts) {
    if (key !== slot.channel) return undefined
    text = texts[key]
  }
  return text
}

/**
 * {@link withTexts}, or undefined where the event it writes says nothing ({@link isBlankEvent}): for an
 * event read by its shape, answered from its slot without reading the JSON again.
 *
 * @example
 * const event = cutEvent(frame, { content: 'Hello' })
 * if (event) send(encodeSseEvent(event))
 */
export function cutEvent(
  frame: Frame,
  texts: Partial<Record<Channel, string>>,
): SseEvent | undefined {
  const event = withTexts(frame, texts)
  const slot = frame.slot
  if (slot !== undefined && slotText(slot, texts) !== undefined && splices(frame, slot)) {
    // The splice keeps everything but the text: never blank with some text, and with none exactly
    // when the slot with an empty text is.
    if (texts[slot.channel] !== '') return event
    slot.blank ??= isBlankEvent({ data: `${slot.before}${slot.after}` })
    return slot.blank ? undefined : event
  }
  return isBlankEvent(event) ? undefined : event
}

/** What a chat chunk may hold and still say nothing: its identity, and a choice with a delta. */
const CHUNK_KEYS = new Set(['id', 'object', 'created', 'model', 'system_fingerprint', 'choices'])
const CHOICE_KEYS = new Set(['index', 'delta', 'finish_reason', 'logprobs'])
const DELTA_TEXT_KEYS = new Set(['content', 'reasoning_content'])

/**
 * Whether an event whose texts were cut now tells the client nothing: a chat chunk whose delta holds
 * only empty `content` / `reasoning_content`, or a legacy `{"response":""}`, with no role, finish
 * reason, usage, tool call or any other field. Such an event is not sent: where a canary was cut, a
 * client saw runs of `"content":""` deltas. An event with anything else in it is kept.
 *
 * @example
 * isBlankEvent({ data: '{"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}' }) // true
 * isBlankEvent({ data: '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}' }) // false
 */
function isBlankEvent(event: SseEvent): boolean {
  if ((event.event !== undefined && event.event !== 'message') || event.id !== undefined)
    return false
  let json: unknown
  try {
    json = JSON.parse(event.data)
  } catch {
    return false
  }
  if (!isObject(json)) return false
  if ('choices' in json) {
    if (!onlyKeys(json, CHUNK_KEYS) || !Array.isArray(json.choices) || json.choices.length !== 1) {
      return false
    }
    const choice: unknown = json.choices[0]
    if (!isObject(choice) || !onlyKeys(choice, CHOICE_KEYS)) return false
    if (choice.finish_reason != null || choice.logprobs != null || !isObject(choice.delta))
      return false
    return blankTexts(choice.delta, DELTA_TEXT_KEYS)
  }
  return 'response' in json && blankTexts(json, LEGACY_TEXT_KEYS)
}

const LEGACY_TEXT_KEYS = new Set(['response'])

function onlyKeys(json: Json, allowed: Set<string>): boolean {
  for (const key in json) if (!allowed.has(key)) return false
  return true
}

/** Every key of `json` is one of `texts`, each holding `''` or null. */
function blankTexts(json: Json, texts: Set<string>): boolean {
  for (const key in json) {
    if (!texts.has(key)) return false
    const value = json[key]
    if (value !== '' && value !== null) return false
  }
  return true
}

/** The texts of a whole (non-stream) answer. */
interface OutputTexts {
  format: StreamFormat
  texts: Partial<Record<Channel, string>>
  usage?: Usage
  finishReason?: string | null
}

/**
 * Read every model-written text of a non-stream answer: chat `choices[0].message.{content,
 * reasoning_content, tool_calls[n].function.arguments}`, legacy `response` and
 * `tool_calls[n].arguments`. Object-valued fields (JSON mode, structured arguments) are read as their
 * JSON text. Unknown shapes throw `GuardError('upstream_error')`.
 *
 * @example
 * readTexts({ response: 'Hi', usage: { prompt_tokens: 3 } })
 * // { format: 'legacy', texts: { content: 'Hi' }, usage: { prompt_tokens: 3 } }
 */
export function readTexts(output: unknown): OutputTexts {
  if (!isObject(output)) throw malformed('The upstream answer is not an object.')
  const format = detectFormat(output)
  if (format === undefined) throw malformed('The upstream answer has an unknown shape.')
  const result: OutputTexts = { format, texts: {} }
  const usage = usageOf(output)
  if (usage !== undefined) result.usage = usage
  if (format === 'legacy') {
    result.texts = { ...legacyTexts(output), ...fieldTexts(output, format) }
    if ('finish_reason' in output) result.finishReason = output.finish_reason as string | null
    return result
  }
  const choice = onlyChoice(output)
  if (choice === undefined) return result
  const message = choice.message
  if (message !== undefined && message !== null) {
    if (!isObject(message)) throw malformed('The upstream chat answer has a malformed message.')
    result.texts = chatTexts(message)
  }
  Object.assign(result.texts, fieldTexts(output, format))
  if ('finish_reason' in choice) result.finishReason = choice.finish_reason as string | null
  return result
}

/**
 * A deep copy of a non-stream answer with the given channels' text replaced (see {@link readTexts}
 * for the fields). Unknown shapes throw `GuardError('upstream_error')`.
 *
 * @example
 * replaceTexts({ response: 'cnry_… Hi' }, { content: 'Hi' }) // { response: 'Hi' }
 */
export function replaceTexts(output: unknown, texts: Partial<Record<Channel, string>>): unknown {
  const { format } = readTexts(output)
  const copy = structuredClone(output) as Json
  writeFields(copy, texts)
  if (format === 'legacy') {
    writeLegacy(copy, texts)
    return copy
  }
  const choice = onlyChoice(copy)
  if (choice === undefined) {
    if (Object.values(texts).some((t) => t)) throw malformed('The upstream answer has no choice.')
    return copy
  }
  const message = isObject(choice.message) ? choice.message : {}
  choice.message = message
  writeChat(message, texts)
  return copy
}
