/**
 * @module Keyed hashing of units, shingles and fingerprints, all derived from the 32-byte content seed
 * (`contentSeed(key)` in src/core/canary). Two layers, for cost:
 * - the **shingle hash**: two 32-bit lanes per unit (seeded multiply-xor hashes of its text), a
 *   rolling polynomial per lane over the last n units (odd keyed multipliers, mod 2^32), and a keyed
 *   bijective finish to 52 bits. Keyed but not cryptographic: it orders winnowing and tests a shingle
 *   against this request's own prompt, inside one request, and is never stored. Distinct shingles
 *   collide with probability about 2^-52 (non-adversarial text).
 * - the **fingerprint**: SipHash-2-4 of a selected shingle hash (src/plugins/foreign-content/siphash.ts), a
 *   keyed PRF. Only fingerprints are stored and shared, so without the key nobody — not a reader of
 *   the store — can tell which text gives a stored value. Computed only for winnowed shingles.
 */
import { sipHash52 } from './siphash'

/** Everything the hashes need, derived once from the seed. */
export interface FingerprintKey {
  /** The SipHash-2-4 key: 128 bits of the seed. */
  readonly sip: Int32Array
  /** Seeds of the two unit lanes. */
  readonly seedA: number
  readonly seedB: number
  /** Odd multipliers of the two rolling lanes. */
  readonly rollA: number
  readonly rollB: number
  /** Keys of the shingle hash's finish. */
  readonly finishA: number
  readonly finishB: number
}

const TWO_32 = 0x100000000

/**
 * The hash key of a 32-byte content seed. The SipHash key is its first 16 bytes; the other constants
 * are SipHash outputs of fixed labels under the last 16 bytes, so no two roles share bits.
 *
 * @example
 * const key = fingerprintKey(await contentSeed(canaryKey))
 */
export function fingerprintKey(seed: Uint8Array): FingerprintKey {
  if (seed.byteLength < 32) throw new Error('fingerprintKey: the seed must have 32 bytes')
  const word = (i: number) =>
    seed[i]! | (seed[i + 1]! << 8) | (seed[i + 2]! << 16) | (seed[i + 3]! << 24) | 0
  const sip = new Int32Array([word(0), word(4), word(8), word(12)])
  const derive = new Int32Array([word(16), word(20), word(24), word(28)])
  const label = (n: number) => (sipHash52(derive, n, 0x66707231) % TWO_32) | 0
  return {
    sip,
    seedA: label(1),
    seedB: label(2),
    rollA: label(3) | 1,
    rollB: label(4) | 1,
    finishA: label(5),
    finishB: label(6),
  }
}

/** Murmur3's 32-bit finaliser: a bijection with full avalanche. */
function fmix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return h ^ (h >>> 16)
}

/**
 * The two 32-bit lanes of a unit's hash, written to `out[0]` and `out[1]`: seeded FNV-1a and a
 * Murmur3-style step over the UTF-16 code units of `text.slice(from, to)` (ASCII capitals lowered on
 * the fly when `fold`), each finished by a bijective mixer; two different steps, so the lanes collide
 * independently.
 *
 * @example
 * const lanes = new Int32Array(2)
 * unitLanes(key, { text: 'Word', from: 0, to: 4, fold: true }, lanes) // the lanes of 'word'
 */
export function unitLanes(
  key: FingerprintKey,
  unit: {
    readonly text: string
    readonly from: number
    readonly to: number
    readonly fold: boolean
  },
  out: Int32Array,
): void {
  const { text, from, to, fold } = unit
  let a = key.seedA
  let b = key.seedB
  for (let i = from; i < to; i++) {
    let c = text.charCodeAt(i)
    if (fold && c >= 65 && c <= 90) c += 32
    a = Math.imul(a ^ c, 0x01000193)
    let k = Math.imul(c, 0xcc9e2d51)
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593)
    b ^= k
    b = (Math.imul((b << 13) | (b >>> 19), 5) + 0xe6546b64) | 0
  }
  out[0] = fmix32(a ^ (to - from))
  out[1] = fmix32(b ^ (to - from))
}

/**
 * `roll^power` mod 2^32: the weight with which a unit leaves a rolling window of `power + 1` units.
 *
 * @example
 * const out = rollPower(key.rollA, n - 1)
 */
export function rollPower(roll: number, power: number): number {
  let result = 1
  for (let i = 0; i < power; i++) result = Math.imul(result, roll)
  return result
}

/**
 * The shingle hash of the two rolling sums: a keyed bijection of the 64 bits (Feistel-like: each step
 * is invertible given the other half), truncated to 52 bits.
 *
 * @example
 * const hash = shingleHash(key, sumA, sumB) // integer in [0, 2^52)
 */
export function shingleHash(key: FingerprintKey, sumA: number, sumB: number): number {
  const a = fmix32(sumA ^ key.finishA)
  const b = fmix32(((sumB ^ key.finishB) + a) | 0)
  const c = (a + fmix32(b ^ 0x5bd1e995)) | 0
  return (b & 0xfffff) * TWO_32 + (c >>> 0)
}

/**
 * The fingerprint of a shingle hash: SipHash-2-4 under the key, 52 bits. What the table stores.
 *
 * @example
 * table.add(model, tenant, [fingerprintOf(key, shingle.hash)], Date.now())
 */
export function fingerprintOf(key: FingerprintKey, hash: number): number {
  // `hash | 0` is its low 32 bits (ToInt32 reduces mod 2^32), without a floating-point remainder.
  return sipHash52(key.sip, hash | 0, Math.floor(hash / TWO_32) | 0)
}
