/**
 * @module Checks shared by every option resolver: a bad value throws a plain `Error` naming the
 * option, at construction, never at the first request.
 */

/**
 * `value` if it is an integer from `min` to `max` (no upper bound when `max` is absent).
 *
 * @example
 * integerOption('content.recall.maxTokens', 512, 32, 8_192) // 512
 */
export function integerOption(name: string, value: number, min: number, max?: number): number {
  if (!Number.isInteger(value) || value < min || (max !== undefined && value > max)) {
    throw new Error(
      max === undefined
        ? `option "${name}" must be an integer of at least ${min}`
        : `option "${name}" must be an integer from ${min} to ${max}`,
    )
  }
  return value
}
