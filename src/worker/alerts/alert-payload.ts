/**
 * @module Alert payloads: what an incident alert says, to the operator and to the tenant whose data
 * leaked, as a versioned JSON document or a Slack message. Figures and ids only: never prompt text,
 * canaries, withheld text or secrets (a verdict line carries none of them to begin with).
 *
 * Tenant and model names are hostile input (a tenant id can be a user id; the model is the client's
 * string): in JSON they are plain strings, in Slack they only ever sit in `plain_text` objects, escaped
 * and stripped of line breaks and invisible characters, so no name can format, link or mention.
 */
import type { VerdictLog } from '../../core'

/** The version of the JSON documents below; a change that removes or retypes a field bumps it. */
export const ALERT_SCHEMA_VERSION = 1

/** The reasons that say another tenant's data was in the answer: what a source tenant is told. */
export const LEAK_REASONS: readonly string[] = [
  'foreign_canary',
  'foreign_stand_in',
  'foreign_content',
]

/** `slack`: Slack's incoming-webhook message (`text` + `blocks`); `json`: the documents below. */
export type AlertFormat = 'slack' | 'json'

/** A verdict's figures as an alert carries them. */
export interface AlertFigures {
  estimatedTokens?: number
  tokenBound?: number
  ttftMs?: number
  expectedMinMs?: number
}

/** One quarantine worth alerting on, taken from its verdict line. */
export interface Alert {
  incidentId: string
  reasons: string[]
  /** The tenant whose request received (and was refused) the answer. */
  tenant: string
  /** The tenants whose data the answer carried. */
  sourceTenants: string[]
  model: string
  figures: AlertFigures
  /** ms since epoch. */
  at: number
}

/** The operator's document (`type: ai_guard.incident`): the alert's fields, `at` as text. */
export interface OperatorAlertDocument extends Omit<Alert, 'at'> {
  version: typeof ALERT_SCHEMA_VERSION
  type: 'ai_guard.incident'
  /** ISO 8601, UTC. */
  at: string
  /** `<CONSOLE_URL>/admin/incidents/<id>`, when a console base URL is configured. */
  consoleUrl?: string
  /** Alerts this destination did not get since its previous one (repeats and rate-limited). */
  suppressed: number
}

/**
 * A source tenant's document (`type: ai_guard.tenant_data_withheld`): only what concerns them — that
 * their data was found in an answer meant for someone else, and withheld. Not who received it, not the
 * other sources, not the figures of the other request, not the console link.
 */
export interface TenantAlertDocument {
  version: typeof ALERT_SCHEMA_VERSION
  type: 'ai_guard.tenant_data_withheld'
  incidentId: string
  /** The leak reasons only (`foreign_canary`, `foreign_content`). */
  reasons: string[]
  /** The recipient itself: the tenant whose data was found. */
  tenant: string
  model: string
  at: string
  /** Always true: a quarantined answer never reaches its client. */
  withheld: true
  suppressed: number
}

export type AlertDocument = OperatorAlertDocument | TenantAlertDocument

/** Longest name kept in a document; longer ones end in `…` (a model name is the client's string). */
const MAX_NAME = 200
/** Most source tenants listed in one document. */
const MAX_SOURCES = 20

/**
 * The alert of a verdict line, or undefined when it is not a quarantine with an incident id.
 *
 * @example
 * const alert = alertFromVerdict(event, Date.now())
 */
export function alertFromVerdict(event: VerdictLog, at: number): Alert | undefined {
  if (event.action !== 'quarantine' || !event.incidentId) return undefined
  const figures: AlertFigures = {}
  for (const name of ['estimatedTokens', 'tokenBound', 'ttftMs', 'expectedMinMs'] as const) {
    const value = event[name]
    if (typeof value === 'number' && Number.isFinite(value)) figures[name] = value
  }
  return {
    incidentId: event.incidentId,
    reasons: [...event.reasons],
    tenant: event.tenant,
    sourceTenants: [...new Set(event.sourceTenants ?? [])].filter((t) => t !== event.tenant),
    model: event.model,
    figures,
    at,
  }
}

/**
 * The operator's JSON document of an alert.
 *
 * @example
 * const doc = operatorDocument(alert, { consoleBase: 'https://guard.example.com', suppressed: 0 })
 */
export function operatorDocument(
  alert: Alert,
  options: { consoleBase?: string; suppressed: number },
): OperatorAlertDocument {
  const sources = alert.sourceTenants.slice(0, MAX_SOURCES).map(clip)
  return {
    version: ALERT_SCHEMA_VERSION,
    type: 'ai_guard.incident',
    incidentId: clip(alert.incidentId),
    reasons: alert.reasons.map(clip),
    tenant: clip(alert.tenant),
    sourceTenants: sources,
    model: clip(alert.model),
    figures: { ...alert.figures },
    at: new Date(alert.at).toISOString(),
    ...(options.consoleBase
      ? { consoleUrl: incidentUrl(options.consoleBase, alert.incidentId) }
      : {}),
    suppressed: options.suppressed,
  }
}

/**
 * The document a source tenant gets about an alert that names it.
 *
 * @example
 * const doc = tenantDocument(alert, 'tenant-a', { suppressed: 0 })
 */
export function tenantDocument(
  alert: Alert,
  tenant: string,
  options: { suppressed: number },
): TenantAlertDocument {
  return {
    version: ALERT_SCHEMA_VERSION,
    type: 'ai_guard.tenant_data_withheld',
    incidentId: clip(alert.incidentId),
    reasons: alert.reasons.filter((r) => LEAK_REASONS.includes(r)),
    tenant: clip(tenant),
    model: clip(alert.model),
    at: new Date(alert.at).toISOString(),
    withheld: true,
    suppressed: options.suppressed,
  }
}

/**
 * The request body of a document in a format.
 *
 * @example
 * const body = renderAlert(operatorDocument(alert, { suppressed: 0 }), 'slack')
 */
export function renderAlert(doc: AlertDocument, format: AlertFormat): string {
  return JSON.stringify(format === 'slack' ? slackMessage(doc) : doc)
}

/** A Slack Block Kit text object. */
interface SlackText {
  type: 'plain_text' | 'mrkdwn'
  text: string
  emoji?: boolean
}

/** The parts of a Slack incoming-webhook message used here. */
export interface SlackMessage {
  text: string
  blocks: Record<string, unknown>[]
  unfurl_links: false
  unfurl_media: false
}

/**
 * The Slack message of a document. Every value from a verdict is in a `plain_text` object; the one
 * `mrkdwn` text is the console link, built from the operator's base URL and an escaped incident id.
 *
 * @example
 * await fetch(slackUrl, { method: 'POST', body: JSON.stringify(slackMessage(doc)) })
 */
export function slackMessage(doc: AlertDocument): SlackMessage {
  const id = slackPlain(doc.incidentId)
  const reasons = slackPlain(doc.reasons.join(', ') || 'none')
  const fields: string[] =
    doc.type === 'ai_guard.incident'
      ? [
          `Answer meant for: ${slackPlain(doc.tenant)}`,
          `Data of: ${doc.sourceTenants.map(slackPlain).join(', ') || 'not attributed'}`,
          `Model: ${slackPlain(doc.model)}`,
          `Reasons: ${reasons}`,
          ...figureLines(doc.figures),
        ]
      : [
          `Your tenant: ${slackPlain(doc.tenant)}`,
          `Model: ${slackPlain(doc.model)}`,
          `Reasons: ${reasons}`,
        ]
  const headline =
    doc.type === 'ai_guard.incident'
      ? 'AI guard withheld a leaked answer'
      : 'AI guard found your data in an answer meant for another tenant and withheld it'
  const context: SlackText[] = [plain(`Incident ${id} · ${doc.at}`)]
  if (doc.type === 'ai_guard.incident' && doc.consoleUrl) {
    context.push({ type: 'mrkdwn', text: `<${slackHref(doc.consoleUrl)}|Open in the console>` })
  }
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: plain(headline) },
    { type: 'section', fields: fields.map(plain) },
    { type: 'context', elements: context },
  ]
  if (doc.suppressed > 0) {
    blocks.push({
      type: 'context',
      elements: [plain(`…and ${doc.suppressed} more not alerted since the previous alert`)],
    })
  }
  const more = doc.suppressed > 0 ? ` (and ${doc.suppressed} more)` : ''
  return {
    text: `${headline}: incident ${id} (${reasons})${more}`,
    blocks,
    unfurl_links: false,
    unfurl_media: false,
  }
}

function plain(text: string): SlackText {
  return { type: 'plain_text', text, emoji: false }
}

function figureLines(f: AlertFigures): string[] {
  const lines: string[] = []
  if (f.estimatedTokens !== undefined) lines.push(`Prompt: ${f.estimatedTokens} tokens`)
  else if (f.tokenBound !== undefined) lines.push(`Prompt: at most ${f.tokenBound} tokens`)
  if (f.ttftMs !== undefined) {
    const bound = f.expectedMinMs !== undefined ? ` (physical minimum ${f.expectedMinMs} ms)` : ''
    lines.push(`First token: ${f.ttftMs} ms${bound}`)
  }
  return lines
}

/**
 * A hostile string made inert for Slack: line breaks, control, bidi and zero-width characters become
 * spaces (no fake lines, no reordered text), `&`, `<`, `>` are escaped (no `<!channel>`, no
 * `<url|label>`), and it is cut to 80 characters. Used inside `plain_text` only, where `*_~` and
 * backticks mean nothing.
 *
 * @example
 * slackPlain('evil <!channel>\n*x*') // 'evil &lt;!channel&gt; *x*'
 */
export function slackPlain(value: string): string {
  const flat = value
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  const cut = [...flat].length > 80 ? `${[...flat].slice(0, 79).join('')}…` : flat
  return cut.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** A URL that cannot end Slack's `<url|label>` early. */
function slackHref(url: string): string {
  return url.replace(/\|/g, '%7C').replace(/</g, '%3C').replace(/>/g, '%3E').replace(/\s/g, '')
}

/**
 * The console page of an incident under the operator's base URL.
 *
 * @example
 * incidentUrl('https://guard.example.com/', 'inc_1') // 'https://guard.example.com/admin/incidents/inc_1'
 */
export function incidentUrl(base: string, incidentId: string): string {
  return `${base.replace(/\/+$/, '')}/admin/incidents/${encodeURIComponent(incidentId)}`
}

function clip(value: string): string {
  const chars = [...value]
  return chars.length > MAX_NAME ? `${chars.slice(0, MAX_NAME - 1).join('')}…` : value
}
