/**
 * @module The guard: its per-isolate state (options, stores, learned state, canary key) and one guarded
 * call — plan, then attempts (see ./attempts.ts) — with every unexpected failure failing closed.
 */
import type { AttemptContext, AttemptOutcome } from '../attempt/context'
import { isolateTenantDirectory, TenantAttribution } from '../attribution'
import {
  type CalibrationSnapshot,
  type CalibrationStore,
  MemoryCalibration,
} from '../calibration/learned'
import type { AiRunner } from '../call/upstream'
import { type CanaryKey, importCanaryKey } from '../canary'
import { asGuardError, GuardError } from '../errors'
import { TextMemo } from '../memo/text-memo'
import { type PlanServices, planRequest, type RequestPlan } from '../plan/plan'
import { IncidentRecorder } from '../quarantine/aggregate'
import { MemoryQuarantineStore } from '../quarantine/memory'
import { type Incident, quarantineError, recordIncident } from '../quarantine/withhold'
import { heartbeatStream, heldPast } from '../release/heartbeat'
import { PrefixRecord } from '../timing/prefix-record'
import type {
  ContentBook,
  EvidencePlugins,
  PluginHost,
  Recall,
  SecretsHook,
} from '../vocabulary/evidence-plugins'
import {
  fallbackProfile,
  type GuardOptions,
  type ModelProfile,
  type ResolvedOptions,
  resolveOptions,
} from '../vocabulary/options'
import type { QuarantineStore } from '../vocabulary/quarantine'
import { type AttemptHooks, type AttemptHost, type RunnerHooks, runAttempts } from './attempts'
import { attachInfo } from './guard-info'
import { VerdictLogger } from './verdict-log'

/** Who calls through a runner: the upstream it wraps, the tenant and the host's hooks. */
interface GuardCaller {
  upstream: AiRunner
  tenant: string
  hooks: RunnerHooks
}

/** The guard's per-isolate state, shared by every request it serves. */
export class Guard implements AttemptHost, PlanServices {
  readonly options: ResolvedOptions
  readonly quarantine: QuarantineStore
  readonly calibration: CalibrationStore
  readonly prefixes = new PrefixRecord()
  readonly logger: VerdictLogger
  /** Tag → tenant, shared through a directory so a leak is attributed across isolates. */
  readonly attribution: TenantAttribution
  /** Folds a tenant's repeated incidents of one kind into one record; leaks are always kept whole. */
  readonly incidents: IncidentRecorder
  /** The foreign-content plug-in's book of recent prompts (undefined: off, or not registered). */
  readonly content: ContentBook | undefined
  /** The secrets plug-in's prompt hook (undefined: no secret is looked for, or not registered). */
  readonly secrets: SecretsHook | undefined
  /** Facts of each tenant's long texts between its requests (undefined when off). */
  readonly memo: TextMemo | undefined
  #key: Promise<CanaryKey> | undefined

  /**
   * `plugins`: the evidence checks this guard has (the default entry registers both). An option
   * group asking for a check that is not registered throws: a guard never silently lacks a check.
   */
  constructor(options: GuardOptions, plugins: EvidencePlugins) {
    this.options = resolveOptions(options)
    this.quarantine = options.quarantine?.store ?? new MemoryQuarantineStore()
    this.calibration = options.ceiling?.calibration ?? new MemoryCalibration()
    this.logger = new VerdictLogger(options.hooks?.onVerdict)
    this.attribution = new TenantAttribution(
      () => this.key(),
      options.canary?.tenantDirectory ?? isolateTenantDirectory(),
    )
    this.incidents = new IncidentRecorder(this.quarantine, {
      now: this.options.now,
      windowMs: this.options.incidentWindowMs,
    })
    const host: PluginHost = {
      secret: this.options.secret,
      key: () => this.key(),
      now: this.options.now,
    }
    assertRegistered(options, plugins)
    this.content = plugins.content?.create(options.content, host)
    this.secrets = plugins.secrets?.create(options.secrets, host)
    const memo = this.options.textMemo
    this.memo = memo ? new TextMemo(this.options.secret, memo) : undefined
  }

  /** The canary key, imported once on first use (WebCrypto is async). */
  key(): Promise<CanaryKey> {
    this.#key ??= importCanaryKey(this.options.secret)
    return this.#key
  }

  /** A runner for one tenant over one upstream; cheap, so surfaces make one per request. */
  runner(upstream: AiRunner, tenant = this.options.tenant, hooks: RunnerHooks = {}): AiRunner {
    if (typeof tenant !== 'string' || tenant === '')
      throw new Error('option "tenant" must be a non-empty string')
    return {
      run: (model, inputs, options) =>
        this.run({ upstream, tenant, hooks }, model, inputs, options),
    }
  }

  profile(model: string): ModelProfile {
    const profile = this.options.profiles.get(model) ?? fallbackProfile(this.options, model)
    if (!profile) {
      throw new GuardError(
        'invalid_request',
        `Model ${JSON.stringify(model)} has no profile, so no safe token ceiling is known; add one under the "models" option.`,
        { param: 'model' },
      )
    }
    return profile
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
   * One guarded call: plan (envelope, profile, ceiling), then attempts until a release, a quarantine,
   * or an error. Anything unexpected becomes `guard_unavailable`: a guard that cannot run never
   * releases an unverified answer.
   */
  async run(
    { upstream, tenant, hooks }: GuardCaller,
    model: string,
    inputs: Record<string, unknown>,
    runOptions?: Record<string, unknown>,
  ): Promise<unknown> {
    const requestId = this.options.requestId()
    try {
      checkCall(model, runOptions)
      const plan = await planRequest(this, { requestId, tenant, model }, inputs)
      if (plan.scanning || plan.profile.cacheIsolation === 'prefix') {
        // Off the request path: a directory write never delays or fails an answer (it never rejects).
        const remembered = this.attribution.remember(tenant)
        hooks.waitUntil?.(remembered)
      }
      const running = this.#attempts(upstream, plan, hooks, runOptions)
      const beat = this.options.heartbeatMs
      if (beat > 0 && plan.facts.stream && !plan.viaStream && (await heldPast(running, beat))) {
        // Held past one beat: from here the response is a 200 that beats (a verdict that came sooner
        // kept its own status, as refusals before the call do).
        const beating = heartbeatStream(
          running.then(
            (out) => out as ReadableStream<Uint8Array>,
            (error: unknown) => Promise.reject(asGuardError(error)),
          ),
          beat,
          true,
        )
        // What is known before the verdict: the attempts it will take are not (the first is counted).
        attachInfo(beating, {
          requestId,
          attempts: 1,
          ...(plan.admission.clampTo !== undefined
            ? { clampedMaxTokens: plan.admission.clampTo }
            : {}),
        })
        return beating
      }
      return await running
    } catch (error) {
      const guardError = asGuardError(error)
      if (guardError.code === 'context_length_exceeded') {
        this.logger.log(
          {
            requestId,
            tenant,
            model,
            action: 'reject',
            reasons: [guardError.code],
            ...(guardError.scripts ? { scripts: [...guardError.scripts] } : {}),
          },
          hooks.waitUntil,
        )
      }
      throw guardError
    }
  }

  /** The request's attempts, with the second opinion of its answers (which gets only the host's waitUntil). */
  #attempts(
    upstream: AiRunner,
    plan: RequestPlan,
    hooks: RunnerHooks,
    runOptions: Record<string, unknown> | undefined,
  ): Promise<unknown> {
    const recall = this.#recall(upstream, plan, hooks)
    const own: AttemptHooks = {
      waitUntil: hooks.waitUntil,
      ...(hooks.prefilling ? { prefilling: hooks.prefilling } : {}),
      ...(hooks.retrying ? { retrying: hooks.retrying } : {}),
      ...(hooks.holding ? { holding: hooks.holding } : {}),
      ...(recall ? { recall } : {}),
    }
    return runAttempts(this, { upstream, plan, hooks: own, runOptions })
  }

  /**
   * The second opinion of one request's answers (the foreign-content plug-in's): its request goes through
   * this guard under a tenant of its own, unprinted and with no second opinion of its own.
   */
  #recall(upstream: AiRunner, plan: RequestPlan, hooks: RunnerHooks): Recall | undefined {
    return this.content?.recall({
      model: plan.model,
      requestId: plan.requestId,
      inputs: plan.inputs,
      ask: async (tenant, inputs) => {
        const requestId = this.options.requestId()
        const probe = await planRequest(this, { requestId, tenant, model: plan.model }, inputs)
        return runAttempts(this, {
          upstream,
          plan: probe,
          hooks: { waitUntil: hooks.waitUntil, unprinted: true },
        })
      },
    })
  }

  /** Records a withheld answer and returns the error for its client. Never releases anything. */
  async withhold(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): Promise<GuardError> {
    return quarantineError((await this.#incident(ctx, outcome)).id)
  }

  /** Records an answer released under observe as the incident it would have been; withholds nothing. */
  async observe(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): Promise<void> {
    await this.#incident(ctx, outcome)
  }

  /** The incident record and its verdict line (`quarantine`, or `would_block` when observed). */
  async #incident(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): Promise<Incident> {
    const incident = await recordIncident(
      { attribution: this.attribution, incidents: this.incidents, now: this.options.now },
      ctx,
      outcome,
    )
    this.logger.quarantined(ctx, outcome, incident)
    return incident
  }
}

/**
 * A guard built without a plug-in (the lean entry) refuses the option group that asks for its check:
 * a request may make the guard stricter, never weaker, so an asked-for check is never dropped.
 */
function assertRegistered(options: GuardOptions, plugins: EvidencePlugins): void {
  const asked = [
    !plugins.content && options.content !== undefined && options.content !== false
      ? ['content', 'foreign-content']
      : undefined,
    !plugins.secrets && options.secrets !== undefined ? ['secrets', 'secrets'] : undefined,
  ].find((a) => a !== undefined)
  if (asked) {
    throw new Error(
      `option "${asked[0]}" asks for the ${asked[1]} check, which this guard does not have (the lean ` +
        "entry, 'workers-ai-guard/lean', leaves it out): import the default entry, 'workers-ai-guard'.",
    )
  }
}

/** The call's own arguments: a model name, and no response shape the guard cannot verify. */
function checkCall(model: string, runOptions: Record<string, unknown> | undefined): void {
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
}
