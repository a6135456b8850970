/**
 * @module Byte helpers shared by the canary, the prefix record and the Worker: hex, and a comparison
 * whose time does not depend on where two secrets differ.
 */

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'))

const utf8 = new TextEncoder()

/**
 * Lowercase hex of `bytes`, two characters per byte.
 *
 * @example
 * toHex(new Uint8Array([0, 171, 255])) // '00abff'
 */
export function toHex(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) out += HEX[byte]
  return out
}

/**
 * Whether `a` and `b` hold the same bytes, in time that depends only on their lengths: every byte of
 * the longer one is read whatever matches, so response timing cannot reveal how much of a key or MAC
 * an attacker has guessed. Two strings are compared by UTF-16 code unit (stricter than UTF-8, which
 * turns every lone surrogate into U+FFFD); a string and bytes, as UTF-8.
 *
 * @example
 * constantTimeEqual(givenKey, storedKey) // true only for identical strings
 */
export function constantTimeEqual(a: Uint8Array | string, b: Uint8Array | string): boolean {
  if (typeof a === 'string' && typeof b === 'string') return sameCodeUnits(a, b)
  const x = typeof a === 'string' ? utf8.encode(a) : a
  const y = typeof b === 'string' ? utf8.encode(b) : b
  const n = Math.max(x.length, y.length)
  let diff = x.length ^ y.length
  for (let i = 0; i < n; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0)
  return diff === 0
}

/** Two strings by code unit, without encoding them (two encodes cost ~2 µs a call in workerd). */
function sameCodeUnits(a: string, b: string): boolean {
  const n = Math.max(a.length, b.length)
  let diff = a.length ^ b.length
  // Past the end charCodeAt gives NaN, which `| 0` makes 0.
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0)
  return diff === 0
}
