/**
 * @module One incident: its reasons with their figures and what to do next, canary findings and source
 * tenants, and the withheld text decrypted with every canary-shaped token redacted.
 */
import { html } from 'hono/html'
import type { ModelProfile, QuarantineRecord } from '../../../core'
import { guideFor } from '../guidance'
import { redactCanaries } from '../redact'
import { when } from './incidents'
import type { Html } from './layout'

/** Figure names as a responder reads them. */
const FIGURES: Record<keyof QuarantineRecord['figures'], string> = {
  estimatedTokens: 'Prompt tokens (estimate)',
  tokenBound: 'Prompt token bound (uncounted)',
  promptTokensReported: 'Prompt tokens reported by the engine',
  cachedTokens: 'Cached tokens reported',
  ttftMs: 'Time to first token',
  expectedMinMs: 'Physical minimum for this prompt',
  attempts: 'Attempts',
  score: 'Evidence score',
  contentRun: 'Longest run of the source’s fingerprints',
  contentMatches: 'Source fingerprints matched',
  fingerprintStoreDown: 'Shared fingerprint store',
  fingerprintShardsUnread: 'Fingerprint shards not read',
}

/** What the Worker's profile says of the incident's model: the figures the advice compares against. */
export type ProfileFigures = Pick<ModelProfile, 'kvPoolTokens' | 'contextWindow'>

/**
 * The detail page's body; `profile` is the model's profile as the Worker runs it now.
 *
 * @example
 * layout({ title: `Incident ${id}`, section: 'incidents', body: incidentDetail(record, profile) })
 */
export function incidentDetail(record: QuarantineRecord, profile?: ProfileFigures): Html {
  const figures = Object.entries(record.figures).filter(([, v]) => v !== undefined) as [
    keyof QuarantineRecord['figures'],
    number | boolean | number[],
  ][]
  return html`<section class="card">
<dl class="figures" id="summary">
<dt>Incident</dt><dd class="mono">${record.id}</dd>
<dt>When (UTC)</dt><dd>${when(record.at)}${record.lastAt ? html` — latest ${when(record.lastAt)}` : ''}</dd>
<dt>Occurrences</dt><dd>${record.count ?? 1}</dd>
<dt>Tenant</dt><dd id="tenant">${record.tenant}</dd>
<dt>Model</dt><dd class="mono">${record.model}</dd>
<dt>Request id</dt><dd class="mono">${record.requestId}</dd>
<dt>Source tenants</dt><dd id="sources">${record.sourceTenants.length ? record.sourceTenants.join(', ') : 'none identified'}</dd>
<dt>Answer</dt><dd id="answer">${record.observed ? html`<span class="tag observed">observed</span> released: its checks were in observe mode; below is what enforce would have withheld` : 'withheld'}</dd>
</dl>
</section>
<div class="grid2">
<section class="card">
<h2>Figures</h2>
<dl class="figures" id="figures">${figures.map(
    ([k, v]) => html`<dt>${FIGURES[k] ?? k}</dt><dd data-figure="${k}">${format(k, v)}</dd>`,
  )}${
    profile
      ? html`<dt>Profile’s kvPoolTokens (GUARD_MODELS)</dt><dd data-figure="kvPoolTokens">${profile.kvPoolTokens.toLocaleString('en-US')}</dd><dt>Profile’s context window</dt><dd data-figure="contextWindow">${profile.contextWindow.toLocaleString('en-US')}</dd>`
      : ''
  }</dl>
</section>
<section class="card">
<h2>Canary findings</h2>
${
  record.canaries.length === 0
    ? html`<p class="empty">No foreign canary or stand-in in the answer.</p>`
    : html`<table id="canaries"><thead><tr><th>Channel</th><th>Found</th><th>Tenant tag</th><th>Owners of the tag</th></tr></thead><tbody>${record.canaries.map(
        (c) =>
          html`<tr><td>${c.channel ?? '—'}</td><td>${c.standIn ? `stand-in of a ${c.standIn}` : 'canary'}</td><td class="mono">${c.tenantTag ?? 'unknown'}</td><td>${c.tenants?.length ? c.tenants.join(', ') : 'unknown'}${(c.tenants?.length ?? 0) > 1 ? html` <span class="tag hard">tag collision: any of them</span>` : ''}</td></tr>`,
      )}</tbody></table>`
}
</section>
</div>
<section class="card" id="reasons">
<h2>Reasons and what to do next</h2>
${record.reasons.map((reason) => {
  const guide = guideFor(reason)
  return html`<div class="guide" data-reason="${reason}"><h3><span class="tag hard">${reason}</span> ${guide.title}</h3><p>${guide.meaning}</p><ol>${guide.steps.map((s) => html`<li>${s}</li>`)}</ol></div>`
})}
</section>
<section class="card">
<h2>Withheld text</h2>
<p class="note">Decrypted for this page only; canaries are shown as [canary]. It may hold another tenant’s data: do not copy it into tickets.</p>
${Object.entries(record.withheld).map(
  ([channel, text]) =>
    html`<h3 class="mono">${channel}</h3><pre class="withheld" data-channel="${channel}">${redactCanaries(text)}</pre>`,
)}
${Object.keys(record.withheld).length === 0 ? html`<p class="empty">Nothing was withheld (the answer was empty).</p>` : ''}
</section>`
}

function format(key: string, value: number | boolean | number[]): string {
  if (typeof value === 'boolean') return value ? 'down: not read for this answer' : 'read'
  if (Array.isArray(value)) return value.join(', ')
  if (key === 'ttftMs' || key === 'expectedMinMs') {
    return `${(value >= 10 ? Math.round(value) : value).toLocaleString('en-US')} ms`
  }
  if (key === 'score') return value.toFixed(2)
  return value.toLocaleString('en-US')
}
