/**
 * @module The one check every secret of the guard passes: a string of at least 32 bytes of UTF-8.
 */

/**
 * The shortest secret accepted. HMAC-SHA-256 and HKDF-SHA-256 want key material at least as long as
 * their 32-byte output; a shorter secret would be the weakest part of a canary MAC or a sealing key.
 */
export const MIN_SECRET_BYTES = 32

/**
 * Throws a plain `Error` unless `value` is a string of at least {@link MIN_SECRET_BYTES} bytes of
 * UTF-8 (characters are not bytes: ten `€` are 30). The message names `name`, never the value; a
 * caller whose message is already documented passes it as `message`.
 *
 * @example
 * assertSecret('secret', options.secret) // option "secret" must be a string of at least 32 bytes
 */
export function assertSecret(
  name: string,
  value: unknown,
  message = `option "${name}" must be a string of at least ${MIN_SECRET_BYTES} bytes`,
): asserts value is string {
  if (typeof value !== 'string' || new TextEncoder().encode(value).length < MIN_SECRET_BYTES) {
    throw new Error(message)
  }
}
