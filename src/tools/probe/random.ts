/**
 * @module The probe's seeded randomness: filler words, needles and tags, reproducible under `--seed`.
 *
 * Why seeded and not `Math.random`: a run that found a leak must be replayable byte for byte by the
 * operator who investigates it, and a run without `--seed` must still be unpredictable to the target
 * (a deployment cannot be allowed to "know" the needles), so the default seed comes from WebCrypto.
 */

/** A seeded source of 32-bit words, with the few helpers the probe needs. */
export interface Rng {
  /** The seed this generator started from (printed in the report, for replay). */
  readonly seed: number
  /** A uniform integer in [0, 2^32). */
  uint32(): number
  /** A uniform integer in [min, max] (inclusive). */
  int(min: number, max: number): number
  /** `length` characters drawn uniformly from `alphabet`. */
  chars(alphabet: string, length: number): string
}

/**
 * A fresh 32-bit seed from `crypto.getRandomValues` (WebCrypto: workerd and Node alike).
 *
 * @example
 * const rng = seededRng(options.seed ?? randomSeed())
 */
export function randomSeed(): number {
  const [seed = 0] = crypto.getRandomValues(new Uint32Array(1))
  return seed
}

/**
 * Whether `n` is a valid seed: an integer in [0, 2^32).
 *
 * @example
 * isSeed(42) // true
 */
export function isSeed(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= 0xffffffff
}

/**
 * SFC32 seeded through SplitMix32: fast, passes PractRand far beyond the few million draws a probe
 * makes, and identical on every engine (32-bit integer arithmetic only).
 *
 * @example
 * const rng = seededRng(42)
 * rng.chars('0123456789', 6) // the same six digits on every run with seed 42
 */
export function seededRng(seed: number): Rng {
  if (!isSeed(seed)) throw new Error('seed must be an integer in [0, 4294967295]')
  let s = seed >>> 0
  const split = (): number => {
    s = (s + 0x9e3779b9) >>> 0
    let z = s
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
    return (z ^ (z >>> 16)) >>> 0
  }
  let a = split()
  let b = split()
  let c = split()
  let d = split()
  const uint32 = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0
    d = (d + 1) >>> 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) >>> 0
    c = ((c << 21) | (c >>> 11)) >>> 0
    c = (c + t) >>> 0
    return t
  }
  for (let i = 0; i < 12; i++) uint32()
  return {
    seed,
    uint32,
    int(min, max) {
      // Float scaling is unbiased enough here: ranges are tiny next to 2^32.
      return min + Math.floor((uint32() / 4294967296) * (max - min + 1))
    },
    chars(alphabet, length) {
      let out = ''
      for (let i = 0; i < length; i++)
        out += alphabet[Math.floor((uint32() / 4294967296) * alphabet.length)]
      return out
    },
  }
}
