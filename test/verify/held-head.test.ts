import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { prng } from '../../sim/random'
import { FrameReader } from '../../src/core/format/frame-reader'
import type { Frame } from '../../src/core/format/frames'
import { SseParser } from '../../src/core/format/sse'
import { HeldHead } from '../../src/core/verify/held-head'
import { chatChunk } from '../support/open-stream'

/**
 * A held head keeps events as their text and reads them again on release: what it gives back must be,
 * frame for frame, what the upstream reader gave — the texts the checks read are the texts released.
 */
const UTF8 = new TextEncoder()

/** The frames of `wire` cut at `cuts`, as the upstream reader makes them. */
function framesOf(wire: string, cuts: number[]): Frame[] {
  const bytes = UTF8.encode(wire)
  const parser = new SseParser(1 << 20)
  const reader = new FrameReader()
  const frames: Frame[] = []
  let at = 0
  for (const cut of [...cuts.filter((c) => c < bytes.length).sort((a, b) => a - b), bytes.length]) {
    parser.push(bytes.subarray(at, cut), (event, raw) => frames.push(reader.read(event, raw)))
    at = cut
  }
  return frames
}

/**
 * What release reads of a frame: all of it but the parsed object (a frame read by its shape has none,
 * so release never needs it) and the lone-chunk bytes (a held head is released as text).
 */
function seen(frame: Frame) {
  const { chunk: _, json: __, ...rest } = frame
  return rest
}

function heldBack(frames: Frame[]): Frame[] {
  const head = new HeldHead()
  for (const frame of frames) head.push(frame)
  expect(head.length).toBe(frames.length)
  return Array.from({ length: head.length }, (_, i) => head.at(i)!)
}

describe('HeldHead', () => {
  it('should give back every frame as it was read, whatever the texts and the splits', () => {
    const text = fc.string({ unit: 'binary', maxLength: 10 })
    const event = fc.oneof(
      text.map((t) => chatChunk({ content: t })),
      text.map((t) => chatChunk({ reasoning_content: t })),
      fc.tuple(text, text).map(([a, b]) => chatChunk({ content: a, reasoning_content: b })),
      text.map(
        (t) =>
          `data: ${JSON.stringify({ choices: [{ delta: { content: t } }], usage: { prompt_tokens: 3 } })}\n\n`,
      ),
      text.map((t) => `data: ${JSON.stringify({ response: t })}\n\n`),
      // Two data lines: an event with no exact text, held as its frame.
      text.map((t) => chatChunk({ content: t }).replace('"model"', '\ndata: "model"')),
      fc.constant(': keep-alive\n\n'),
      fc.constant('data: [DONE]\n\n'),
    )
    fc.assert(
      fc.property(
        fc.array(event, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat({ max: 4000 }), { maxLength: 6 }),
        (events, cuts) => {
          const frames = framesOf(events.join(''), cuts)
          expect(heldBack(frames).map(seen)).toEqual(frames.map(seen))
        },
      ),
      { numRuns: 300 },
    )
  })

  it('should give back a long head exactly, across the batches it is joined in', () => {
    const next = prng(17)
    const events: string[] = []
    for (let i = 0; i < 400; i++) {
      const text = `w${i} ${'é中"\\'.slice(0, Math.floor(next() * 5))}`
      const r = next()
      events.push(
        r < 0.05
          ? chatChunk({ content: text }).replace('"model"', '\ndata: "model"')
          : r < 0.1
            ? 'data: [DONE]\n\n'
            : chatChunk(r < 0.5 ? { reasoning_content: text } : { content: text }),
      )
    }
    const cuts = Array.from({ length: 300 }, () => Math.floor(next() * 60_000))
    const frames = framesOf(events.join(''), cuts)
    expect(frames.length).toBe(400)
    const head = new HeldHead()
    for (const frame of frames) head.push(frame)
    expect(head.at(400)).toBeUndefined()
    expect(head.at(-1)).toBeUndefined()
    // In any order: a release reads them in order, but nothing may depend on it.
    for (const i of [399, 0, 64, 63, 128, 200, 1])
      expect(seen(head.at(i)!)).toEqual(seen(frames[i]!))
    expect(heldBack(frames).map(seen)).toEqual(frames.map(seen))
  })

  it('should read an escaped or non-Latin text back exactly', () => {
    const texts = [
      'a "quoted" \\ back\nslash',
      'Ключ ledger 账本 🙂',
      '\u2028line\u2029',
      'cnry_not-ours',
    ]
    const wire = texts.map((t) => chatChunk({ reasoning_content: t })).join('')
    const back = heldBack(framesOf(wire, [7, 90, 91, 200]))
    expect(back.map((f) => f.texts.reasoning)).toEqual(texts)
  })

  it('should keep an event without an exact text (line by line, CR) as its frame', () => {
    const wire = [chatChunk({ content: 'one' }), chatChunk({ content: 'two' })]
      .join('')
      .replaceAll('\n', '\r\n')
    const frames = framesOf(wire, [10])
    expect(frames.every((f) => f.raw === undefined)).toBe(true)
    const back = heldBack(frames)
    expect(back[0]).toBe(frames[0])
    expect(back.map((f) => f.texts.content)).toEqual(['one', 'two'])
  })
})
