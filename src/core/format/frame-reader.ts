/**
 * @module Frames of one stream, parsing JSON only where an event's shape is new. A decoding engine sends
 * thousands of events that differ from the one before in a single string — the next few characters of
 * reasoning or content — so once an event's shape is known, the next one that has the same bytes
 * around that string is read by taking the string out, not by parsing the whole object again.
 *
 * Why it is exact: the shape is learnt from a parsed event, then proved by parsing it again with a
 * probe in place of its text (the probe must come out as that channel's whole text, and nothing else
 * may change). A later event is read this way only when its bytes are the shape's bytes before and
 * after the string, and what lies between is one valid JSON string token by itself — no unescaped
 * quote, no broken escape. Anything else is parsed in full.
 */
import { type Channel, type Frame, parseFrame, type TextSlot } from './frames'
import type { SseEvent } from './sse'

/** Stands in for the text when a shape is proved (any string that cannot need escaping). */
const PROBE = 'wag-probe-7f3a'

/** No quote, backslash or control character: the literal is its own value. */
function plain(literal: string): boolean {
  for (let i = 0; i < literal.length; i++) {
    const unit = literal.charCodeAt(i)
    if (unit === 34 || unit === 92 || unit < 32) return false
  }
  return true
}

interface Shape {
  /** The data up to and including the string's opening quote. */
  before: string
  /** The data from the string's closing quote on. */
  after: string
  channel: 'reasoning' | 'content'
  format: Frame['format']
  /** `finish_reason` as the shape has it (it lies in `before`/`after`, so it is the same). */
  finishReason?: string | null
  hasFinishReason: boolean
  /** Where the text lies, for writing an event of this shape with its text replaced (`Frame.slot`). */
  slot: TextSlot
}

/**
 * Shapes an answer's readers keep: its first event's, then its reasoning's and its content's, each
 * used again when the answer comes back to it, and by a second reader of the same events.
 */
const KEPT_SHAPES = 4

/**
 * Reads a stream's events as frames, the same frames {@link parseFrame} gives. A reader made with
 * another shares the shapes it learns: the held head's events, read again at release, were read
 * first by the upstream's reader, whose shapes read them without parsing them again.
 *
 * @example
 * const reader = new FrameReader()
 * parser.push(bytes, (event, raw) => frames.push(reader.read(event, raw)))
 */
export class FrameReader {
  /** The shapes learnt, the latest used first. */
  readonly #shapes: Shape[]

  constructor(sharing?: FrameReader) {
    this.#shapes = sharing ? sharing.#shapes : []
  }

  read(event: SseEvent, raw?: string, chunk?: Uint8Array): Frame {
    const shapes = this.#shapes
    let frame: Frame | undefined
    for (let i = 0; i < shapes.length; i++) {
      frame = this.#fromShape(shapes[i]!, event, raw)
      if (frame === undefined) continue
      // The latest used goes first: an answer's events are mostly of one shape at a time.
      if (i > 0) shapes.unshift(...shapes.splice(i, 1))
      break
    }
    if (frame === undefined) {
      frame = parseFrame(event, raw)
      const shape = learn(frame)
      if (shape) {
        shapes.unshift(shape)
        if (shapes.length > KEPT_SHAPES) shapes.pop()
        // The event that taught the shape is that shape too.
        frame.slot = shape.slot
      }
    }
    if (chunk !== undefined) frame.chunk = chunk
    return frame
  }

  #fromShape(shape: Shape, event: SseEvent, raw: string | undefined): Frame | undefined {
    const { data } = event
    const { before, after } = shape
    if (event.event !== undefined || event.id !== undefined) return undefined
    if (data.length < before.length + after.length) return undefined
    // Slice and compare: in V8 several times faster than startsWith/endsWith on strings this long.
    if (data.slice(0, before.length) !== before) return undefined
    if (data.slice(data.length - after.length) !== after) return undefined
    const literal = data.slice(before.length, data.length - after.length)
    const text = plain(literal) ? literal : stringToken(literal)
    if (text === undefined) return undefined
    // Literal keys: a computed one made this the costliest line of the read (V8 defines it at run time).
    const texts = shape.channel === 'reasoning' ? { reasoning: text } : { content: text }
    const frame: Frame = { event, done: false, texts }
    if (raw !== undefined) frame.raw = raw
    if (shape.format !== undefined) frame.format = shape.format
    if (shape.hasFinishReason) frame.finishReason = shape.finishReason ?? null
    frame.slot = shape.slot
    return frame
  }
}

/** `"literal"` as one JSON string token's value, or undefined if it is not exactly one token. */
function stringToken(literal: string): string | undefined {
  try {
    const value: unknown = JSON.parse(`"${literal}"`)
    return typeof value === 'string' ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * The shape of a parsed frame that carries exactly one text (reasoning or content) and nothing else
 * the stream needs per event (no usage, not the end), proved with a probe; otherwise none.
 */
function learn(frame: Frame): Shape | undefined {
  if (frame.done || frame.json === undefined || frame.usage !== undefined) return undefined
  const channels = Object.keys(frame.texts) as Channel[]
  if (channels.length !== 1) return undefined
  const channel = channels[0]!
  if (channel !== 'reasoning' && channel !== 'content') return undefined
  const data = frame.event.data
  const literal = JSON.stringify(frame.texts[channel])
  const at = data.indexOf(literal)
  if (at === -1 || data.indexOf(literal, at + 1) !== -1) return undefined
  const before = data.slice(0, at + 1)
  const after = data.slice(at + literal.length - 1)
  // The proof: the probe in the string's place must read back as this channel's whole text, alone.
  let probe: Frame
  try {
    probe = parseFrame({ data: `${before}${PROBE}${after}` })
  } catch {
    return undefined
  }
  const keys = Object.keys(probe.texts)
  if (keys.length !== 1 || probe.texts[channel] !== PROBE) return undefined
  if (probe.format !== frame.format || probe.usage !== undefined) return undefined
  if (probe.finishReason !== frame.finishReason) return undefined
  return {
    before,
    after,
    channel,
    format: frame.format,
    hasFinishReason: 'finishReason' in frame,
    ...(frame.finishReason !== undefined ? { finishReason: frame.finishReason } : {}),
    slot: { channel, before, after },
  }
}
