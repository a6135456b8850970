/**
 * @module The attempt loop of one admitted request: inject a fresh canary, call, verify — then release,
 * retry (a lone missing echo), refuse (the client's output limit) or quarantine.
 */
import type { AttemptContext, AttemptOutcome, AttemptServices, Lesson } from '../attempt/context'
import { teach } from '../calibration/teach'
import { callUpstream } from '../call/call'
import type { AiRunner } from '../call/upstream'
import { statedPromptTokens } from '../call/upstream-error'
import { cacheSalt, injectCanary, mintCanary, prefixMarker, prependMarker } from '../canary'
import { GuardError } from '../errors'
import { assembleAnswer } from '../format/assemble'
import type { RequestPlan } from '../plan/plan'
import { assistantTexts, promptTexts } from '../plan/prompt-texts'
import { cutOffError } from '../quarantine/withhold'
import { verifyStreamedAnswer } from '../verify/streamed-answer'
import { verifyWholeAnswer } from '../verify/whole-answer'
import type { ContentBook, PrintedPrompt, Recall } from '../vocabulary/evidence-plugins'
import type { PrefixLookup } from '../vocabulary/request-facts'
import { attachInfo } from './guard-info'
import { toClientStream } from './stream-outcome'
import type { VerdictLogger } from './verdict-log'

/** What the loop needs of the guard. */
export interface AttemptHost extends AttemptServices {
  readonly logger: VerdictLogger
  /** The foreign-content book, when the check is on. */
  readonly content: ContentBook | undefined
}

/** Per-request hooks from the host (the Worker passes its `ExecutionContext.waitUntil`). */
export interface RunnerHooks {
  waitUntil?: (promise: Promise<unknown>) => void
  /**
   * Told when an attempt's prompt is with the engine and the guard's work on it (its print, its count)
   * is done: until the answer, the request holds only what it keeps of its prompt. The Worker lowers
   * the request's memory reservation here (src/worker/admission.ts).
   */
  prefilling?: () => void
  /**
   * Told before a retry builds its prompt again (a fresh canary-marked copy, sent whole); a throw
   * refuses the retry (the Worker raises the reservation back, or answers 503 when it no longer fits).
   */
  retrying?: () => void
  /**
   * Told each time a streamed answer held until its verdict has grown by another 256 KiB
   * (`HOLDING_STEP_BYTES`; the argument: its event bytes held so far); a throw withholds it with that error before
   * any byte of it is released. The Worker charges it to the request's memory reservation.
   */
  holding?: (bytes: number) => void
}

/** What the guard itself adds to a request's hooks (never the host's to set). */
export interface AttemptHooks extends RunnerHooks {
  /** The second opinion on this request's foreign-content evidence (absent: none is asked). */
  recall?: Recall
  /** A second opinion's own request: its cue is an answer's text, never a tenant's prompt to print. */
  unprinted?: true
}

/** One admitted request's attempts: where they go, what was planned, and the hooks they run with. */
interface AttemptRun {
  upstream: AiRunner
  plan: RequestPlan
  hooks: AttemptHooks
  /** The caller's third argument to `run()` (extra headers, gateway options). */
  runOptions?: Record<string, unknown>
}

/** How long after its call a prompt's print, count and hash start (see runAttempts). */
const AFTER_SEND_MS = 1

/**
 * Runs attempts until one is released (returned) or withheld (thrown).
 *
 * @example
 * return await runAttempts(guard, { upstream: env.AI, plan, hooks: { waitUntil } })
 */
export async function runAttempts(host: AttemptHost, run: AttemptRun): Promise<unknown> {
  const { plan, hooks } = run
  const streamed = plan.facts.stream || plan.viaStream
  const print = hooks.unprinted ? UNPRINTED : promptPrint(host, plan, hooks)
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) hooks.retrying?.()
    const { ctx, calling } = await send(host, run, attempt, print.content)
    // The call is made, so its print is registered now (an answer checked before the work runs makes it
    // first); the work waits until the send has left, so it runs while the engine prefills instead of
    // delaying the send (AFTER_SEND_MS: a 0 ms timer fired inside a long send in workerd). Kept alive with
    // the request: a call that fails at once still had its prompt sent, so the print is published.
    print.sent()
    const afterSend = new Promise<void>((resolve) =>
      setTimeout(() => {
        // Each waits for the memo's digests first (src/core/memo), then takes what this tenant's earlier
        // requests computed of the same texts; kept alive until done (the print publishes).
        Promise.allSettled([
          print.content(),
          plan.needsEstimate ? plan.figures.estimate() : undefined,
          plan.needsPrefix && attempt === 1 ? plan.figures.prefix() : undefined,
        ]).then(() => {
          hooks.prefilling?.()
          resolve()
        })
      }, AFTER_SEND_MS),
    )
    hooks.waitUntil?.(afterSend)
    const output = await calling.catch(teachingRefusal(ctx, plan))
    const outcome = streamed
      ? toClientStream(await verifyStreamedAnswer(ctx, output), (lesson) => learnFrom(ctx, lesson))
      : await verifyWholeAnswer(ctx, output)
    switch (outcome.verdict.action) {
      case 'retry':
        continue
      case 'refuse':
        host.logger.rejected(ctx, outcome)
        throw cutOffError()
      case 'quarantine':
        throw await host.withhold(ctx, outcome)
      default:
        // Observed: recorded before it leaves; it carries no lesson, whole or streamed.
        if (outcome.verdict.observed) await host.observe(ctx, outcome)
        // A stream's lesson comes at its end (toClientStream above); a whole answer's is here.
        if (outcome.lesson) learnFrom(ctx, outcome.lesson)
        return release(host, plan, { outcome, attempt, ctx })
    }
  }
}

/**
 * Prepares an attempt and makes its call. Apart from the attempt loop on purpose: the sent inputs (a
 * canary-marked copy of the prompt, flattened whole when the binding serializes it) are this
 * function's alone, so they are garbage once sent, not kept through the engine's prefill.
 */
async function send(
  host: AttemptHost,
  run: AttemptRun,
  attempt: number,
  content: AttemptContext['content'],
): Promise<{ ctx: AttemptContext; calling: Promise<unknown> }> {
  const { upstream, plan, runOptions } = run
  const { ctx, inputs, isolated } = await prepare(host, run, attempt, content)
  const calling = callUpstream(ctx, upstream, {
    model: plan.model,
    inputs,
    runOptions: withAffinity(runOptions, isolated.affinity),
    streamed: plan.facts.stream || plan.viaStream,
  })
  return { ctx, calling }
}

/**
 * Passes a failed call's error on, first teaching the count an engine's length refusal states (its
 * own error is the `cause`): the best evidence the ceiling gets, exactly the prompt that did not fit.
 */
function teachingRefusal(ctx: AttemptContext, plan: RequestPlan): (error: unknown) => never {
  return (error) => {
    const stated = statedPromptTokens(
      error instanceof GuardError ? (error.cause ?? error) : error,
      plan.admission.clampTo ?? plan.facts.maxTokens,
    )
    if (stated !== undefined) learnFrom(ctx, { reported: stated, verified: false, refusal: true })
    throw error
  }
}

/**
 * The one place learned state is taught: calibration from a released answer or an engine refusal,
 * and the foreign-content background from a verified answer.
 */
function learnFrom(ctx: AttemptContext, lesson: Lesson): void {
  if (lesson.observed) return
  teach(ctx, lesson)
  lesson.content?.()
}

/**
 * A fresh canary for this attempt, the inputs carrying it (and the tenant's cache isolation: salt, or
 * prefix marker and session affinity), and the context verification reads.
 */
async function prepare(
  host: AttemptHost,
  { plan, hooks }: AttemptRun,
  attempt: number,
  content: AttemptContext['content'],
): Promise<{ ctx: AttemptContext; inputs: Record<string, unknown>; isolated: Isolation }> {
  // All keyed WebCrypto work (the isolation's cached per tenant, the print key per isolate): none
  // waits for another. The print key is ready before the call so its prompt is registered with it.
  const [canary, isolated] = await Promise.all([
    plan.scanning
      ? host
          .key()
          .then((key) =>
            mintCanary(key, { requestId: `${plan.requestId}/${attempt}`, tenant: plan.tenant }),
          )
      : undefined,
    isolate(host, plan),
    host.content?.ready(),
  ])
  const injected =
    plan.proof !== 'none' && canary
      ? injectCanary(isolated.inputs, canary, plan.proof, plan.profile.directive)
      : isolated.inputs
  const inputs = plan.viaStream
    ? {
        ...injected,
        stream: true,
        stream_options: { ...streamOptions(plan.inputs), include_usage: true },
      }
    : injected
  const ctx: AttemptContext = {
    services: host,
    request: plan,
    canary,
    marker: isolated.marker,
    // A retry re-sends everything but the directive: the engine may have all of it cached.
    prefix: attempt === 1 ? () => plan.figures.prefix() : () => wholePromptCached(plan),
    content,
    ...(hooks.recall ? { recall: hooks.recall } : {}),
    waitUntil: hooks.waitUntil,
    ...(hooks.holding ? { holding: hooks.holding } : {}),
    startedAt: host.options.now(),
    attempt,
  }
  return { ctx, inputs, isolated }
}

/** No print: the foreign-content check does not watch this request's answers. */
const UNPRINTED = { sent: () => {}, content: async () => undefined }

/**
 * The request's prompt in the foreign-content book (the plug-in's `ContentBook`): registered by
 * `sent` when its first call is made, printed by `content` or by any answer's next lookup; `content`
 * gives undefined when the check is off.
 */
function promptPrint(
  host: AttemptHost,
  plan: RequestPlan,
  hooks: RunnerHooks,
): { sent(): void; content: AttemptContext['content'] } {
  const book = host.content
  if (!book) return UNPRINTED
  let printed: (() => PrintedPrompt) | undefined
  const register = () =>
    book.print({
      model: plan.model,
      tenant: plan.tenant,
      texts: () => promptTexts(plan.inputs),
      said: () => assistantTexts(plan.inputs),
      waitUntil: hooks.waitUntil,
      memo: plan.memo,
    })
  return {
    sent: () => {
      printed ??= register()
    },
    content: async () => {
      await Promise.all([book.ready(), plan.figures.remembered()])
      printed ??= register()
      return printed()
    },
  }
}

/** The inputs as the profile's cache isolation sends them, and what else it sets. */
interface Isolation {
  inputs: Record<string, unknown>
  marker?: string
  /** Workers AI's `x-session-affinity` for this tenant. */
  affinity?: string
}

/**
 * The tenant's cache isolation (see `CacheIsolation`): `salt` adds `cache_salt`; `prefix` starts the
 * prompt with the tenant's marker and routes by a per-tenant session affinity. The client's own
 * `cache_salt` was dropped when the request was read (src/core/plan/request.ts), and its affinity header is
 * replaced, so neither can widen the scope to another tenant's.
 */
async function isolate(host: AttemptHost, plan: RequestPlan): Promise<Isolation> {
  const { cacheIsolation } = plan.profile
  if (cacheIsolation === 'off') return { inputs: plan.inputs }
  const key = await host.key()
  const salt = await cacheSalt(key, plan.tenant)
  if (cacheIsolation === 'salt') return { inputs: { ...plan.inputs, cache_salt: salt } }
  const marker = await prefixMarker(key, plan.tenant)
  return { inputs: prependMarker(plan.inputs, marker), marker, affinity: `wag-${salt}` }
}

/** The header that routes Workers AI requests to the replica holding their cache. */
const AFFINITY_HEADER = 'x-session-affinity'

/**
 * The caller's run options with the tenant's session affinity in `extraHeaders` (any affinity header
 * the caller set, in any case, replaced).
 */
function withAffinity(
  runOptions: Record<string, unknown> | undefined,
  affinity: string | undefined,
): Record<string, unknown> | undefined {
  if (affinity === undefined) return runOptions
  const headers: Record<string, unknown> = {}
  const extra = runOptions?.extraHeaders
  if (typeof extra === 'object' && extra !== null) {
    for (const [name, value] of Object.entries(extra)) {
      if (name.toLowerCase() !== AFFINITY_HEADER) headers[name] = value
    }
  }
  headers[AFFINITY_HEADER] = affinity
  return { ...runOptions, extraHeaders: headers }
}

/** The released answer, as the client asked for it (a whole answer fetched as a stream reassembled). */
async function release(
  host: AttemptHost,
  plan: RequestPlan,
  {
    outcome,
    attempt,
    ctx,
  }: { outcome: AttemptOutcome<unknown>; attempt: number; ctx: AttemptContext },
): Promise<unknown> {
  const released =
    plan.viaStream && outcome.released instanceof ReadableStream
      ? await assembleAnswer(outcome.released as ReadableStream<Uint8Array>)
      : outcome.released
  // A stream's line waits for its first byte to reach the client; a whole answer leaves now.
  const log = (firstByteMs: number | undefined) =>
    host.logger.released(plan, outcome, { attempt, firstByteMs, waitUntil: ctx.waitUntil })
  if (outcome.firstByte && !plan.viaStream) outcome.firstByte.listen(log)
  else log(host.options.now() - ctx.startedAt)
  attachInfo(released, {
    requestId: plan.requestId,
    attempts: attempt,
    ...(outcome.format !== undefined && !plan.viaStream ? { format: outcome.format } : {}),
    ...(plan.admission.clampTo !== undefined ? { clampedMaxTokens: plan.admission.clampTo } : {}),
  })
  return released
}

/** A retry's prefix: the first attempt sent the same prompt, so the engine may have all of it cached. */
async function wholePromptCached(plan: RequestPlan): Promise<PrefixLookup> {
  const [{ digest }, estimate] = await Promise.all([plan.figures.prefix(), plan.figures.estimate()])
  return { digest, cachedTokens: estimate.lower + estimate.overhead }
}

function streamOptions(inputs: Record<string, unknown>): Record<string, unknown> {
  const value = inputs.stream_options
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {}
}
