/**
 * @module Deterministic text generators for the ceiling tests (seeded, so failures replay).
 */

import { prng as rng } from '../../sim/random'

/** The simulator's seeded PRNG (mulberry32), so failures replay. */
export { rng }

// Pieces chosen to stress a byte-level BPE: ASCII, Latin with combining marks, CJK, emoji with
// modifiers and ZWJ, RTL, digits, whitespace of every kind, lone surrogates, special-token text.
const ATOMS = [
  'a',
  'Z',
  'the',
  ' the',
  'Hello',
  "'s",
  "'LL",
  ' ',
  '  ',
  '\t',
  '\n',
  '\r\n',
  '\u00a0',
  '\u2028',
  '0',
  '12',
  '345',
  '6789',
  '.',
  ',',
  '!?',
  '/',
  '//',
  '{',
  '}',
  '=>',
  '中',
  '文字',
  '漢字かな',
  '한국어',
  '😀',
  '👍🏽',
  '👩‍👩‍👧',
  '🇳🇴',
  'é',
  'e\u0301',
  'a\u0300\u0301\u0302',
  '\u0300',
  'ß',
  'İ',
  'ǅ',
  'ʰ',
  'مرحبا',
  'שלום',
  'Привет',
  'Ωμέγα',
  '\ud800',
  '\udc00x',
  '<|endoftext|>',
  '<|im_start|>',
  '\u0000',
  '\ufeff',
  '\u{10ffff}',
  '\u{1f600}\u{1f600}\u{1f600}',
]

/** A random string of `atoms` pieces drawn from a hostile mix of Unicode. */
export function randomUnicode(next: () => number, atoms: number): string {
  let text = ''
  for (let i = 0; i < atoms; i++) text += ATOMS[Math.floor(next() * ATOMS.length)]
  return text
}

/** Random code points from the whole Unicode range (surrogates included, as lone units). */
export function randomCodePoints(next: () => number, length: number): string {
  let text = ''
  for (let i = 0; i < length; i++) {
    const bucket = next()
    const max = bucket < 0.4 ? 0x80 : bucket < 0.6 ? 0x800 : bucket < 0.9 ? 0x10000 : 0x110000
    text += String.fromCodePoint(Math.floor(next() * max))
  }
  return text
}

/**
 * `count` seeded random texts of `size`, alternating the two generators above (code points first).
 *
 * @example
 * for (const text of mixedTexts(41, 300, 40)) expect(utf8Length(text)).toBe(encode(text).length)
 */
export function mixedTexts(seed: number, count: number, size: number): string[] {
  const next = rng(seed)
  const texts: string[] = []
  for (let i = 0; i < count; i++) {
    texts.push(i % 2 ? randomUnicode(next, size) : randomCodePoints(next, size))
  }
  return texts
}

const WORDS = [
  'cache',
  'prefill',
  'decode',
  'tenant',
  'request',
  'token',
  'window',
  'pool',
  'guard',
  'model',
  'answer',
  'stream',
  'the',
  'a',
  'of',
  'and',
  'to',
  'in',
  'is',
  'that',
  'it',
  'was',
  'for',
  'on',
  'engineers',
  'measured',
  'quickly',
  'because',
  'nothing',
  'checked',
  'content',
  'leak',
  'page',
]

/** English-like prose, `words` long. */
export function prose(next: () => number, words: number): string {
  const out: string[] = []
  for (let i = 0; i < words; i++) {
    let word = WORDS[Math.floor(next() * WORDS.length)] ?? 'x'
    if (i % 12 === 0) word = word[0]!.toUpperCase() + word.slice(1)
    out.push(i % 12 === 11 ? `${word}.` : word)
  }
  return out.join(' ')
}
