/**
 * @module The verdict log: one structured line per decided answer (ids, tenant, model, action,
 * reasons, figures — never prompt text, canaries or secrets).
 */
import type { AttemptContext, AttemptOutcome } from '../attempt/context'
import type { RequestPlan } from '../plan/plan'
import type { Incident } from '../quarantine/withhold'
import type { PromptSecrets } from '../vocabulary/evidence-plugins'
import type { VerdictContext, VerdictLog } from '../vocabulary/options'
import type { QuarantineRecord } from '../vocabulary/quarantine'

type Figures = QuarantineRecord['figures']

/** Of a released answer's line: its attempt, its first byte (ms after the call) and `waitUntil`. */
interface ReleaseMoment {
  attempt: number
  firstByteMs: number | undefined
  waitUntil: VerdictContext['waitUntil']
}

/**
 * Writes verdict lines to the `onVerdict` hook, or withheld ones to `console.warn` without a hook.
 *
 * @example
 * new VerdictLogger(undefined).log({ requestId, tenant, model, action: 'reject', reasons: [] })
 */
export class VerdictLogger {
  readonly #onVerdict: ((event: VerdictLog, context: VerdictContext) => void) | undefined

  constructor(onVerdict: ((event: VerdictLog, context: VerdictContext) => void) | undefined) {
    this.#onVerdict = onVerdict
  }

  log(event: VerdictLog, waitUntil?: VerdictContext['waitUntil']): void {
    try {
      if (this.#onVerdict) this.#onVerdict(event, waitUntil ? { waitUntil } : {})
      else if (event.action !== 'release')
        console.warn(JSON.stringify({ event: 'ai_guard', ...event }))
    } catch {
      // A failing log hook must not change a verdict.
    }
  }

  /** A released answer: which attempt it was, when its first byte left, and the host's `waitUntil`. */
  released(plan: RequestPlan, outcome: AttemptOutcome<unknown>, when: ReleaseMoment): void {
    const { attempt, firstByteMs, waitUntil } = when
    this.log(
      {
        requestId: plan.requestId,
        tenant: plan.tenant,
        model: plan.model,
        action: 'release',
        // A release's own notes (`cache_unexplained`) and whether it took a retry; an observed
        // verdict's reasons are on its `would_block` line.
        reasons: [
          ...(outcome.verdict.observed ? [] : outcome.verdict.reasons),
          ...(attempt > 1 ? ['released_after_retry'] : []),
        ],
        ...(outcome.figures.estimatedTokens !== undefined
          ? tokenFigures(outcome.figures)
          : promptFigures(plan.admission)),
        ...timingFigures(outcome.figures),
        ...storeFigures(outcome.figures),
        ...(firstByteMs !== undefined ? { firstByteMs: Math.round(firstByteMs) } : {}),
        ...secretsFigures(plan.secrets, outcome),
      },
      waitUntil,
    )
  }

  /** An answer withheld as the client's error (no incident). */
  rejected(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): void {
    const { requestId, tenant, model } = ctx.request
    const { reasons } = outcome.verdict
    this.log(
      { requestId, tenant, model, action: 'reject', reasons, ...tokenFigures(outcome.figures) },
      ctx.waitUntil,
    )
  }

  /** A withheld answer's incident, or (`would_block`) the one an answer released under observe made. */
  quarantined(ctx: AttemptContext, outcome: AttemptOutcome<unknown>, incident: Incident): void {
    const { reasons, observed } = outcome.verdict
    this.log(
      {
        requestId: ctx.request.requestId,
        tenant: ctx.request.tenant,
        model: ctx.request.model,
        action: observed ? 'would_block' : 'quarantine',
        reasons: incident.stored ? reasons : [...reasons, 'store_failed'],
        incidentId: incident.id,
        ...(incident.sourceTenants.length > 0 ? { sourceTenants: incident.sourceTenants } : {}),
        ...tokenFigures(outcome.figures),
        ...timingFigures(outcome.figures),
        ...storeFigures(outcome.figures),
        ...secretsFigures(ctx.request.secrets, outcome),
      },
      ctx.waitUntil,
    )
  }
}

/** The secrets line: kinds and counts, each part only when it has any. */
function secretsFigures(
  prompt: Pick<PromptSecrets, 'substituted' | 'detected'> | undefined,
  outcome: AttemptOutcome<unknown>,
): Pick<VerdictLog, 'secrets'> {
  const parts: NonNullable<VerdictLog['secrets']> = {}
  const add = (name: keyof typeof parts, counts: Record<string, number> | undefined) => {
    if (counts && Object.keys(counts).length > 0) parts[name] = counts
  }
  add('substituted', prompt?.substituted)
  add('detected', prompt?.detected)
  add('restored', outcome.restored)
  add('foreign', outcome.foreignStandIns)
  return Object.keys(parts).length > 0 ? { secrets: parts } : {}
}

/** A released prompt's size: its token estimate when it was counted, else its byte bound. */
function promptFigures(
  admission: RequestPlan['admission'],
): Pick<VerdictLog, 'estimatedTokens' | 'tokenBound'> {
  return admission.method === 'count'
    ? { estimatedTokens: admission.estimated + admission.overhead }
    : { tokenBound: admission.estimated }
}

/** A judged answer's prompt size, as the judgement worked it out. */
function tokenFigures(f: Figures): Pick<VerdictLog, 'estimatedTokens' | 'tokenBound'> {
  if (f.estimatedTokens !== undefined) return { estimatedTokens: f.estimatedTokens }
  return f.tokenBound !== undefined ? { tokenBound: f.tokenBound } : {}
}

function timingFigures(f: Figures): Pick<VerdictLog, 'ttftMs' | 'expectedMinMs'> {
  const out: Pick<VerdictLog, 'ttftMs' | 'expectedMinMs'> = {}
  if (f.ttftMs !== undefined) out.ttftMs = Math.round(f.ttftMs)
  if (f.expectedMinMs !== undefined) out.expectedMinMs = Math.round(f.expectedMinMs)
  return out
}

/** What the answer's check could not read of the shared fingerprint store. */
function storeFigures(f: Figures): Pick<VerdictLog, 'fingerprintStore'> {
  if (f.fingerprintStoreDown) return { fingerprintStore: { down: true } }
  const shards = f.fingerprintShardsUnread
  return shards && shards.length > 0 ? { fingerprintStore: { shardsUnread: shards } } : {}
}
