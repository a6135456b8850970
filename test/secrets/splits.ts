/**
 * @module Where a text is cut into pieces, as an upstream's events might cut it: shared by the
 * secrets' hold-back and release-stage properties.
 */

/** Every end position of a text cut one character at a time. */
export const everyPosition = (text: string): number[] =>
  Array.from({ length: text.length }, (_, i) => i + 1)

/**
 * The end positions of `text` cut into pieces of the given lengths (cycled), the last at its end.
 *
 * @example
 * endsOf('abcdef', [2, 3]) // [2, 5, 6]
 */
export function endsOf(text: string, lengths: readonly number[]): number[] {
  const ends: number[] = []
  let at = 0
  for (let i = 0; at < text.length; i++) {
    at = Math.min(text.length, at + lengths[i % lengths.length]!)
    ends.push(at)
  }
  return ends
}
