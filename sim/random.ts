/**
 * @module Seeded pseudo-randomness and cheap hashing, so every simulator run is reproducible byte for byte.
 */

/** A seeded generator of floats in [0, 1). */
export type Prng = () => number

/**
 * A 32-bit FNV-1a style mix of integers; used to derive independent seeds per request and purpose, so
 * the byte-splitting stream never perturbs the content stream (stream and non-stream must agree).
 *
 * @example
 * const seed = mixSeed(config.seed, ordinal, PURPOSE.content)
 */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5
  for (const part of parts) {
    let v = Math.trunc(part) >>> 0
    const hi = Math.trunc(part / 2 ** 32) >>> 0
    for (const word of [v, hi]) {
      v = word
      for (let i = 0; i < 4; i++) {
        h ^= v & 0xff
        h = Math.imul(h, 0x01000193)
        v >>>= 8
      }
    }
  }
  return h >>> 0
}

/** Distinct streams of randomness per request. */
export const PURPOSE = { content: 1, split: 2, timing: 3, stale: 4 } as const

/**
 * Mulberry32: small, fast and good enough for simulation choices.
 *
 * @example
 * const rand = prng(mixSeed(1, 0, PURPOSE.split)); if (rand() < 0.5) splitHere()
 */
export function prng(seed: number): Prng {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * An integer in [min, max] from a generator.
 *
 * @example
 * const cut = randomInt(rand, 1, bytes.length - 1)
 */
export function randomInt(rand: Prng, min: number, max: number): number {
  return min + Math.floor(rand() * (max - min + 1))
}

/**
 * A 53-bit hash of a string (cyrb53); keys the per-account root of the prefix-cache hash chain.
 *
 * @example
 * const root = hashString('account:tenant-a')
 */
export function hashString(text: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed
  let h2 = 0x41c6ce57 ^ seed
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ ch, 2654435761)
    h2 = Math.imul(h2 ^ ch, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}

/**
 * Chains a parent hash with one page of token ids (SGLang's radix cache keys pages by their whole
 * prefix, so the same page after a different prefix is a different entry).
 *
 * @example
 * const key = hashPage(parentKey, tokens, start, end)
 */
export function hashPage(
  parent: number,
  tokens: ArrayLike<number>,
  start: number,
  end: number,
): number {
  let h1 = (parent >>> 0) ^ 0x9e3779b9
  let h2 = Math.trunc(parent / 4294967296) ^ 0x85ebca6b
  for (let i = start; i < end; i++) {
    const t = tokens[i] ?? 0
    h1 = Math.imul(h1 ^ t, 2654435761)
    h2 = Math.imul(h2 ^ t, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}
