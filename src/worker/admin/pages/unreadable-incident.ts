/**
 * @module The page for an incident whose withheld text the store will not open: which key it names,
 * what to do, and never the text.
 */
import { html } from 'hono/html'
import type { UnreadableIncidentError } from '../../../core'
import type { Html } from './layout'

const ROTATION = html`see “Rotating QUARANTINE_KEY” in docs/incidents.md`

/**
 * The body of the 409 page for `error` (its incident id and key id are escaped like any stored value).
 *
 * @example
 * layout({ title: 'Incident cannot be opened', section: 'incidents', body: unreadableBody(error) })
 */
export function unreadableBody(error: UnreadableIncidentError): Html {
  return html`<section class="card" id="unreadable">
<p class="error" role="alert">${headline(error)}</p>
<p>${nextStep(error)}</p>
<p class="muted">The withheld text is not shown, and is never tried under another key. The incident
still appears in the list. <a href="/admin/incidents">All incidents</a></p>
</section>`
}

function headline(error: UnreadableIncidentError): Html {
  const id = html`<code>${error.incidentId}</code>`
  switch (error.reason) {
    case 'key_not_held':
      return html`Incident ${id} is sealed under key <code>${error.keyId}</code>, which this Worker does not hold (it is neither QUARANTINE_KEY nor QUARANTINE_KEY_PREVIOUS).`
    case 'not_authentic':
      return error.keyId === undefined
        ? html`Incident ${id} names a key id this guard never writes: the stored row was altered.`
        : html`Incident ${id} names key <code>${error.keyId}</code>, but its withheld text does not decrypt under that key: the stored row was altered or is incomplete.`
    case 'no_key_opens':
      return html`Incident ${id} was sealed before records named their key, and no key this Worker holds decrypts it.`
    case 'corrupt':
      return html`Incident ${id} cannot be shown: its stored <code>${error.column ?? 'value'}</code> column is not what this guard writes (the row was edited, truncated or is not JSON).`
  }
}

function nextStep(error: UnreadableIncidentError): Html {
  switch (error.reason) {
    case 'key_not_held':
      return html`To read it, set the retired key whose id is <code>${error.keyId}</code> as QUARANTINE_KEY_PREVIOUS (${ROTATION}). If no key you ever used has this id, the row was altered: check who can write to the D1 database.`
    case 'not_authentic':
      return html`No key can read it. Check who can write to the D1 database; restore the row from a backup if you need the text.`
    case 'no_key_opens':
      return html`If its key was retired, set it as QUARANTINE_KEY_PREVIOUS (${ROTATION}); otherwise the row was altered: check who can write to the D1 database.`
    case 'corrupt':
      return html`No key helps. Check who can write to the D1 database; restore the row from a backup, or delete it (see “Unreadable incidents” in docs/incidents.md).`
  }
}
