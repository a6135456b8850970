/**
 * @module Encryption at rest for withheld answers: AES-256-GCM under a key derived from a Worker secret.
 */
import { assertSecret, MIN_SECRET_BYTES } from '../crypto/secret'

const INFO = new TextEncoder().encode('workers-ai-guard/quarantine/v1')

/** What a short or missing quarantine key is told (the Worker's secret name, as operators set it). */
export const QUARANTINE_KEY_MESSAGE = `option "QUARANTINE_KEY" must be at least ${MIN_SECRET_BYTES} bytes`

/**
 * Derives the sealing key from a secret (≥ 32 bytes) with HKDF-SHA-256, so the secret itself is never
 * used as a raw AES key and can be shared with nothing else by accident.
 *
 * @example
 * const key = await sealingKey(env.QUARANTINE_KEY)
 */
export async function sealingKey(secret: string): Promise<CryptoKey> {
  assertSecret('QUARANTINE_KEY', secret, QUARANTINE_KEY_MESSAGE)
  const material = new TextEncoder().encode(secret)
  const base = await crypto.subtle.importKey('raw', material, 'HKDF', false, ['deriveKey'])
  return crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(32), info: INFO },
    base,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  )
}

/**
 * Encrypts `plain` bound to `context` (the incident id as additional data), so a ciphertext moved to
 * another record does not decrypt.
 *
 * @example
 * const { iv, data } = await seal(key, JSON.stringify(withheld), record.id)
 */
export async function seal(
  key: CryptoKey,
  plain: string,
  context: string,
): Promise<{ iv: Uint8Array; data: Uint8Array }> {
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const data = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: new TextEncoder().encode(context) },
    key,
    new TextEncoder().encode(plain),
  )
  return { iv, data: new Uint8Array(data) }
}

/**
 * Decrypts what {@link seal} produced; throws if the key, the context or a byte is wrong.
 *
 * @example
 * const withheld = JSON.parse(await unseal(key, row.withheld_iv, row.withheld, row.id))
 */
export async function unseal(
  key: CryptoKey,
  iv: Uint8Array,
  data: Uint8Array,
  context: string,
): Promise<string> {
  const plain = await crypto.subtle.decrypt(
    { name: 'AES-GCM', iv, additionalData: new TextEncoder().encode(context) },
    key,
    data,
  )
  return new TextDecoder().decode(plain)
}
