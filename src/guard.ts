/**
 * @module guardAi: preflight → inject → call → verify → release | retry | quarantine.
 */

import type { AttemptContext, AttemptOutcome, AttemptServices } from './attempt'
import { isolateTenantDirectory, TenantAttribution } from './attribution'
import { type CalibrationSnapshot, type CalibrationStore, MemoryCalibration } from './calibration'
import { teachRefusal } from './calibration/teach'
import { type CanaryKey, importCanaryKey, injectCanary, mintCanary } from './canary'
import { asGuardError, GuardError } from './errors'
import {
  type GuardOptions,
  type ModelProfile,
  type ResolvedOptions,
  resolveOptions,
  type VerdictLog,
} from './options'
import { IncidentRecorder } from './quarantine/aggregate'
import { MemoryQuarantineStore } from './quarantine/memory'
import type { QuarantineRecord, QuarantineStore } from './quarantine/store'
import type { ProofKind } from './request'
import { type PlanServices, type PrefixLookup, planRequest, type RequestPlan } from './request-plan'
import { assembleAnswer } from './stream/assemble'
import type { StreamFormat } from './stream/frames'
import { deadline } from './stream/watchdog'
import type { BaselineState } from './timing/baseline'
import { PrefixRecord } from './timing/prefix-record'
import type { AiRunner } from './upstream'
import { statedPromptTokens, upstreamError } from './upstream-error'
import { verifyStreamedAnswer } from './verify/streamed-answer'
import { verifyWholeAnswer } from './verify/whole-answer'

/** The guard's per-isolate state, shared by every request it serves. */
export class Guard implements AttemptServices, PlanServices {
  readonly options: ResolvedOptions
  readonly quarantine: QuarantineStore
  readonly calibration: CalibrationStore
  readonly #onVerdict: ((event: VerdictLog) => void) | undefined
  readonly prefixes = new PrefixRecord()
  /** Tag → tenant, shared through a directory so a leak is attributed across isolates. */
  readonly attribution: TenantAttribution
  /** Folds a tenant's repeated incidents of one kind into one record; leaks are always kept whole. */
  readonly incidents: IncidentRecorder
  #key: Promise<CanaryKey> | undefined

  constructor(options: GuardOptions) {
    this.options = resolveOptions(options)
    this.quarantine = options.quarantine ?? new MemoryQuarantineStore()
    this.calibration = options.calibration ?? new MemoryCalibration()
    this.#onVerdict = options.onVerdict
    this.attribution = new TenantAttribution(
      () => this.key(),
      options.tenantDirectory ?? isolateTenantDirectory(),
    )
    this.incidents = new IncidentRecorder(this.quarantine, {
      now: this.options.now,
      windowMs: this.options.incidentWindowMs,
    })
  }

  /** The canary key, imported once on first use (WebCrypto is async). */
  key(): Promise<CanaryKey> {
    this.#key ??= importCanaryKey(this.options.secret)
    return this.#key
  }

  /** A runner for one tenant over one upstream; cheap, so the middleware makes one per request. */
  runner(upstream: AiRunner, tenant = this.options.tenant, hooks: RunnerHooks = {}): AiRunner {
    if (typeof tenant !== 'string' || tenant === '')
      throw new Error('option "tenant" must be a non-empty string')
    return {
      run: (model, inputs, options) => this.run(upstream, tenant, hooks, model, inputs, options),
    }
  }

  profile(model: string): ModelProfile {
    const profile = this.options.profiles.get(model) ?? this.options.fallbackProfile
    if (!profile) {
      throw new GuardError(
        'invalid_request',
        `Model ${JSON.stringify(model)} has no profile, so no safe token ceiling is known; add one under the "models" option.`,
        { param: 'model' },
      )
    }
    return profile
  }

  log(event: VerdictLog): void {
    try {
      if (this.#onVerdict) this.#onVerdict(event)
      else if (event.action !== 'release')
        console.warn(JSON.stringify({ event: 'ai_guard', ...event }))
    } catch {
      // A failing log hook must not change a verdict.
    }
  }

  /**
   * One guarded call: plan (envelope, profile, ceiling), then attempts — inject, call, verify — until a
   * release, a quarantine, or an error. Anything unexpected becomes `guard_unavailable`: a guard that
   * cannot run never releases an unverified answer.
   */
  async run(
    upstream: AiRunner,
    tenant: string,
    hooks: RunnerHooks,
    model: string,
    inputs: Record<string, unknown>,
    runOptions?: Record<string, unknown>,
  ): Promise<unknown> {
    const requestId = this.options.requestId()
    try {
      if (typeof model !== 'string' || model === '') {
        throw new GuardError('invalid_request', 'The model must be a non-empty string.', {
          param: 'model',
        })
      }
      if (runOptions?.returnRawResponse === true || runOptions?.websocket === true) {
        throw new GuardError(
          'invalid_request',
          'Raw and WebSocket responses cannot be verified, so the guard does not offer them.',
        )
      }
      const plan = await planRequest(this, requestId, tenant, model, inputs)
      if (plan.scanning) {
        // Off the request path: a directory write never delays or fails an answer (it never rejects).
        const remembered = this.attribution.remember(tenant)
        hooks.waitUntil?.(remembered)
      }
      return await this.#attempts(upstream, plan, hooks, runOptions)
    } catch (error) {
      const guardError = asGuardError(error)
      if (guardError.code === 'context_length_exceeded') {
        this.log({ requestId, tenant, model, action: 'reject', reasons: [guardError.code] })
      }
      throw guardError
    }
  }

  async #attempts(
    upstream: AiRunner,
    plan: RequestPlan,
    hooks: RunnerHooks,
    runOptions: Record<string, unknown> | undefined,
  ): Promise<unknown> {
    const { timeouts } = this.options
    const streamed = plan.facts.stream || plan.viaStream
    for (let attempt = 1; ; attempt++) {
      const canary = plan.scanning
        ? await mintCanary(await this.key(), {
            requestId: `${plan.requestId}/${attempt}`,
            tenant: plan.tenant,
          })
        : undefined
      const injected =
        plan.proof !== 'none' && canary
          ? injectCanary(plan.inputs, canary, plan.proof)
          : plan.inputs
      const sent = plan.viaStream
        ? {
            ...injected,
            stream: true,
            stream_options: { ...streamOptions(plan.inputs), include_usage: true },
          }
        : injected
      const ctx: AttemptContext = {
        services: this,
        requestId: plan.requestId,
        tenant: plan.tenant,
        model: plan.model,
        profile: plan.profile,
        canary,
        proof: plan.proof,
        estimate: plan.estimate,
        counted: plan.counted,
        timed: plan.timed,
        boundTokens: plan.admission.estimated,
        // A retry re-sends everything but the directive: the engine may have all of it cached.
        prefix: attempt === 1 ? plan.prefix : () => wholePromptCached(plan),
        baseline: plan.snapshot.baseline,
        waitUntil: hooks.waitUntil,
        startedAt: this.options.now(),
        attempt,
      }
      let output: unknown
      try {
        const call = upstream.run(plan.model, sent, runOptions)
        output = await deadline(
          call,
          streamed ? timeouts.firstTokenMs : timeouts.responseMs,
          streamed ? 'a stream' : 'an answer',
          (late) => {
            if (late instanceof ReadableStream) late.cancel().catch(() => {})
          },
        )
      } catch (error) {
        // An engine refusing the length states its own count: the best evidence for the ceiling.
        const stated = statedPromptTokens(error, plan.admission.clampTo ?? plan.facts.maxTokens)
        if (stated !== undefined) teachRefusal(ctx, stated)
        throw upstreamError(error)
      }
      const outcome = streamed
        ? await verifyStreamedAnswer(ctx, output)
        : await verifyWholeAnswer(ctx, output)
      if (outcome.verdict.action === 'retry') continue
      if (outcome.verdict.action === 'refuse') throw this.refusal(ctx, outcome)
      if (outcome.verdict.action === 'quarantine') throw await this.withhold(ctx, outcome)
      const released =
        plan.viaStream && outcome.released instanceof ReadableStream
          ? await assembleAnswer(outcome.released as ReadableStream<Uint8Array>)
          : outcome.released
      this.log({
        requestId: plan.requestId,
        tenant: plan.tenant,
        model: plan.model,
        action: 'release',
        reasons: attempt > 1 ? ['released_after_retry'] : [],
        ...(outcome.figures.estimatedTokens !== undefined
          ? tokenFigures(outcome.figures)
          : promptFigures(plan.admission)),
        ...timingFigures(outcome.figures),
      })
      if (released !== null && typeof released === 'object') {
        const info: GuardInfo = { requestId: plan.requestId, attempts: attempt }
        if (outcome.format !== undefined && !plan.viaStream) info.format = outcome.format
        if (plan.admission.clampTo !== undefined) info.clampedMaxTokens = plan.admission.clampTo
        INFO.set(released, info)
      }
      return released
    }
  }

  /** What calibration has learned for a model; unavailable calibration fails closed. */
  async snapshot(model: string): Promise<CalibrationSnapshot> {
    try {
      return await this.calibration.snapshot(model)
    } catch (error) {
      // The learned figures only tighten the guards; without them the ceiling would be less safe.
      throw new GuardError('guard_unavailable', 'Guard calibration is unavailable.', {
        cause: error,
      })
    }
  }

  /**
   * A withheld answer that is the client's to fix (the output limit ended it before the echo): a 400
   * with what to do, logged, and no incident — nothing points at a leak.
   */
  refusal(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): GuardError {
    this.log({
      requestId: ctx.requestId,
      tenant: ctx.tenant,
      model: ctx.model,
      action: 'reject',
      reasons: outcome.verdict.reasons,
      ...tokenFigures(outcome.figures),
    })
    return new GuardError(
      'invalid_request',
      'The answer reached its output limit before it could be verified (the model reasons before it answers), so it was withheld. Raise max_tokens.',
      { param: 'max_tokens' },
    )
  }

  /** Records a withheld answer and returns the error for its client. Never releases anything. */
  async withhold(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): Promise<GuardError> {
    let id = `inc_${crypto.randomUUID()}`
    const { canaries, sourceTenants } = await this.attribution.attribute(outcome.canaries)
    const record: QuarantineRecord = {
      id,
      at: this.options.now(),
      tenant: ctx.tenant,
      model: ctx.model,
      requestId: ctx.requestId,
      reasons: outcome.verdict.reasons,
      figures: { ...outcome.figures, attempts: ctx.attempt, score: outcome.verdict.score },
      canaries,
      sourceTenants,
      withheld: outcome.withheld,
    }
    let stored = true
    try {
      id = (await this.incidents.record(record)).id
    } catch (error) {
      // Fail closed: the answer stays withheld whether or not the record could be written.
      stored = false
      console.error(
        JSON.stringify({
          event: 'ai_guard_store_failed',
          incidentId: id,
          error: error instanceof Error ? error.message : String(error),
        }),
      )
    }
    this.log({
      requestId: ctx.requestId,
      tenant: ctx.tenant,
      model: ctx.model,
      action: 'quarantine',
      reasons: stored ? outcome.verdict.reasons : [...outcome.verdict.reasons, 'store_failed'],
      incidentId: id,
      ...tokenFigures(outcome.figures),
      ...timingFigures(outcome.figures),
    })
    return quarantineError(id)
  }
}

/** Per-request hooks from the host (the Worker passes its `ExecutionContext.waitUntil`). */
export interface RunnerHooks {
  waitUntil?: (promise: Promise<unknown>) => void
}

/** The error a client gets for a withheld answer: the incident id and nothing else. */
export function quarantineError(incidentId: string): GuardError {
  return new GuardError(
    'response_quarantined',
    `The model's answer failed verification and was withheld. Incident ${incidentId} has been recorded for review.`,
    { incidentId },
  )
}

/** A retry's prefix: the first attempt sent the same prompt, so the engine may have all of it cached. */
async function wholePromptCached(plan: RequestPlan): Promise<PrefixLookup> {
  const [{ digest }, estimate] = await Promise.all([plan.prefix(), plan.estimate()])
  return { digest, cachedTokens: estimate.lower + estimate.overhead }
}

function streamOptions(inputs: Record<string, unknown>): Record<string, unknown> {
  const value = inputs.stream_options
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {}
}

/** What the guard did to produce a released answer (for headers and logs of the surfaces). */
export interface GuardInfo {
  requestId: string
  attempts: number
  /** Set when `overflow: 'clamp-output'` lowered the request's output limit to fit. */
  clampedMaxTokens?: number
  /** A released stream's SSE format (`chat` chunks or legacy `{ response }` events). */
  format?: StreamFormat
}

const INFO = new WeakMap<object, GuardInfo>()

/**
 * What the guard did for a released answer (the object or stream `run()` returned), if it guarded it.
 *
 * @example
 * const out = await ai.run(model, inputs)
 * const clamped = guardInfo(out)?.clampedMaxTokens
 */
export function guardInfo(output: unknown): GuardInfo | undefined {
  return output !== null && typeof output === 'object' ? INFO.get(output) : undefined
}

/** A released prompt's size for the log: its token estimate when it was counted, else its byte bound. */
function promptFigures(
  admission: RequestPlan['admission'],
): Pick<VerdictLog, 'estimatedTokens' | 'tokenBound'> {
  return admission.method === 'count'
    ? { estimatedTokens: admission.estimated + admission.overhead }
    : { tokenBound: admission.estimated }
}

/** A judged answer's prompt size, as the judgement worked it out. */
function tokenFigures(
  f: QuarantineRecord['figures'],
): Pick<VerdictLog, 'estimatedTokens' | 'tokenBound'> {
  if (f.estimatedTokens !== undefined) return { estimatedTokens: f.estimatedTokens }
  return f.tokenBound !== undefined ? { tokenBound: f.tokenBound } : {}
}

function timingFigures(
  f: QuarantineRecord['figures'],
): Pick<VerdictLog, 'ttftMs' | 'expectedMinMs'> {
  const out: Pick<VerdictLog, 'ttftMs' | 'expectedMinMs'> = {}
  if (f.ttftMs !== undefined) out.ttftMs = Math.round(f.ttftMs)
  if (f.expectedMinMs !== undefined) out.expectedMinMs = Math.round(f.expectedMinMs)
  return out
}
