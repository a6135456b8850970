import { describe, expect, it } from 'vitest'
import { prng } from '../../sim/random'
import { encodeSseEvent, type SseEvent, SseParser, sseDecoder } from '../../src/core/format/sse'

const utf8 = new TextEncoder()

function streamOf<T>(chunks: T[]): ReadableStream<T> {
  return new ReadableStream<T>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk)
      controller.close()
    },
  })
}

async function readAll<T>(stream: ReadableStream<T>): Promise<T[]> {
  const out: T[] = []
  const reader = stream.getReader()
  for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(r.value)
  return out
}

async function decode(chunks: Uint8Array[], maxEventBytes?: number) {
  const decoder = sseDecoder(maxEventBytes === undefined ? {} : { maxEventBytes })
  const events = await readAll(streamOf(chunks).pipeThrough(decoder))
  return { events, truncated: decoder.truncated }
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [0, ...cuts, bytes.length]
  return points.slice(1).map((end, i) => bytes.slice(points[i], end))
}

// Every feature at once: BOM, CRLF/CR/LF, comments, multi-line data, no space after the colon,
// two spaces (one kept), a field without colon, event/id, retry, an id-only block (not dispatched),
// and 2-, 3- and 4-byte characters (é, €, 😀) and a 3-byte CJK char.
const SAMPLE =
  '\uFEFF: keep-alive\r\n' +
  'data: {"response":"h\u00e9llo \u20ac"}\r\n\r\n' +
  'event: update\rid: 7\rdata:first\rdata:  second\r\r' +
  'retry: 1000\ndata\ndata: \u{1F600} \u4e2d\n\n' +
  'id: only\n\n' +
  'data: [DONE]\n\n'

const EXPECTED: SseEvent[] = [
  { data: '{"response":"h\u00e9llo \u20ac"}' },
  { data: 'first\n second', event: 'update', id: '7' },
  { data: '\n\u{1F600} \u4e2d' },
  { data: '[DONE]' },
]

describe('sseDecoder', () => {
  it('should parse every line ending, comment, field and multi-line data per the spec', async () => {
    const { events, truncated } = await decode([utf8.encode(SAMPLE)])
    expect(events).toEqual(EXPECTED)
    expect(truncated).toBe(false)
  })

  it('should yield identical events when the bytes are split at every offset', async () => {
    const bytes = utf8.encode(SAMPLE)
    for (let cut = 0; cut <= bytes.length; cut++) {
      const { events, truncated } = await decode(splitAt(bytes, [cut]))
      expect(events, `cut at ${cut}`).toEqual(EXPECTED)
      expect(truncated).toBe(false)
    }
  })

  it('should yield identical events when fed one byte at a time', async () => {
    const bytes = utf8.encode(SAMPLE)
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b))
    expect((await decode(chunks)).events).toEqual(EXPECTED)
  })

  it('should yield identical events under seeded random splits', async () => {
    const bytes = utf8.encode(SAMPLE)
    const random = prng(42)
    for (let round = 0; round < 200; round++) {
      const cuts = Array.from({ length: 1 + Math.floor(random() * 12) }, () =>
        Math.floor(random() * (bytes.length + 1)),
      ).sort((a, b) => a - b)
      expect((await decode(splitAt(bytes, cuts))).events, `cuts ${cuts}`).toEqual(EXPECTED)
    }
  })

  it('should decode a 3-byte and a 4-byte character split inside the character', async () => {
    for (const char of ['\u20ac', '\u{1F600}']) {
      const bytes = utf8.encode(`data: a${char}b\n\n`)
      const at = 'data: a'.length
      for (let inner = 1; inner < utf8.encode(char).length; inner++) {
        const { events } = await decode(splitAt(bytes, [at + inner]))
        expect(events).toEqual([{ data: `a${char}b` }])
      }
    }
  })

  it('should error the stream on invalid UTF-8', async () => {
    const prefix = utf8.encode('data: ok\n\ndata: ')
    for (const bad of [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x28, 0xa1]]) {
      const bytes = new Uint8Array([...prefix, ...bad, 0x0a, 0x0a])
      await expect(decode([bytes])).rejects.toThrow(/not valid UTF-8/)
    }
  })

  it('should not error on valid UTF-8 split across chunks', async () => {
    const bytes = utf8.encode('data: \u00e9\u20ac\u{1F600}\n\n')
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b))
    expect((await decode(chunks)).events).toEqual([{ data: '\u00e9\u20ac\u{1F600}' }])
  })

  it('should reject a chunk ending in bytes no later chunk can complete', async () => {
    // Each ends a chunk on what looks like the start of a character but cannot begin one.
    for (const bad of [[0xe0, 0x80], [0xed, 0xa0], [0xf0, 0x80], [0xf4, 0x90], [0xf5], [0xc1]]) {
      const chunks = [new Uint8Array([...utf8.encode('data: a'), ...bad]), utf8.encode('\n\n')]
      await expect(decode(chunks), `${bad}`).rejects.toThrow(/not valid UTF-8/)
    }
  })

  it('should strip a BOM only at the very start, even one split byte by byte', async () => {
    const bom = utf8.encode('\uFEFF')
    const head = Array.from(bom, (b) => Uint8Array.of(b))
    const chunks = [...head, utf8.encode('data: a\n\n'), bom, utf8.encode('x\n\n')]
    // The second BOM starts a chunk but not the stream: it is part of a field name (ignored).
    expect((await decode(chunks)).events).toEqual([{ data: 'a' }])
    const kept = [utf8.encode('data: '), bom, utf8.encode('b\n\n')]
    expect((await decode(kept)).events).toEqual([{ data: '\uFEFFb' }])
  })

  it('should flag a trailing event that never got its blank line', async () => {
    for (const tail of ['data: cut', 'data: cut\n', 'event: x\n', ': comment', 'data: \xe9']) {
      const bytes = utf8.encode(`data: a\n\n${tail}`)
      const { events, truncated } = await decode([bytes])
      expect(events, tail).toEqual([{ data: 'a' }])
      expect(truncated, tail).toBe(true)
    }
  })

  it('should flag an incomplete UTF-8 sequence at the end as truncated, not as complete', async () => {
    const bytes = utf8.encode('data: a\n\ndata: \u{1F600}').slice(0, -2)
    const { events, truncated } = await decode([bytes])
    expect(events).toEqual([{ data: 'a' }])
    expect(truncated).toBe(true)
  })

  it('should not flag a stream that ends on a blank line (any line ending)', async () => {
    for (const end of ['\n\n', '\r\n\r\n', '\r\r']) {
      const { events, truncated } = await decode([utf8.encode(`data: a${end}`)])
      expect(events).toEqual([{ data: 'a' }])
      expect(truncated).toBe(false)
    }
  })

  it('should report truncated only after the stream has closed', () => {
    expect(sseDecoder().truncated).toBe(false)
  })

  it('should error an event larger than maxEventBytes', async () => {
    const big = utf8.encode(`data: ${'x'.repeat(100)}\n\n`)
    await expect(decode([big], 50)).rejects.toThrow(/maxEventBytes/)
    // Split byte by byte, the bound holds too: nothing is buffered beyond it.
    await expect(
      decode(
        Array.from(big, (b) => Uint8Array.of(b)),
        50,
      ),
    ).rejects.toThrow(/maxEventBytes/)
  })

  it('should accept many events whose total exceeds maxEventBytes when each fits', async () => {
    const one = `data: ${'x'.repeat(30)}\n\n`
    const { events } = await decode([utf8.encode(one.repeat(20))], 50)
    expect(events).toHaveLength(20)
    expect(events[19]).toEqual({ data: 'x'.repeat(30) })
  })

  it('should reject a non-positive maxEventBytes', () => {
    expect(() => sseDecoder({ maxEventBytes: 0 })).toThrow(/maxEventBytes/)
  })

  it('should keep backpressure: an unread decoder stops pulling from its source', async () => {
    let pulls = 0
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++
        controller.enqueue(utf8.encode('data: x\n\n'))
      },
    })
    const reader = source.pipeThrough(sseDecoder()).getReader()
    for (let i = 0; i < 20; i++) await Promise.resolve()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(pulls).toBeLessThan(6)
    const first = await reader.read()
    expect(first.value).toEqual({ data: 'x' })
    await reader.cancel()
  })
})

describe('encodeSseEvent', () => {
  it('should write a single data line and the blank line', () => {
    expect(encodeSseEvent({ data: '{"response":"hi"}' })).toBe('data: {"response":"hi"}\n\n')
  })

  it('should split multi-line data and write event and id lines when present', () => {
    expect(encodeSseEvent({ data: 'a\nb\r\nc', event: 'x', id: '3' })).toBe(
      'event: x\nid: 3\ndata: a\ndata: b\ndata: c\n\n',
    )
  })

  it('should refuse an event name or id with a line break', () => {
    expect(() => encodeSseEvent({ data: 'a', event: 'x\ny' })).toThrow(/event/)
    expect(() => encodeSseEvent({ data: 'a', id: '1\r' })).toThrow(/id/)
  })
})

describe('SseParser', () => {
  it('should hand on lone comment lines with their text when asked, and keep events exact', () => {
    const comments: string[] = []
    const events: [SseEvent, string | undefined][] = []
    const parser = new SseParser(1024, { onComment: (raw) => comments.push(raw) })
    const text = ': held\n\ndata: {"a":1}\n\n: held\n\nid: 3\ndata: x\n\n'
    for (const piece of [text.slice(0, 9), text.slice(9, 30), text.slice(30)]) {
      parser.push(utf8.encode(piece), (event, raw) => events.push([event, raw]))
    }
    parser.end()
    expect(comments).toEqual([': held\n\n', ': held\n\n'])
    expect(events).toEqual([
      [{ data: '{"a":1}' }, 'data: {"a":1}\n\n'],
      [{ data: 'x', id: '3' }, undefined],
    ])
    expect(parser.truncated).toBe(false)
  })
})

describe('encoded events', () => {
  it('should round-trip through the decoder, one chunk per event', async () => {
    const events: SseEvent[] = [
      { data: '{"response":"a"}' },
      { data: ' leading space' },
      { data: '' },
      { data: 'line 1\nline 2\n', event: 'e', id: '' },
      { data: '\u{1F600}', id: '9' },
      { data: '[DONE]' },
    ]
    const bytes = events.map((event) => utf8.encode(encodeSseEvent(event)))
    const decoder = sseDecoder()
    const back = await readAll(streamOf(bytes).pipeThrough(decoder))
    expect(back).toEqual(events)
    expect(decoder.truncated).toBe(false)
  })
})
