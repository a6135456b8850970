import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { FrameReader } from '../../src/core/format/frame-reader'
import { type Channel, cutEvent, type Frame, parseFrame } from '../../src/core/format/frames'

/**
 * The shape reader must give, for every event of every stream, exactly the frame a full parse gives —
 * texts, format, finish reason, usage — whatever the upstream sends, hostile bytes included.
 */
function essentials(frame: Frame) {
  return {
    done: frame.done,
    texts: frame.texts,
    format: frame.format,
    finishReason: frame.finishReason,
    usage: frame.usage,
  }
}

/**
 * Reads `datas` in order through one reader, then again through a second that shares its shapes (as
 * a held head's reader does); each frame (or error) next to the full parse's.
 */
function compare(datas: string[]): void {
  const reader = new FrameReader()
  readAll(reader, datas)
  readAll(new FrameReader(reader), datas)
}

function readAll(reader: FrameReader, datas: string[]): void {
  for (const data of datas) {
    let expected: ReturnType<typeof essentials> | string
    try {
      expected = essentials(parseFrame({ data }))
    } catch (error) {
      expected = String(error)
    }
    let actual: ReturnType<typeof essentials> | string
    try {
      actual = essentials(reader.read({ data }))
    } catch (error) {
      actual = String(error)
    }
    expect(actual).toEqual(expected)
  }
}

const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: null }],
    ...extra,
  })

describe('FrameReader', () => {
  it('should read a stream of deltas exactly as a full parse does, whatever their text', () => {
    const text = fc.string({ unit: 'binary', maxLength: 12 })
    const delta = fc.oneof(
      text.map((t) => chunk({ content: t })),
      text.map((t) => chunk({ reasoning_content: t })),
      text.map((t) => chunk({ content: t }, { usage: { prompt_tokens: 3 } })),
      fc.tuple(text, text).map(([a, b]) => chunk({ content: a, reasoning_content: b })),
      text.map((t) => chunk({ content: t, refusal: t })),
      text.map((t) => JSON.stringify({ response: t })),
      fc.constant('[DONE]'),
    )
    fc.assert(fc.property(fc.array(delta, { maxLength: 12 }), compare), { numRuns: 400 })
  })

  it('should not be fooled by bytes that splice fields into the text’s place', () => {
    const shape = (literal: string) =>
      `{"choices":[{"index":0,"delta":{"content":"${literal}"},"finish_reason":null}]}`
    compare([
      shape('Hello'),
      shape('a","reasoning_content":"smuggled'),
      shape('a\\",\\"reasoning_content\\":\\"quoted'),
      shape('ends in a backslash\\'),
      shape('tab\\tand \\u00e9 escapes'),
      shape('"},"finish_reason":"stop"}],"x":{"y":"'),
      shape('raw\ncontrol'),
      shape('back to normal'),
    ])
  })

  it('should not learn a shape whose text also appears elsewhere in the event', () => {
    // The text equals the model name: taking it out at the wrong place would misread later events.
    compare([
      '{"model":"same","choices":[{"index":0,"delta":{"content":"same"}}]}',
      '{"model":"other","choices":[{"index":0,"delta":{"content":"same"}}]}',
      '{"model":"same","choices":[{"index":0,"delta":{"content":"next"}}]}',
    ])
  })

  it('should write a cut event by its slot exactly as the full path writes it', () => {
    // The full path: the same frame without its slot (parsed again, the text written, serialised).
    const full = (frame: Frame, texts: Partial<Record<Channel, string>>) => {
      const { slot: _, ...plain } = frame
      return cutEvent(plain, texts)
    }
    const text = fc.string({ unit: 'binary', maxLength: 12 })
    const data = fc.oneof(
      text.map((t) => chunk({ content: t })),
      text.map((t) => chunk({ reasoning_content: t })),
      text.map((t) => chunk({ role: 'assistant', content: t })),
      text.map((t) => JSON.stringify({ response: t })),
      // Spaced as some upstreams send it: serialising again would not give these bytes back.
      text.map((t) => `{"response": ${JSON.stringify(t)}}`),
      text.map((t) => `{"choices":[{"index":0,"delta":{"content":${JSON.stringify(t)}}}]}`),
    )
    let slotted = 0
    fc.assert(
      fc.property(fc.array(fc.tuple(data, text), { maxLength: 8 }), (events) => {
        const reader = new FrameReader()
        for (const [event, cut] of events) {
          const frame = reader.read({ data: event })
          const channel = Object.keys(frame.texts)[0] as Channel | undefined
          if (channel === undefined) continue
          const proved = frame.slot?.splices
          for (const replaced of [cut, '']) {
            const texts = { [channel]: replaced }
            expect(cutEvent(frame, texts)).toEqual(full(frame, texts))
          }
          if (frame.slot?.splices) slotted++
          // Proved once per shape, by the first cut.
          if (proved !== undefined) expect(frame.slot?.splices).toBe(proved)
        }
      }),
      { numRuns: 400 },
    )
    // The splice was taken, not only the full path compared with itself.
    expect(slotted).toBeGreaterThan(100)
  })

  it('should not splice into a shape that serialising again would change', () => {
    const reader = new FrameReader()
    reader.read({ data: '{"response": "spaced"}' })
    const frame = reader.read({ data: '{"response": "again"}' })
    expect(frame.texts).toEqual({ content: 'again' })
    expect(cutEvent(frame, { content: 'cut' })?.data).toBe('{"response":"cut"}')
    expect(frame.slot?.splices).toBe(false)
  })
})
