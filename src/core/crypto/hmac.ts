/**
 * @module The guard secret as an HMAC-SHA-256 key, and HMACs of several parts: what canaries and
 * secret stand-ins are both derived with (each under its own labels and opaque key handle).
 */
import { assertSecret, MIN_SECRET_BYTES } from './secret'

const utf8 = new TextEncoder()

/**
 * Imports a secret as a sign-only HMAC-SHA-256 key, after the secrets' rule (≥ 32 bytes of UTF-8).
 * Throws a plain `Error` naming `secret`, never its value.
 *
 * @example
 * const cryptoKey = await importHmacSecret(env.GUARD_SECRET)
 */
export async function importHmacSecret(secret: string): Promise<CryptoKey> {
  assertSecret(
    'secret',
    secret,
    `secret must be a string of at least ${MIN_SECRET_BYTES} bytes (UTF-8)`,
  )
  return await crypto.subtle.importKey(
    'raw',
    utf8.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  )
}

/**
 * HMAC-SHA-256 of the parts' concatenation (strings as UTF-8).
 *
 * @example
 * const mac = await hmacOf(cryptoKey, ['canary-v2\0', requestId])
 */
export async function hmacOf(
  key: CryptoKey,
  parts: readonly (string | Uint8Array)[],
): Promise<Uint8Array> {
  const bytes = parts.map((p) => (typeof p === 'string' ? utf8.encode(p) : p))
  const message = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0))
  let offset = 0
  for (const b of bytes) {
    message.set(b, offset)
    offset += b.length
  }
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, message))
}
