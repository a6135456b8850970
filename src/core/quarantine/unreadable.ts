/**
 * @module The error a quarantine store throws for a record whose withheld text it will not open: the
 * record is evidence, so this is the stored data's fault, not the caller's or the store's.
 */

/**
 * Why a record's withheld text cannot be read:
 * - `key_not_held`: it names a key id the keyring does not hold (a retired key, or a forged id);
 * - `not_authentic`: its key id is not of the form this package writes, or its text does not decrypt
 *   under the key it names: the row was altered or is incomplete;
 * - `no_key_opens`: sealed before key ids, and no key of the keyring decrypts it (its key was
 *   retired, or the row was altered).
 */
export type UnreadableReason = 'key_not_held' | 'not_authentic' | 'no_key_opens'

/** What a key id looks like when this package wrote it: 16 lower-case hex characters. */
const KEY_ID = /^[0-9a-f]{16}$/

/**
 * A stored record whose withheld text the store refuses to open. The message names the record and,
 * when it has the form of one, the key id: never other bytes of the row, never the text.
 *
 * @example
 * try { await store.get(id) } catch (e) {
 *   if (e instanceof UnreadableIncidentError && e.reason === 'key_not_held') console.log(e.keyId)
 * }
 */
export class UnreadableIncidentError extends Error {
  override readonly name = 'UnreadableIncidentError'
  readonly incidentId: string
  readonly reason: UnreadableReason
  /** The key id the record names, when it has the form of one. */
  readonly keyId?: string

  constructor(incidentId: string, reason: UnreadableReason, keyId?: string, cause?: unknown) {
    super(unreadableMessage(incidentId, reason, keyId), cause === undefined ? undefined : { cause })
    this.incidentId = incidentId
    this.reason = reason
    if (keyId !== undefined) this.keyId = keyId
  }
}

/** Whether a stored key id has the form this package writes (anything else it did not write). */
export function isKeyId(value: unknown): value is string {
  return typeof value === 'string' && KEY_ID.test(value)
}

const ROTATION_DOC = 'docs/incidents.md, "Rotating QUARANTINE_KEY"'

function unreadableMessage(id: string, reason: UnreadableReason, keyId?: string): string {
  switch (reason) {
    case 'key_not_held':
      return `incident ${id} is sealed under key ${keyId}, which is neither QUARANTINE_KEY nor QUARANTINE_KEY_PREVIOUS: set the retired key that has this id as QUARANTINE_KEY_PREVIOUS to read it (${ROTATION_DOC})`
    case 'not_authentic':
      return keyId === undefined
        ? `incident ${id} has a key id this guard never writes: the row was altered, and is read under no key`
        : `incident ${id} names key ${keyId}, but its withheld text does not decrypt under that key: the row was altered or is incomplete, and is read under no other key`
    case 'no_key_opens':
      return `incident ${id} was sealed before key ids, and no key of the keyring decrypts it: its key was retired (set it as QUARANTINE_KEY_PREVIOUS, ${ROTATION_DOC}) or the row was altered`
  }
}
