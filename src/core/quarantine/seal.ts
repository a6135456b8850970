/**
 * @module Encryption at rest for withheld answers: AES-256-GCM under a key derived from a Worker secret,
 * a keyring of the current secret and the previous ones so that records outlive a rotation.
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
async function sealingKey(secret: string): Promise<CryptoKey> {
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

/** One sealing key and the id records name it by. */
export interface SealingKey {
  /** 16 hex characters of a SHA-256 over the secret under its own label: names it, reveals nothing. */
  id: string
  key: CryptoKey
}

const KEY_ID_LABEL = new TextEncoder().encode('workers-ai-guard/quarantine/key-id/v1\0')

/**
 * The current key and the previous ones, each with its id: records are sealed under the first and read
 * under whichever their id names. Two secrets with one id (the same secret twice) count once.
 *
 * @example
 * const ring = await sealingKeyring([env.QUARANTINE_KEY, env.QUARANTINE_KEY_PREVIOUS])
 */
export async function sealingKeyring(secrets: readonly string[]): Promise<SealingKey[]> {
  const ring: SealingKey[] = []
  for (const secret of secrets) {
    const key = await sealingKey(secret)
    const id = await keyId(secret)
    if (!ring.some((k) => k.id === id)) ring.push({ id, key })
  }
  return ring
}

async function keyId(secret: string): Promise<string> {
  const secretBytes = new TextEncoder().encode(secret)
  const input = new Uint8Array(KEY_ID_LABEL.length + secretBytes.length)
  input.set(KEY_ID_LABEL, 0)
  input.set(secretBytes, KEY_ID_LABEL.length)
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', input))
  return Array.from(digest.slice(0, 8), (b) => b.toString(16).padStart(2, '0')).join('')
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
