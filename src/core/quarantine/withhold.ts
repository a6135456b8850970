/**
 * @module Withholding an answer: the incident record (attributed, folded where allowed) and the error
 * its client gets. A record that cannot be written never releases the answer.
 */
import { type AttemptContext, type AttemptOutcome, ownTokens } from '../attempt/context'
import type { TenantAttribution } from '../attribution'
import { redactSecretPieces } from '../canary'
import { GuardError } from '../errors'
import type { QuarantineRecord } from '../vocabulary/quarantine'
import type { IncidentRecorder } from './aggregate'

/** The incident a withheld answer became: its id, and whether its record was stored. */
export interface Incident {
  id: string
  stored: boolean
  /** The tenants whose data the answer carried (the record's `sourceTenants`). */
  sourceTenants: string[]
}

/**
 * Records a withheld answer as an incident.
 *
 * @example
 * const { id } = await recordIncident({ attribution, incidents, now }, ctx, outcome)
 */
export async function recordIncident(
  deps: { attribution: TenantAttribution; incidents: IncidentRecorder; now: () => number },
  ctx: AttemptContext,
  outcome: AttemptOutcome<unknown>,
): Promise<Incident> {
  const id = `inc_${crypto.randomUUID()}`
  const attributed = await deps.attribution.attribute(outcome.canaries)
  const { canaries } = attributed
  const sourceTenants = [
    ...new Set([...attributed.sourceTenants, ...(outcome.contentSources ?? [])]),
  ]
  try {
    const record: QuarantineRecord = {
      id,
      at: deps.now(),
      tenant: ctx.request.tenant,
      model: ctx.request.model,
      requestId: ctx.request.requestId,
      reasons: outcome.verdict.reasons,
      figures: { ...outcome.figures, attempts: ctx.attempt, score: outcome.verdict.score },
      canaries,
      sourceTenants,
      withheld: await sealable(ctx, outcome.withheld),
      ...(outcome.verdict.observed ? { observed: true as const } : {}),
    }
    return { id: (await deps.incidents.record(record)).id, stored: true, sourceTenants }
  } catch (error) {
    // Fail closed: the answer stays withheld whether or not the record could be written.
    console.error(
      JSON.stringify({
        event: 'ai_guard_store_failed',
        incidentId: id,
        error: error instanceof Error ? error.message : String(error),
      }),
    )
    return { id, stored: false, sourceTenants }
  }
}

/** The error a client gets for a withheld answer: the incident id and nothing else. */
export function quarantineError(incidentId: string): GuardError {
  return new GuardError(
    'response_quarantined',
    `The model's answer failed verification and was withheld. Incident ${incidentId} has been recorded for review.`,
    { incidentId },
  )
}

/** The error for an answer whose output limit ended it before it could be verified: the client's. */
export function cutOffError(): GuardError {
  return new GuardError(
    'invalid_request',
    'The answer reached its output limit before it could be verified (the model reasons before it answers), so it was withheld. Raise max_tokens.',
    { param: 'max_tokens' },
  )
}

/**
 * The withheld text as it may be stored: stand-ins replaced, and every piece of a canary or marker the
 * guard can name (src/core/canary/seal-redaction.ts) — here, while it still knows them, not when a page is
 * drawn.
 */
async function sealable(
  ctx: AttemptContext,
  withheld: Record<string, string>,
): Promise<Record<string, string>> {
  return redactSecretPieces(
    await ctx.services.key(),
    ownTokens(ctx),
    withoutStandIns(ctx, withheld),
  )
}

/** The withheld text with every stand-in-shaped token replaced (like canaries, never stored live). */
function withoutStandIns(
  ctx: AttemptContext,
  withheld: Record<string, string>,
): Record<string, string> {
  const secrets = ctx.request.secrets
  if (!secrets) return withheld
  const out: Record<string, string> = {}
  for (const [channel, text] of Object.entries(withheld)) out[channel] = secrets.redact(text)
  return out
}
