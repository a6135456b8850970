import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ChunkWriter } from '../../src/core/release/chunk-writer'

/**
 * The client's chunks share one buffer per stream: each must stay exactly the UTF-8 of its text
 * whatever is written after it, and no chunk may show another stream's bytes.
 */
const utf8 = new TextEncoder()

describe('ChunkWriter', () => {
  it('should write every text as its exact UTF-8, earlier chunks untouched by later ones', () => {
    const text = fc.oneof(
      fc.string({ unit: 'grapheme-ascii', maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      // Lone surrogates: written as U+FFFD, as `TextEncoder` does.
      fc.string({ unit: 'binary', maxLength: 40 }).map((t) => `${t}\ud800x${t}`),
      fc.constantFrom('a'.repeat(5000), 'é'.repeat(5000), `${'b'.repeat(4500)}😀`),
    )
    fc.assert(
      fc.property(fc.array(text, { maxLength: 120 }), (texts) => {
        const writer = new ChunkWriter()
        const chunks = texts.map((t) => writer.write(t))
        for (const [i, t] of texts.entries()) expect(chunks[i]).toEqual(utf8.encode(t))
      }),
      { numRuns: 200 },
    )
  })

  it('should share a buffer only between chunks of one writer', () => {
    const a = new ChunkWriter()
    const b = new ChunkWriter()
    const first = a.write('data: one\n\n')
    expect(a.write('data: two\n\n').buffer).toBe(first.buffer)
    expect(b.write('data: three\n\n').buffer).not.toBe(first.buffer)
  })

  it('should give a long text a buffer of its own', () => {
    const writer = new ChunkWriter()
    const long = 'x'.repeat(10_000)
    const chunk = writer.write(long)
    expect(chunk.byteLength).toBe(chunk.buffer.byteLength)
    expect(chunk).toEqual(utf8.encode(long))
  })

  it('should go on writing correct chunks after a consumer took a chunk’s buffer away', () => {
    const writer = new ChunkWriter()
    const first = writer.write('data: first\n\n')
    // The consumer detaches the shared buffer (as a transfer to another thread would).
    structuredClone(first.buffer, { transfer: [first.buffer] })
    expect(first.byteLength).toBe(0)
    const next = writer.write('data: next é\n\n')
    expect(next).toEqual(utf8.encode('data: next é\n\n'))
    expect(writer.write('data: after\n\n')).toEqual(utf8.encode('data: after\n\n'))
  })
})
