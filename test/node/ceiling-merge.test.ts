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
})
