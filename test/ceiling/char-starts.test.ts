/**
 * @module The merge's whole-character start and its cuts (src/core/ceiling/char-starts.ts) on small
 * made-up vocabularies, each built so that one of the three conditions is what keeps the merge equal
 * to the byte merge: drop the condition and the ids change. o200k itself: test/node/ceiling-merge.
 */
import { describe, expect, it } from 'vitest'
import { type MergeCore, pieceMerger } from '../../src/core/ceiling/bpe-merge'

const encoder = new TextEncoder()

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')

function utf8OrUndefined(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    return undefined
  }
}

/**
 * A vocabulary of the 256 bytes (ranks 0–255) and then `tokens` in rank order, kept as gpt-tokenizer
 * 4 keeps its own (strings by string, the rest as byte strings), with the textbook merge as
 * `bytePairMerge`: the lowest-ranked adjacent pair first, the leftmost of equal ones.
 */
function vocabulary(tokens: readonly (string | number[])[]): MergeCore {
  const byHex = new Map<string, number>()
  const strings = new Map<string, number>()
  const bytes: [Uint8Array, number][] = []
  const add = (key: Uint8Array, rank: number) => {
    byHex.set(hex(key), rank)
    const text = utf8OrUndefined(key)
    if (text === undefined) bytes.push([key, rank])
    else strings.set(text, rank)
  }
  for (let b = 0; b < 256; b++) add(Uint8Array.of(b), b)
  tokens.forEach((token, i) => {
    add(typeof token === 'string' ? encoder.encode(token) : Uint8Array.from(token), 256 + i)
  })
  const rankOf = (key: Uint8Array) => byHex.get(hex(key))
  return {
    bytePairStringRankEncoder: strings,
    bytePairNonUtfSortedEncoder: bytes,
    getBpeRankFromBytes: rankOf,
    getBpeRankFromString: (key: string) => strings.get(key),
    bytePairMerge(piece: Uint8Array): number[] {
      let parts = Array.from(piece, (b) => Uint8Array.of(b))
      for (;;) {
        let best = -1
        let lowest = Number.POSITIVE_INFINITY
        for (let i = 0; i + 1 < parts.length; i++) {
          const joined = new Uint8Array([...(parts[i] ?? []), ...(parts[i + 1] ?? [])])
          const rank = rankOf(joined)
          if (rank !== undefined && rank < lowest) {
            lowest = rank
            best = i
          }
        }
        if (best < 0) return parts.map((part) => rankOf(part) ?? -1)
        parts = [
          ...parts.slice(0, best),
          new Uint8Array([...(parts[best] ?? []), ...(parts[best + 1] ?? [])]),
          ...parts.slice(best + 2),
        ]
      }
    },
  } as MergeCore
}

/** The merger's ids for `piece`, whole and through its cuts. */
function merged(core: MergeCore, piece: string): { whole: number[]; cut: number[] } {
  const merger = pieceMerger(core)
  const out = new Int32Array(piece.length * 3)
  const whole = Array.from(out.subarray(0, merger.merge(piece, out)))
  const at = new Int32Array(piece.length + 1)
  const single = new Int32Array(piece.length + 1)
  const count = merger.cuts(piece, at, single)
  const cut: number[] = []
  for (let c = 0, from = 0; c < count; c++) {
    const part = piece.slice(from, at[c])
    cut.push(...Array.from(out.subarray(0, merger.merge(part, out))))
    from = at[c] as number
  }
  return { whole, cut }
}

/** The textbook merge from bytes and from whole characters, to show the vocabulary tells them apart. */
function fromBytes(core: MergeCore, piece: string): number[] {
  return core.bytePairMerge(encoder.encode(piece))
}

/** The merge from bytes gives `ids` for `text`, and both fast paths (whole characters, cuts) agree. */
function expectByteMerge(core: Parameters<typeof merged>[0], text: string, ids: number[]): void {
  expect(fromBytes(core, text)).toEqual(ids)
  const { whole, cut } = merged(core, text)
  expect(whole).toEqual(ids)
  expect(cut).toEqual(ids)
}

describe('whole-character start', () => {
  it('should start a character whole where nothing crosses it, and cut between characters no token joins', () => {
    // 人 and 生 are tokens (by way of their first two bytes), no token holds both: each is a piece.
    const core = vocabulary([[0xe4, 0xba], '人', [0xe7, 0x94], '生', 'ab'])
    const { whole, cut } = merged(core, '人生ab')
    expect(whole).toEqual(fromBytes(core, '人生ab'))
    expect(cut).toEqual(whole)
    expect(whole).toEqual([257, 259, 260])
    const merger = pieceMerger(core)
    const at = new Int32Array(8)
    expect(merger.cuts('人生ab', at, new Int32Array(8))).toBe(3)
    expect(Array.from(at.subarray(0, 3))).toEqual([1, 2, 4])
  })

  it('should start a character as bytes when a token holding it ranks before its own merge', () => {
    // "Бa" ranks before "ab", which ranks before Б itself: from bytes, "ab" is made first.
    const core = vocabulary(['Бa', 'ab', 'Б'])
    expectByteMerge(core, 'Бab', [258, 257])
  })

  it('should start a character as bytes when a token covers its last byte and what follows', () => {
    // The token 0x91 "a" takes Б's second byte before Б is made.
    const core = vocabulary([[0x91, 0x61], 'Б'])
    expectByteMerge(core, 'Бa', [0xd0, 256])
  })

  it('should start a character as bytes when a token covers what precedes it and its first byte', () => {
    const core = vocabulary([[0x61, 0xd0], 'Б'])
    expectByteMerge(core, 'aБ', [256, 0x91])
  })

  it('should keep a character whole when the token across the seam covers it whole', () => {
    // "ก" + the first two bytes of the next Thai letter: the letter after starts as bytes, ก may not.
    const core = vocabulary([[0xe0, 0xb8], 'ก', 'ข', [0xe0, 0xb8, 0x81, 0xe0, 0xb8], 'กข'])
    for (const piece of ['กข', 'กขก', 'ขกข']) {
      const { whole, cut } = merged(core, piece)
      expect(whole, piece).toEqual(fromBytes(core, piece))
      expect(cut, piece).toEqual(whole)
    }
  })

  it('should merge random text over these vocabularies as the byte merge does', () => {
    const cores = [
      vocabulary(['Бa', 'ab', 'Б', 'б', 'aб']),
      vocabulary([[0x91, 0x61], 'Б', [0x61, 0xd0], 'ab', 'Бa']),
      vocabulary([
        [0xe0, 0xb8],
        'ก',
        'ข',
        [0xe0, 0xb8, 0x81, 0xe0, 0xb8],
        'กข',
        [0x81, 0xe0, 0xb8, 0x82],
        'ขก',
        [0xe4, 0xba],
        '人',
      ]),
    ]
    const letters = ['a', 'b', 'Б', 'б', 'ก', 'ข', '人', ' ']
    let seed = 7
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed / 2 ** 32
    }
    for (const core of cores) {
      for (let i = 0; i < 300; i++) {
        let piece = ''
        const length = 1 + Math.floor(next() * 8)
        for (let j = 0; j < length; j++) piece += letters[Math.floor(next() * letters.length)]
        const { whole, cut } = merged(core, piece)
        expect(whole, piece).toEqual(fromBytes(core, piece))
        expect(cut, piece).toEqual(whole)
      }
    }
  })
})
