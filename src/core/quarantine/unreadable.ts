/**
 * @module The error a quarantine store throws for a record whose withheld text it will not open: the
 * record is evidence, so this is the stored data's fault, not the caller's or the store's.
 */

/**
 * Why a record cannot be read:
 * - `key_not_held`: it names a key id the keyring does not hold (a retired key, or a forged id);
 * - `not_authentic`: its key id is not of the form this package writes, or its text does not decrypt
 *   under the key it names: the row was altered or is incomplete;
 * - `no_key_opens`: sealed before key ids, and no key of the keyring decrypts it (its key was
 *   retired, or the row was altered).
 * - `corrupt`: a stored column is not what this package writes (edited, truncated, not JSON, JSON of
 *   another shape): no key helps, and showing it as if it were would mislead.
 */
export type UnreadableReason = 'key_not_held' | 'not_authentic' | 'no_key_opens' | 'corrupt'

/** What else an {@link UnreadableIncidentError} names, when it applies. */
interface UnreadableDetail {
  /** The key id the record names, when it has the form of one. */
  keyId?: string
  /** For `corrupt`: the stored column that is not what this package writes. */
  column?: string
  /** The failure behind it (a decryption's). */
  cause?: unknown
}

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
  /** For `corrupt`: the stored column that is not what this package writes. */
  readonly column?: string

  constructor(incidentId: string, reason: UnreadableReason, detail: UnreadableDetail = {}) {
    const { keyId, column, cause } = detail
    super(
      unreadableMessage(incidentId, reason, keyId, column),
      cause === undefined ? undefined : { cause },
    )
    this.incidentId = incidentId
    this.reason = reason
    if (keyId !== undefined) this.keyId = keyId
    if (column !== undefined) this.column = column
  }
}

/** Whether a stored key id has the form this package writes (anything else it did not write). */
export function isKeyId(value: unknown): value is string {
  return typeof value === 'string' && KEY_ID.test(value)
}

const ROTATION_DOC = 'docs/incidents.md, "Rotating QUARANTINE_KEY"'

function unreadableMessage(
  id: string,
  reason: UnreadableReason,
  keyId?: string,
  column?: string,
): string {
  switch (reason) {
    case 'key_not_held':
      return `incident ${id} is sealed under key ${keyId}, which is neither QUARANTINE_KEY nor QUARANTINE_KEY_PREVIOUS: set the retired key that has this id as QUARANTINE_KEY_PREVIOUS to read it (${ROTATION_DOC})`
    case 'not_authentic':
      return keyId === undefined
        ? `incident ${id} has a key id this guard never writes: the row was altered, and is read under no key`
        : `incident ${id} names key ${keyId}, but its withheld text does not decrypt under that key: the row was altered or is incomplete, and is read under no other key`
    case 'no_key_opens':
      return `incident ${id} was sealed before key ids, and no key of the keyring decrypts it: its key was retired (set it as QUARANTINE_KEY_PREVIOUS, ${ROTATION_DOC}) or the row was altered`
    case 'corrupt':
      return `incident ${id} has a stored ${column ?? 'value'} column this guard never writes (edited, truncated or not JSON): it cannot be shown; restore the row from a backup, or delete it (docs/incidents.md, "Unreadable incidents")`
  }
}
