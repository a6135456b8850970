/**
 * @module SipHash-2-4 (Aumasson & Bernstein, 2012) of one 64-bit word, in 32-bit halves: the keyed PRF
 * that turns a shingle hash into the fingerprint that is stored and shared. Without the 128-bit key,
 * a stored fingerprint cannot be tested against a guessed text (no offline dictionary), which is the
 * property the designers claim for SipHash-2-4 as a PRF.
 */

/**
 * SipHash-2-4 of the 8-byte little-endian message `hi:lo` under `key` (four 32-bit words, k0 low
 * first), truncated to its low 52 bits (a non-negative integer < 2^52, exact as a JS number).
 *
 * @example
 * const key = new Int32Array([1, 2, 3, 4])
 * sipHash52(key, 0x12345678, 0x9abcdef) // an integer in [0, 2^52)
 */
export function sipHash52(key: Int32Array, lo: number, hi: number): number {
  let v0l = key[0]! ^ 0x70736575
  let v0h = key[1]! ^ 0x736f6d65
  let v1l = key[2]! ^ 0x6e646f6d
  let v1h = key[3]! ^ 0x646f7261
  let v2l = key[0]! ^ 0x6e657261
  let v2h = key[1]! ^ 0x6c796765
  let v3l = key[2]! ^ 0x79746573
  let v3h = key[3]! ^ 0x74656462
  let t = 0
  let s = 0
  // Two blocks (the message, then the length block: 8 << 56), two rounds each, then four rounds.
  for (let round = 0; round < 8; round++) {
    if (round === 0) {
      v3l ^= lo
      v3h ^= hi
    } else if (round === 2) {
      v0l ^= lo
      v0h ^= hi
      v3h ^= 0x08000000
    } else if (round === 4) {
      v0h ^= 0x08000000
      v2l ^= 0xff
    }
    s = (v0l + v1l) | 0
    v0h = (v0h + v1h + carry(v0l, v1l, s)) | 0
    v0l = s
    t = (v1l << 13) | (v1h >>> 19)
    v1h = ((v1h << 13) | (v1l >>> 19)) ^ v0h
    v1l = t ^ v0l
    t = v0l
    v0l = v0h
    v0h = t
    s = (v2l + v3l) | 0
    v2h = (v2h + v3h + carry(v2l, v3l, s)) | 0
    v2l = s
    t = (v3l << 16) | (v3h >>> 16)
    v3h = ((v3h << 16) | (v3l >>> 16)) ^ v2h
    v3l = t ^ v2l
    s = (v0l + v3l) | 0
    v0h = (v0h + v3h + carry(v0l, v3l, s)) | 0
    v0l = s
    t = (v3l << 21) | (v3h >>> 11)
    v3h = ((v3h << 21) | (v3l >>> 11)) ^ v0h
    v3l = t ^ v0l
    s = (v2l + v1l) | 0
    v2h = (v2h + v1h + carry(v2l, v1l, s)) | 0
    v2l = s
    t = (v1l << 17) | (v1h >>> 15)
    v1h = ((v1h << 17) | (v1l >>> 15)) ^ v2h
    v1l = t ^ v2l
    t = v2l
    v2l = v2h
    v2h = t
  }
  const low = (v0l ^ v1l ^ v2l ^ v3l) >>> 0
  const high = (v0h ^ v1h ^ v2h ^ v3h) & 0xfffff
  return high * 0x100000000 + low
}

/**
 * The carry out of adding two 32-bit words whose 32-bit sum is `sum`, from their top bits alone (both
 * set, or either set and the sum's clear), in int32 arithmetic only: comparing them as unsigned
 * (`>>> 0`) turns the halves into doubles and made each hash about twice as slow.
 */
function carry(a: number, b: number, sum: number): number {
  return ((a & b) | ((a | b) & ~sum)) >>> 31
}
