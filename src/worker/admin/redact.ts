/**
 * @module What the console may show of a withheld answer: its text with every canary-shaped token gone.
 */

/**
 * Anything shaped like a canary: ours (`cnry_` + 24 base32 characters, src/core/canary/token.ts) and any
 * run that starts like one, so a canary cut short by a truncated answer or written in another case is
 * hidden too. A canary on screen could be copied into a prompt and replayed as "proof" of a leak; the
 * console shows where one was, never what.
 */
const CANARY_LIKE = /cnry_[0-9a-z]*/gi

/** What a redacted canary reads as. */
const REDACTED_CANARY = '[canary]'

/**
 * `text` with every canary-shaped token replaced by {@link REDACTED_CANARY}.
 *
 * @example
 * redactCanaries('echo cnry_0123456789abcdefghjkmnpq ok') // 'echo [canary] ok'
 */
export function redactCanaries(text: string): string {
  return text.replace(CANARY_LIKE, REDACTED_CANARY)
}
