/**
 * @module The check digits the secret detectors verify: Luhn (cards, Swedish personnummer), ISO 7064
 * mod-97 (IBAN), the two mod-11 digits of a Norwegian fødselsnummer, and CRC-32 with base62 (GitHub's
 * token checksum). Pure, allocation-free where it matters: they run on every candidate of a scan.
 */

/**
 * Whether the digits of `digits` (non-digits skipped) pass the Luhn check.
 *
 * @example
 * luhnValid('4242 4242 4242 4242') // true
 */
export function luhnValid(digits: string): boolean {
  return luhnSum(digits, false) % 10 === 0
}

/**
 * The Luhn check digit that makes `digits + d` valid (non-digits skipped).
 *
 * @example
 * luhnCheckDigit('424242424242424') // 2
 */
export function luhnCheckDigit(digits: string): number {
  return (10 - (luhnSum(digits, true) % 10)) % 10
}

/** Luhn sum from the right; `doubleFirst` when the rightmost digit given is not the check digit. */
function luhnSum(digits: string, doubleFirst: boolean): number {
  let sum = 0
  let double = doubleFirst
  for (let i = digits.length - 1; i >= 0; i--) {
    const c = digits.charCodeAt(i) - 48
    if (c < 0 || c > 9) continue
    if (double) sum += c * 2 > 9 ? c * 2 - 9 : c * 2
    else sum += c
    double = !double
  }
  return sum
}

/**
 * The ISO 7064 mod-97 remainder of an IBAN (spaces skipped): 1 for a valid one. Letters count as
 * 10..35, the first four characters move to the end; computed piecewise, no BigInt.
 *
 * @example
 * ibanRemainder('GB82 WEST 1234 5698 7654 32') // 1
 */
export function ibanRemainder(iban: string): number {
  const compact = iban.replace(/ /g, '')
  const moved = compact.slice(4) + compact.slice(0, 4)
  let remainder = 0
  for (let i = 0; i < moved.length; i++) {
    const code = moved.charCodeAt(i)
    if (code >= 48 && code <= 57) remainder = (remainder * 10 + (code - 48)) % 97
    else if (code >= 65 && code <= 90) remainder = (remainder * 100 + (code - 55)) % 97
    else return -1
  }
  return remainder
}

/**
 * The two check digits that make `country + '00' + bban` a valid IBAN, as two characters.
 *
 * @example
 * ibanCheckDigits('GB', 'WEST12345698765432') // '82'
 */
export function ibanCheckDigits(country: string, bban: string): string {
  const check = 98 - ibanRemainder(`${country}00${bban}`)
  return String(check).padStart(2, '0')
}

const FNR_K1 = [3, 7, 6, 1, 8, 9, 4, 5, 2]
const FNR_K2 = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2]

/**
 * The mod-11 control digit of a fødselsnummer over its first 9 (`k1`) or 10 (`k2`) digits; 10 means
 * no valid number has these digits.
 *
 * @example
 * fnrControl('010190123', 'k1') // the 10th digit of a valid number, or 10
 */
export function fnrControl(digits: string, which: 'k1' | 'k2'): number {
  const weights = which === 'k1' ? FNR_K1 : FNR_K2
  let sum = 0
  for (let i = 0; i < weights.length; i++) sum += (digits.charCodeAt(i) - 48) * weights[i]!
  const k = (11 - (sum % 11)) % 11
  return k
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/**
 * CRC-32 (IEEE, as zlib) of an ASCII string.
 *
 * @example
 * crc32('123456789') // 0xcbf43926
 */
export function crc32(ascii: string): number {
  let crc = 0xffffffff
  for (let i = 0; i < ascii.length; i++) {
    crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ ascii.charCodeAt(i)) & 0xff]!
  }
  return (crc ^ 0xffffffff) >>> 0
}

/**
 * Base62 as GitHub uses it: digits, then upper case, then lower case.
 *
 * @example
 * BASE62.indexOf('a') // 36
 */
export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/**
 * `value` in base62, left-padded with '0' to `width` characters.
 *
 * @example
 * base62(61, 2) // '0z'
 */
export function base62(value: number, width: number): string {
  let out = ''
  let v = value
  while (v > 0) {
    out = BASE62[v % 62] + out
    v = Math.floor(v / 62)
  }
  return out.padStart(width, '0')
}

/**
 * The checksum GitHub puts in the last 6 characters of its `ghp_`-style tokens: base62 of the CRC-32 of
 * the 30 random characters after the prefix (github.blog, 2021-04-05, "Behind GitHub's new
 * authentication token formats").
 *
 * @example
 * githubChecksum(random) === token.slice(-6) // for a real ghp_ token's 30 random characters
 */
export function githubChecksum(random: string): string {
  return base62(crc32(random), 6)
}
