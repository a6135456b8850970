/**
 * @module Where, at the end of a growing text, a stand-in could still be forming: a stream's release
 * stage holds that tail back, so no stand-in is released half-restored or half-judged.
 *
 * Any candidate is at most {@link MAX_STAND_IN_LENGTH} characters, so one starting earlier than that
 * before the end is complete. Most text is held much less: the built-in kinds' candidates
 * (src/plugins/secrets/stand-in-shapes.ts) hold no whitespace, except the digit-group kinds (cards, IBANs,
 * national numbers: digits and upper-case letters in groups) and PEM blocks (which begin with
 * `-----BEGIN`). So an incomplete candidate lies in the final run without whitespace, in the final
 * run of group characters, or from the last `-----BEGIN` on — and prose holds back one word.
 */
import { MAX_STAND_IN_LENGTH } from './stand-in-shapes'

const PEM_START = '-----BEGIN'

/** Whitespace as the candidate patterns see it (`\s` of the characters that occur in text). */
function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x2028 || c === 0x2029
}

/**
 * Characters of the digit-group kinds and of what their patterns look at around them: digits,
 * upper-case letters, the separators (space, `-`) and the look-ahead's `.`, `,`, `+`, `_`.
 */
function isGroupChar(c: number): boolean {
  return (
    (c >= 48 && c <= 57) ||
    (c >= 65 && c <= 90) ||
    c === 32 ||
    c === 45 ||
    c === 46 ||
    c === 44 ||
    c === 43 ||
    c === 95
  )
}

/**
 * The index of `text` from which a stand-in could still be forming (`text.length`: none can).
 * `longest` is the longest candidate to allow for; `wide` says the recognised kinds include operator
 * patterns, whose candidates may hold anything: then the whole last `longest − 1` characters are held.
 *
 * @example
 * formingFrom('the key is sk-proj-Ab', MAX_STAND_IN_LENGTH, false) // 11: "sk-proj-Ab" may go on
 */
export function formingFrom(text: string, longest: number, wide: boolean): number {
  const end = text.length
  const bound = Math.max(0, end - (Math.max(longest, MAX_STAND_IN_LENGTH) - 1))
  if (wide) return bound
  let word = end
  while (word > bound && !isSpace(text.charCodeAt(word - 1))) word--
  let group = end
  while (group > bound && isGroupChar(text.charCodeAt(group - 1))) group--
  let from = Math.min(word, group)
  // The earliest `-----BEGIN` from the bound on (searched forward from it: a backward search from
  // the end read the whole held text when there was none).
  const pem = text.indexOf(PEM_START, bound)
  if (pem !== -1) from = Math.min(from, pem)
  // A trailing prefix of "-----BEGIN" is in the final run without whitespace already.
  return from
}
