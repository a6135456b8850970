/**
 * @module The incident list: filters (time, tenant, source tenant, reason, model, observed) and paging, as a
 * plain GET form — it works without script, and every view has a URL to paste into a ticket.
 */
import { html } from 'hono/html'
import type { QuarantineSummary } from '../../../core'
import { dateInput, type IncidentFilters, type IncidentPage } from '../data'
import { KNOWN_REASONS } from '../guidance'
import type { Html } from './layout'

/** Reasons that prove a leak on their own (shown in red). */
const HARD = new Set([
  'foreign_canary',
  'foreign_stand_in',
  'foreign_content',
  'ttft_impossible',
  'usage_undercount',
])

/** The `observed` filter's choices: released under observe, or withheld. */
const OBSERVED = [
  ['1', 'released (observed)', true],
  ['0', 'withheld', false],
] as const

/**
 * The list page's body.
 *
 * @example
 * layout({ title: 'Incidents', section: 'incidents', body: incidentList(page, filters) })
 */
export function incidentList(page: IncidentPage, filters: IncidentFilters): Html {
  const reasons = [...new Set([...KNOWN_REASONS, ...(filters.reason ? [filters.reason] : [])])]
  const query = new URLSearchParams()
  if (filters.since !== undefined) query.set('since', dateInput(filters.since))
  if (filters.until !== undefined) query.set('until', dateInput(filters.until))
  for (const key of ['tenant', 'source', 'reason', 'model'] as const) {
    const value = filters[key]
    if (value) query.set(key, value)
  }
  if (filters.observed !== undefined) query.set('observed', filters.observed ? '1' : '0')
  const nextQuery = new URLSearchParams(query)
  if (page.next) nextQuery.set('before', page.next)
  return html`<section class="card">
<form class="filters" method="get" action="/admin/incidents" id="filters">
<label>From (UTC)<input type="date" name="since" value="${dateInput(filters.since)}"></label>
<label>To (UTC)<input type="date" name="until" value="${dateInput(filters.until)}"></label>
<label>Tenant<input name="tenant" value="${filters.tenant ?? ''}" placeholder="any" maxlength="256"></label>
<label>Source tenant<input name="source" value="${filters.source ?? ''}" placeholder="any" maxlength="256"></label>
<label>Reason<select name="reason"><option value="">any</option>${reasons.map(
    (r) => html`<option value="${r}"${r === filters.reason ? html` selected` : ''}>${r}</option>`,
  )}</select></label>
<label>Model<input name="model" value="${filters.model ?? ''}" placeholder="any" maxlength="256"></label>
<label>Answer<select name="observed"><option value="">any</option>${OBSERVED.map(
    ([value, label, on]) =>
      html`<option value="${value}"${filters.observed === on ? html` selected` : ''}>${label}</option>`,
  )}</select></label>
<button class="primary" type="submit">Filter</button>
<a href="/admin/incidents">Clear</a>
</form>
</section>
<section class="card">
${
  page.rows.length === 0
    ? html`<p class="empty" id="no-incidents">No incidents match these filters.</p>`
    : html`<table id="incidents">
<thead><tr><th>When (UTC)</th><th>Tenant</th><th>Model</th><th>Reasons</th><th>Source tenants</th><th class="num">Tokens</th><th class="num">TTFT</th><th class="num">Count</th></tr></thead>
<tbody>${page.rows.map(row)}</tbody>
</table>`
}
<div class="pager">
${filters.before ? html`<a href="/admin/incidents?${query.toString()}">« Newest</a>` : ''}
${page.next ? html`<a id="next-page" href="/admin/incidents?${nextQuery.toString()}">Older »</a>` : ''}
</div>
</section>`
}

function row(r: QuarantineSummary): Html {
  const tokens = r.figures.estimatedTokens ?? r.figures.tokenBound
  return html`<tr data-incident="${r.id}">
<td class="mono"><a href="/admin/incidents/${encodeURIComponent(r.id)}">${when(r.at)}</a></td>
<td>${r.tenant}</td>
<td class="mono">${r.model}</td>
<td>${r.unreadable ? html`<span class="tag hard" title="${r.unreadable}">unreadable</span>` : ''}${r.reasons.map((reason) => html`<span class="tag${HARD.has(reason) ? ' hard' : ''}">${reason}</span>`)}${r.observed ? html` <span class="tag observed" title="released under observe: what enforce would have withheld">observed</span>` : ''}</td>
<td>${r.sourceTenants.length ? r.sourceTenants.join(', ') : html`<span class="muted">—</span>`}</td>
<td class="num">${tokens === undefined ? '—' : tokens.toLocaleString('en-US')}</td>
<td class="num">${r.figures.ttftMs === undefined ? '—' : `${Math.round(r.figures.ttftMs)} ms`}</td>
<td class="num">${r.count ?? 1}</td>
</tr>`
}

/**
 * A time as the console shows it: ISO, UTC, to the second.
 *
 * @example
 * when(0) // '1970-01-01 00:00:00'
 */
export function when(at: number): string {
  return new Date(at).toISOString().slice(0, 19).replace('T', ' ')
}
