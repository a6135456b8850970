/**
 * @module Server-sent events: a streaming byte→event decoder and an event→byte encoder, per the WHATWG
 * "event stream interpretation" rules, as TransformStreams that keep backpressure.
 *
 * Why it is this strict: the guard must see every byte of the upstream answer exactly once, in order,
 * whatever the network split. A canary cut across two TCP reads, or a multi-byte character cut in half,
 * must not slip past the scanner, and a malformed or truncated stream must never be mistaken for a
 * complete answer (a leaking engine's streams look perfectly normal on the wire). So: a fatal
 * UTF-8 decoder (invalid bytes error the stream), a byte bound per event (an upstream cannot make the
 * guard buffer without limit), and an explicit `truncated` flag for a trailing event that never ended.
 */
import { utf8Length } from '../ceiling/utf8'

/** One dispatched server-sent event. `event` and `id` are present only when that event carried them. */
export interface SseEvent {
  data: string
  event?: string
  id?: string
}

/** Options of {@link sseDecoder}. */
interface SseDecoderOptions {
  /**
   * Largest event, in UTF-8 bytes of its lines (comments included), before the stream errors.
   * @default 1048576 (1 MiB)
   */
  maxEventBytes?: number
}

/**
 * A byte→event TransformStream that also reports, once its writable side has closed, whether the
 * input ended inside an unfinished event (bytes after the last blank line that never got one).
 */
interface SseDecoderStream extends TransformStream<Uint8Array, SseEvent> {
  /**
   * `true` after flush when the input ended inside an unfinished event: a partial line, fields with no
   * terminating blank line, or an incomplete UTF-8 sequence. Such an event is dropped (per spec), so a
   * consumer must treat the answer as cut short. `false` before the stream has closed.
   */
  readonly truncated: boolean
}

/**
 * Default of {@link SseDecoderOptions.maxEventBytes}.
 *
 * @example
 * sseDecoder({ maxEventBytes: 4 * DEFAULT_MAX_EVENT_BYTES })
 */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024

/**
 * Receives each dispatched event; `raw` is its exact text when it can be re-sent as it came, and
 * `chunk` the input chunk itself when that chunk was exactly this one event (its bytes, as they came).
 */
type SseEmit = (event: SseEvent, raw: string | undefined, chunk?: Uint8Array) => void

/**
 * How many leading bytes of `bytes` end on a character boundary: all of them, unless they end inside a
 * multi-byte character that a later chunk may complete (a valid prefix of one). An invalid ending is
 * left in, so the decoder rejects it now, as a streaming decoder would.
 */
function wholeCharacters(bytes: Uint8Array): number {
  const n = bytes.length
  if (n === 0 || bytes[n - 1]! < 0x80) return n
  // The last sequence's lead byte lies at most 3 bytes back.
  let lead = n - 1
  while (lead > n - 4 && lead > 0 && (bytes[lead]! & 0xc0) === 0x80) lead--
  const first = bytes[lead]!
  const need = first >= 0xc2 && first <= 0xdf ? 2 : first >= 0xe0 && first <= 0xef ? 3 : 4
  if (first < 0xc2 || first > 0xf4 || lead + need <= n) return n
  // A prefix is valid only if its second byte is in the range the lead allows (RFC 3629 §4).
  if (lead + 1 < n) {
    const second = bytes[lead + 1]!
    const low = first === 0xe0 ? 0xa0 : first === 0xf0 ? 0x90 : 0x80
    const high = first === 0xed ? 0x9f : first === 0xf4 ? 0x8f : 0xbf
    if (second < low || second > high) return n
  }
  return lead
}

/**
 * The decoder of every stream: fatal, and never in streaming mode — a character split across chunks
 * is carried (`#carry`) and decoded whole with the next chunk instead. Why: a decoder once used with
 * `{ stream: true }` leaves V8's fast path for good in Node (measured: about 3× slower per SSE-sized
 * chunk). The BOM is stripped by hand, once, at the start of the stream (a non-streaming decoder would
 * strip one at the start of every chunk). Shared: a decoder that never streams keeps nothing between
 * calls, and making one cost workerd about as much as decoding a short answer's chunks (profiled).
 */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * The per-stream parser state; pure, so the stream wrappers stay trivial.
 *
 * Two modes, one meaning. Until the stream shows a CR, events are found by their blank line ("\n\n")
 * with a native search over the text, and an event that is one `data: ` line is handed on with its
 * exact text (`raw`), so a release that changes nothing can re-send it as it came. The first CR
 * switches the stream, for good, to the line-by-line reading of every line ending the spec allows.
 *
 * @example
 * const parser = new SseParser(DEFAULT_MAX_EVENT_BYTES)
 * parser.push(bytes, (event, raw) => handle(event, raw))
 * parser.end()
 * if (parser.truncated) throw new Error('cut short')
 */
export class SseParser {
  readonly #maxEventBytes: number
  /** The bytes of a character the last chunk began but did not finish (1–3 bytes), if any. */
  #carry: Uint8Array | undefined
  /** Text decoded yet: a BOM can only stand at its very start. */
  #started = false
  /** The last chunk was decoded alone: no carried bytes joined to its front. */
  #exact = true
  /** No CR seen yet: events are split on "\n\n" and keep their text. */
  #fast = true
  /** Fast mode: the text of the event not yet ended. */
  #pending = ''
  /** While a push is read on the fast path: its bytes, when nothing was pending before them. */
  #whole: Uint8Array | undefined
  /** The current, not yet terminated line. */
  #line = ''
  /** A CR ended the previous chunk: a LF at the start of the next one belongs to it (CRLF). */
  #skipLf = false
  #data: string[] = []
  #event: string | undefined
  #id: string | undefined
  /** Any line (field or comment) since the last blank line. */
  #open = false
  #eventBytes = 0
  truncated = false

  /** Receives each lone comment line (`: …`) with its exact text, where a relay must keep them. */
  readonly #onComment: ((raw: string) => void) | undefined

  constructor(maxEventBytes: number, options: { onComment?: (raw: string) => void } = {}) {
    this.#maxEventBytes = maxEventBytes
    this.#onComment = options.onComment
  }

  push(bytes: Uint8Array, emit: SseEmit): void {
    let text = this.#decode(bytes)
    if (text === '') return
    // The text is these bytes exactly (nothing carried in or out): an event that is all of it may
    // be handed on as the chunk itself.
    let exact = this.#carry === undefined && text.length > 0 && this.#exact
    if (!this.#started) {
      this.#started = true
      if (text.charCodeAt(0) === 0xfeff) {
        text = text.slice(1)
        exact = false
      }
    }
    if (this.#fast && text.indexOf('\r') === -1)
      this.#feedFast(text, emit, exact ? bytes : undefined)
    else this.#feedLines(text, emit)
  }

  /** The text of `bytes` up to their last whole character; the rest is carried to the next chunk. */
  #decode(bytes: Uint8Array): string {
    let input = bytes
    this.#exact = this.#carry === undefined
    if (this.#carry !== undefined) {
      input = new Uint8Array(this.#carry.length + bytes.length)
      input.set(this.#carry)
      input.set(bytes, this.#carry.length)
      this.#carry = undefined
    }
    const whole = wholeCharacters(input)
    if (whole < input.length) {
      this.#carry = input.slice(whole)
      input = input.subarray(0, whole)
    }
    try {
      return UTF8.decode(input)
    } catch (cause) {
      throw new Error('SSE stream is not valid UTF-8', { cause })
    }
  }

  end(): void {
    // An incomplete multi-byte sequence at EOF: the stream was cut inside the last (unfinished) event.
    if (this.#carry !== undefined) this.truncated = true
    if (this.#pending !== '' || this.#line !== '' || this.#open) {
      this.truncated = true
    }
  }

  #feedFast(text: string, emit: SseEmit, chunk: Uint8Array | undefined): void {
    this.#whole = this.#pending === '' ? chunk : undefined
    const buffer = this.#pending === '' ? text : this.#pending + text
    let at = 0
    while (true) {
      // Blank lines between events dispatch nothing.
      while (buffer.charCodeAt(at) === 10) at++
      const end = buffer.indexOf('\n\n', at)
      if (end === -1) break
      this.#bound(buffer, at, end)
      this.#block(buffer, at, end, emit)
      at = end + 2
    }
    this.#whole = undefined
    this.#bound(buffer, at, buffer.length)
    this.#pending = at === 0 ? buffer : buffer.slice(at)
  }

  /** The per-event byte bound; counted in UTF-8 only when the text could be over it. */
  #bound(buffer: string, start: number, end: number): void {
    const units = end - start
    if (units * 3 <= this.#maxEventBytes) return
    // A UTF-16 unit is at least one UTF-8 byte, so more units than the bound is over it.
    if (units > this.#maxEventBytes || utf8Length(buffer.slice(start, end)) > this.#maxEventBytes) {
      throw new Error(`SSE event exceeds maxEventBytes (${this.#maxEventBytes} bytes)`)
    }
  }

  /** One event's lines, `buffer[start, end)`, with no CR in them. */
  #block(buffer: string, start: number, end: number, emit: SseEmit): void {
    // The pushed bytes go along only when this event is all of them.
    const chunk = start === 0 && end + 2 === buffer.length ? this.#whole : undefined
    const firstBreak = buffer.indexOf('\n', start)
    if (
      (firstBreak === -1 || firstBreak >= end) &&
      buffer.charCodeAt(start) === 100 && // 'd'
      buffer.startsWith('data: ', start)
    ) {
      if (chunk === undefined)
        emit({ data: buffer.slice(start + 6, end) }, buffer.slice(start, end + 2))
      else emit({ data: buffer.slice(start + 6, end) }, buffer, chunk)
      return
    }
    if (
      this.#onComment &&
      buffer.charCodeAt(start) === 58 &&
      (firstBreak === -1 || firstBreak >= end)
    ) {
      this.#onComment(buffer.slice(start, end + 2))
      return
    }
    for (const line of buffer.slice(start, end).split('\n')) this.#processLine(line, emit)
    this.#dispatch((event) => emit(event, undefined))
  }

  /** The line-by-line reading: any of LF, CRLF, CR ends a line, split anywhere. */
  #feedLines(text: string, emit: SseEmit): void {
    if (this.#fast) {
      this.#fast = false
      text = this.#pending + text
      this.#pending = ''
    }
    let start = 0
    if (this.#skipLf) {
      this.#skipLf = false
      if (text.charCodeAt(0) === 10) start = 1
    }
    for (let i = start; i < text.length; i++) {
      const unit = text.charCodeAt(i)
      if (unit !== 10 && unit !== 13) continue
      this.#grow(text.slice(start, i))
      const line = this.#line
      this.#line = ''
      if (unit === 13) {
        if (i + 1 === text.length) this.#skipLf = true
        else if (text.charCodeAt(i + 1) === 10) i++
      }
      start = i + 1
      this.#processLine(line, emit)
    }
    if (start < text.length) this.#grow(text.slice(start))
  }

  /** Append to the current line, enforcing the per-event byte bound before anything is buffered. */
  #grow(piece: string): void {
    if (piece === '') return
    this.#eventBytes += utf8Length(piece)
    if (this.#eventBytes > this.#maxEventBytes) {
      throw new Error(`SSE event exceeds maxEventBytes (${this.#maxEventBytes} bytes)`)
    }
    this.#line += piece
  }

  #processLine(line: string, emit: SseEmit): void {
    if (line === '') {
      this.#dispatch((event) => emit(event, undefined))
      return
    }
    this.#open = true
    this.#eventBytes += 1 // the line terminator
    if (line.charCodeAt(0) === 58) return // ':' comment
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    switch (field) {
      case 'data':
        this.#data.push(value)
        break
      case 'event':
        this.#event = value
        break
      case 'id':
        // Per spec an id containing NULL is ignored.
        if (!value.includes('\0')) this.#id = value
        break
      default:
        // `retry` and unknown fields are ignored, as the spec says.
        break
    }
  }

  #dispatch(emit: (event: SseEvent) => void): void {
    const data = this.#data
    const event = this.#event
    const id = this.#id
    this.#data = []
    this.#event = undefined
    this.#id = undefined
    this.#open = false
    this.#eventBytes = 0
    // Per spec an event with an empty data buffer (no data line at all) is not dispatched.
    if (data.length === 0) return
    const out: SseEvent = { data: data.join('\n') }
    if (event !== undefined && event !== '') out.event = event
    if (id !== undefined) out.id = id
    emit(out)
  }
}

/**
 * Decode a byte stream of server-sent events. Accepts LF, CRLF and CR line ends split anywhere,
 * joins multi-line `data:` with `\n`, drops comments and `retry:`, keeps `event:`/`id:` per event.
 * Errors the stream on invalid UTF-8 or an event over `maxEventBytes`; see `truncated`.
 *
 * @example
 * const decoder = sseDecoder()
 * const reader = response.body!.pipeThrough(decoder).getReader()
 * for (let r = await reader.read(); !r.done; r = await reader.read()) handle(r.value.data)
 * if (decoder.truncated) throw new Error('upstream stream was cut short')
 */
export function sseDecoder(options: SseDecoderOptions = {}): SseDecoderStream {
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES
  if (!Number.isInteger(maxEventBytes) || maxEventBytes < 1) {
    throw new Error('maxEventBytes must be a positive integer')
  }
  const parser = new SseParser(maxEventBytes)
  const stream = new TransformStream<Uint8Array, SseEvent>({
    transform(chunk, controller) {
      parser.push(chunk, (event) => controller.enqueue(event))
    },
    flush() {
      parser.end()
    },
  })
  Object.defineProperty(stream, 'truncated', { get: () => parser.truncated, enumerable: true })
  return stream as SseDecoderStream
}

/** A field value that would break the framing (a line break) cannot be encoded faithfully. */
function checkField(name: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`SSE ${name} must not contain a line break`)
  return value
}

/**
 * Serialise one event: `event:` and `id:` lines when present, then one `data:` line per line of
 * `data` (any of CRLF, CR, LF splits), then the blank line. Always a single space after the colon,
 * so a leading space in the data survives a round trip through {@link sseDecoder}.
 *
 * @example
 * encodeSseEvent({ data: '{"response":"hi"}' }) // 'data: {"response":"hi"}\n\n'
 * encodeSseEvent({ data: 'a\nb', event: 'x' })  // 'event: x\ndata: a\ndata: b\n\n'
 */
export function encodeSseEvent(event: SseEvent): string {
  let out = ''
  if (event.event !== undefined) out += `event: ${checkField('event', event.event)}\n`
  if (event.id !== undefined) out += `id: ${checkField('id', event.id)}\n`
  for (const line of event.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`
  return `${out}\n`
}
