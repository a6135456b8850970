/**
 * @module What the foreign-content watch's Node tests share: a fingerprint key derived as the guard
 * derives it, and a span of a text cut at unit boundaries.
 */
import { contentSeed, importCanaryKey } from '../../src/core/canary'
import { type FingerprintKey, fingerprintKey, units } from '../../src/plugins/foreign-content'

/**
 * The fingerprint key of a canary secret made of `letter` (the guard's derivation).
 *
 * @example
 * const key = await testFingerprintKey('x')
 */
export async function testFingerprintKey(letter: string): Promise<FingerprintKey> {
  return fingerprintKey(await contentSeed(await importCanaryKey(letter.repeat(32))))
}

/**
 * `count` units of `text` from unit `first`, as written there.
 *
 * @example
 * span('one two three four', 1, 2) // 'two three'
 */
export function span(text: string, first: number, count: number): string {
  const u = units(text)
  return text.slice(u[first]!.start, u[first + count - 1]!.end)
}
