/**
 * @module Maximal admissible prompts per script: the longest text of each script the ceiling admits
 * (within 0.5%), shared by the benches that time one maximal prompt in Node and in workerd.
 */
import { estimateTexts } from '../../src/core/ceiling/estimate'
import { sized, udhrText } from '../../test/node/ceiling-corpus'
import { cjk, english, rng } from '../texts'
import { CEILING, decide } from './prompt-stages'

/** Text of each script, `chars` long; `variant` picks another text of the same script. */
export const SCRIPTS: Record<string, (chars: number, variant?: number) => string> = {
  english: (chars, variant = 0) => english(7 + variant, chars),
  russian: (chars, variant = 0) => sized(rotate(udhrText('rus'), variant), chars),
  chinese: (chars, variant = 0) => sized(rotate(udhrText('cmn_hans'), variant), chars),
  thai: (chars, variant = 0) => sized(rotate(udhrText('tha'), variant), chars),
  'chinese prose': (chars, variant = 0) => cjk(11 + variant, chars),
  'thai prose': (chars, variant = 0) => shuffled(udhrText('tha'), 11 + variant, chars),
}

/**
 * Text of `source`'s letters with few repeats, as real prose has them: runs of 4–40 characters cut
 * from it at random places, joined by spaces (a repeated declaration is merged once and then
 * answered from the tokenizer's memo; a book is not).
 */
function shuffled(source: string, seed: number, chars: number): string {
  const letters = source.replace(/\s+/g, '')
  const next = rng(seed)
  const parts: string[] = []
  let length = 0
  while (length < chars) {
    const run = 4 + Math.floor(next() * 36)
    const at = Math.floor(next() * (letters.length - run))
    parts.push(letters.slice(at, at + run))
    length += run + 1
  }
  return parts.join(' ').slice(0, chars)
}

/** `text` started `variant` sevenths of the way in, so each variant repeats a different cut. */
function rotate(text: string, variant: number): string {
  const at = Math.floor((text.length * (variant % 7)) / 7)
  return text.slice(at) + text.slice(0, at)
}

/**
 * A prompt of `make` text just under the ceiling on the count path (for English the byte bound
 * admits only a quarter of what the count does): scaled from the family bound of a sample, then
 * moved in 0.5% steps to the longest the ceiling admits.
 */
export async function maximal(make: (chars: number) => string): Promise<string> {
  const sample = make(200_000)
  const perChar = ((await estimateTexts([sample])).bound * 1.03) / sample.length
  let chars = Math.floor(CEILING / perChar)
  const long = make(Math.ceil(chars * 1.2))
  const fits = async (n: number) => (await decide(long.slice(0, n))).fits
  if (await fits(chars)) {
    while (await fits(Math.floor(chars * 1.005))) chars = Math.floor(chars * 1.005)
  } else {
    while (!(await fits(chars))) chars = Math.floor(chars * 0.995)
  }
  return long.slice(0, chars)
}
