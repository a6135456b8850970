/**
 * @module The ceiling's merge (src/core/ceiling/bpe-merge.ts), from the pre-token's string as the ceiling
 * runs it, against gpt-tokenizer's own merge of its UTF-8 bytes, pre-token by pre-token, on UDHR prose in every translation the family bound is measured on, the
 * generated kinds of text and random letters of every script block: the same token ids, so every
 * count and family estimate built from them is the same.
 */
import o200k from 'gpt-tokenizer/encoding/o200k_base'
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants'
import { describe, expect, it } from 'vitest'
import { isMergeCore, type MergeCore, pieceMerger } from '../../src/core/ceiling/bpe-merge'
import { chunkEnd, LONG_PIECE_UNITS, pieceTokenizer } from '../../src/core/ceiling/count'
import {
  GENERATED,
  randomScript,
  rng,
  SCRIPT_BLOCKS,
  sized,
  UDHR_LANGUAGES,
  udhrText,
} from './ceiling-corpus'

const encoder = new TextEncoder()

// No @types/node in this project: the Node APIs used here are typed locally (as ceiling-corpus.ts does).
const load = (name: string): Promise<unknown> => import(name)
const { existsSync, readdirSync, readFileSync } = (await load('node:fs')) as {
  existsSync(path: string): boolean
  readdirSync(path: string): string[]
  readFileSync(path: string): Uint8Array
}
const { gunzipSync } = (await load('node:zlib')) as { gunzipSync(data: Uint8Array): Uint8Array }

function core(): MergeCore {
  const value: unknown = Reflect.get(o200k, 'bytePairEncodingCoreProcessor')
  if (!isMergeCore(value)) throw new Error('gpt-tokenizer has no bytePairMerge')
  return value
}

/** The library's merge, from its prototype (the ceiling replaces it on the instance only). */
function libraryMerge(of: MergeCore): (piece: Uint8Array) => number[] {
  const proto: unknown = Object.getPrototypeOf(of)
  if (!isMergeCore(proto)) throw new Error('gpt-tokenizer has no bytePairMerge')
  return (piece) => proto.bytePairMerge.call(of, piece)
}

/** Every pre-token of `text` as the ceiling merges it: cut into chunks past LONG_PIECE_UNITS. */
function* piecesOf(text: string): Generator<string> {
  for (const [piece] of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
    if (piece.length <= LONG_PIECE_UNITS) yield piece
    else {
      for (let start = 0, end = 0; start < piece.length; start = end) {
        end = chunkEnd(piece, start)
        yield piece.slice(start, end)
      }
    }
  }
}

/** The ceiling's merge of a pre-token's string, as an array. */
function oursOf(of: MergeCore): (piece: string) => number[] {
  const merger = pieceMerger(of)
  const out = new Int32Array(512)
  return (piece) => Array.from(out.subarray(0, merger.merge(piece, out)))
}

/** Pieces whose merged ids differ between the two merges (at most the first 5). */
function differences(texts: readonly string[], merge: (piece: string) => number[]) {
  const library = libraryMerge(core())
  const out: { piece: string; ours: number[]; library: number[] }[] = []
  let merged = 0
  for (const text of texts) {
    for (const piece of piecesOf(text)) {
      const bytes = encoder.encode(piece)
      if (bytes.length < 2) continue
      merged++
      const ours = merge(piece)
      const theirs = library(bytes)
      if (ours.join() !== theirs.join() && out.length < 5)
        out.push({ piece, ours, library: theirs })
    }
  }
  return { merged, out }
}

describe('ceiling pair-table merge', () => {
  it('should be what the ceiling counts with: every pre-token as the library encodes it', async () => {
    const { encodePiece } = await pieceTokenizer()
    const text = [udhrText('cmn_hans'), udhrText('tha'), udhrText('rus')].join('\n')
    let checked = 0
    for (const piece of piecesOf(text)) {
      const theirs = o200k.encode(piece, { disallowedSpecial: new Set() })
      expect([...encodePiece(piece)], piece).toEqual(theirs)
      checked++
    }
    expect(checked).toBeGreaterThan(2_000)
  })

  it('should write a lone surrogate as U+FFFD, as TextEncoder does', () => {
    const merge = oursOf(core())
    for (const piece of ['\ud800', 'a\udc00b', '\ud83d', '人\udfff生', '😀\ud83d']) {
      expect(merge(piece), JSON.stringify(piece)).toEqual(
        libraryMerge(core())(encoder.encode(piece)),
      )
    }
  })

  it('should merge UDHR prose of every measured language as the library does', () => {
    const texts = UDHR_LANGUAGES.map(([code]) => udhrText(code))
    const { merged, out } = differences(texts, oursOf(core()))
    expect(merged).toBeGreaterThan(50_000)
    expect(out).toEqual([])
  })

  it('should merge generated kinds and random letters of every script block as the library does', () => {
    const next = rng(46)
    const texts = [
      ...Object.values(GENERATED).map((make) => make(next, 20_000)),
      ...Object.values(SCRIPT_BLOCKS).map((block) => randomScript(next, 20_000, block)),
    ]
    const { merged, out } = differences(texts, oursOf(core()))
    expect(merged).toBeGreaterThan(50_000)
    expect(out).toEqual([])
  })

  it('should merge as the library does with only its two methods (no token filter, no string look-up)', () => {
    // A library that keeps its tables elsewhere: every pair is asked of getBpeRankFromBytes.
    const full = core()
    const bare: MergeCore = {
      bytePairMerge: full.bytePairMerge.bind(full),
      getBpeRankFromBytes: full.getBpeRankFromBytes.bind(full),
    }
    const next = rng(60)
    const texts = [
      sized(udhrText('cmn_hans'), 20_000),
      sized(udhrText('tha'), 20_000),
      randomScript(next, 20_000, SCRIPT_BLOCKS.hanCommon ?? [0, 0]),
    ]
    const { merged, out } = differences(texts, oursOf(bare))
    expect(merged).toBeGreaterThan(5_000)
    expect(out).toEqual([])
  })

  it('should give the same ids after its pair table fills and is emptied', () => {
    // Random Han text has far more distinct pairs than the table holds before it is emptied.
    const next = rng(7)
    const texts = [0, 1, 2, 3].map(() =>
      randomScript(next, 150_000, SCRIPT_BLOCKS.hanCommon ?? [0, 0]),
    )
    texts.push(sized(udhrText('cmn_hans'), 50_000))
    const { merged, out } = differences(texts, oursOf(core()))
    expect(merged).toBeGreaterThan(80_000)
    expect(out).toEqual([])
  })

  it('should encode every pre-token through its cuts as the library does, on every corpus', async () => {
    // encodePiece cuts a pre-token where no token crosses and remembers the pieces (count.ts).
    const { encodePiece } = await pieceTokenizer()
    const next = rng(61)
    const texts = [
      ...UDHR_LANGUAGES.map(([code]) => udhrText(code)),
      ...Object.values(GENERATED).map((make) => make(next, 10_000)),
      ...Object.values(SCRIPT_BLOCKS).map((block) => randomScript(next, 10_000, block)),
    ]
    const { merged, out } = differences(texts, (piece) => [...encodePiece(piece)])
    expect(merged).toBeGreaterThan(100_000)
    expect(out).toEqual([])
  })

  it('should merge text around every o200k token that covers part of a character as the library does', async () => {
    // The tokens the whole-character start and the cuts must see across a seam: each placed in
    // text that completes its partial characters with letters of several scripts.
    const full = core()
    const entries: unknown = Reflect.get(full, 'bytePairNonUtfSortedEncoder')
    if (!Array.isArray(entries)) throw new Error('gpt-tokenizer keeps no byte-string tokens')
    const { encodePiece } = await pieceTokenizer()
    const pieces = seamPieces(entries.map((entry) => (entry as [Uint8Array, number])[0]))
    expect(pieces.length).toBeGreaterThan(2_000)
    const library = libraryMerge(full)
    const merge = oursOf(full)
    const wrong = pieces.filter((piece) => {
      const theirs = library(encoder.encode(piece)).join()
      return merge(piece).join() !== theirs || [...encodePiece(piece)].join() !== theirs
    })
    expect(wrong.slice(0, 5)).toEqual([])
  })

  const machineText = realText()
  it.skipIf(machineText.length < 50_000)(
    "should encode this machine's Chinese, Thai and Japanese translations and manual pages as the library does",
    async () => {
      const { encodePiece } = await pieceTokenizer()
      const { merged, out } = differences([machineText], (piece) => [...encodePiece(piece)])
      expect(merged).toBeGreaterThan(10_000)
      expect(out).toEqual([])
    },
  )
})

/** Letters of several scripts, to complete the characters a byte-string token holds in part. */
const FILLERS = [...'人生而自由的国中文ไทยภาษาการคนรักษ์日本語のカタカナРусскийязыкหน้าที่ 한국어'].map(
  (c) => encoder.encode(c),
)

/** Characters whose UTF-8 ends with `tail` (or starts with `head`), from {@link FILLERS} and the BMP. */
function completing(bytes: Uint8Array, at: 'end' | 'start'): Uint8Array[] {
  const found: Uint8Array[] = []
  const fits = (char: Uint8Array) => {
    if (char.length <= bytes.length) return false
    const offset = at === 'end' ? char.length - bytes.length : 0
    return bytes.every((b, i) => char[offset + i] === b)
  }
  for (const char of FILLERS) if (fits(char) && found.length < 2) found.push(char)
  for (let point = 0x80; point < 0x10000 && found.length < 4; point += 7) {
    if (point >= 0xd800 && point <= 0xdfff) continue
    const char = encoder.encode(String.fromCodePoint(point))
    if (fits(char)) found.push(char)
  }
  return found
}

/** Valid text pieces holding each byte-string token, its partial characters completed. */
function seamPieces(tokens: readonly Uint8Array[]): string[] {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })
  const continuation = (b: number) => (b & 0xc0) === 0x80
  const pieces: string[] = []
  for (const token of tokens) {
    let lead = 0
    while (lead < token.length && continuation(token[lead] as number)) lead++
    let last = token.length - 1
    while (last > lead && continuation(token[last] as number)) last--
    const first = token[last] as number
    const size = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1
    const open = last + size > token.length
    const heads = lead > 0 ? completing(token.subarray(0, lead), 'end') : [new Uint8Array(0)]
    const tails = open ? completing(token.subarray(last), 'start') : [new Uint8Array(0)]
    const middle = token.subarray(lead, open ? last : token.length)
    for (const head of heads) {
      for (const tail of tails) {
        const before = lead > 0 ? head.subarray(0, head.length - lead) : head
        const after = open ? tail.subarray(token.length - last) : tail
        for (const [left, right] of [
          [[], []],
          [FILLERS[0], FILLERS[5]],
          [FILLERS[9], FILLERS[12]],
        ] as const) {
          const bytes = new Uint8Array([
            ...(left ?? []),
            ...before,
            ...token.subarray(0, lead),
            ...middle,
            ...(open ? token.subarray(last) : []),
            ...after,
            ...(right ?? []),
          ])
          try {
            pieces.push(decoder.decode(bytes))
          } catch {
            // Not a text (the token holds bytes no character has): it can never be merged.
          }
        }
      }
    }
  }
  return pieces
}

/** The msgstr texts of a gettext .mo file (little- or big-endian). */
function moStrings(file: Uint8Array): string[] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength)
  const little = view.getUint32(0, true) === 0x950412de
  const read = (at: number) => view.getUint32(at, little)
  const decoder = new TextDecoder()
  const count = read(8)
  const table = read(16)
  const texts: string[] = []
  for (let i = 0; i < count; i++) {
    const length = read(table + 8 * i)
    const offset = read(table + 8 * i + 4)
    texts.push(decoder.decode(file.subarray(offset, offset + length)))
  }
  return texts
}

/**
 * Real Chinese, Thai and Japanese this machine holds, when it does (Debian's translations under
 * /usr/share/locale and manual pages under /usr/share/man): text the mechanism was never tuned on.
 */
function realText(): string {
  const parts: string[] = []
  for (const locale of ['zh_CN', 'zh_TW', 'th', 'ja']) {
    const dir = `/usr/share/locale/${locale}/LC_MESSAGES`
    if (!existsSync(dir)) continue
    for (const name of readdirSync(dir)
      .filter((n) => n.endsWith('.mo'))
      .slice(0, 40)) {
      try {
        parts.push(...moStrings(readFileSync(`${dir}/${name}`)))
      } catch {
        // Not a .mo file this reader knows: skipped.
      }
    }
  }
  for (const locale of ['ja', 'zh_CN', 'zh_TW']) {
    const dir = `/usr/share/man/${locale}/man1`
    if (!existsSync(dir)) continue
    for (const name of readdirSync(dir)
      .filter((n) => n.endsWith('.gz'))
      .slice(0, 150)) {
      parts.push(new TextDecoder().decode(gunzipSync(readFileSync(`${dir}/${name}`))))
    }
  }
  return parts.join('\n')
}
