/**
 * @module One attempt's context and outcome, and the few services of the guard a stage may use: the
 * stages (verify, release) import this, never the guard, so the pipeline runs one way.
 */

import type { BaselineState } from '../calibration/baseline'
import type { CalibrationStore } from '../calibration/learned'
import type { CanaryKey } from '../canary'
import type { GuardError } from '../errors'
import type { PrefixRecord } from '../timing/prefix-record'
import type { PrintedPrompt, PromptSecrets, Recall } from '../vocabulary/evidence-plugins'
import type { ModelProfile, ResolvedOptions } from '../vocabulary/options'
import type { QuarantineRecord } from '../vocabulary/quarantine'
import type {
  PlanEstimate,
  PrefixLookup,
  ProofKind,
  StreamFormat,
} from '../vocabulary/request-facts'
import type { Verdict } from '../vocabulary/verdict-types'
import type { FirstByte } from './first-byte'

/** What a stage may ask of the guard running it. */
export interface AttemptServices {
  readonly options: ResolvedOptions
  /** The canary key (imported once per guard). */
  key(): Promise<CanaryKey>
  /** Where verified answers teach tokenizer margins and timing. */
  readonly calibration: CalibrationStore
  /** Each tenant's verified prompts, which excuse a fast first token as a cache hit. */
  readonly prefixes: PrefixRecord
  /** Records a withheld answer and returns the error for its client; never releases anything. */
  withhold(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): Promise<GuardError>
  /**
   * Records an answer released under observe (`verdict.observed`) as the incident it would have been,
   * with its `would_block` verdict line; `withheld` is what enforce would have withheld.
   */
  observe(ctx: AttemptContext, outcome: AttemptOutcome<unknown>): Promise<void>
}

/**
 * What every stage of an attempt reads of its request: the plan itself, by reference (src/core/plan/plan.ts
 * `RequestPlan` is one), never a copy.
 */
export interface AttemptRequest {
  readonly requestId: string
  readonly tenant: string
  readonly model: string
  readonly profile: ModelProfile
  /** The echo the prompt asks for (`none`: not asked; the answer is still scanned). */
  readonly proof: ProofKind
  /** The prompt's family estimate, template overhead included (counted once, on first need). */
  readonly figures: { estimate(): Promise<PlanEstimate> }
  /** Whether the prompt is counted: only then may usage be cross-checked and calibration taught. */
  readonly counted: boolean
  /** Whether the prompt is long enough to be timed (only then is its prefix worth remembering). */
  readonly timed: boolean
  /** `estimated`: an upper bound of the prompt's tokens (what the ceiling admitted). */
  readonly admission: { readonly estimated: number }
  /** `baseline`: the learned honest timing for this model when the request was admitted. */
  readonly snapshot: { readonly baseline: BaselineState }
  /**
   * This request's stand-ins (their values restored in the answer) and the recognition of any other
   * request's; undefined when the guard substitutes no secret.
   */
  readonly secrets: PromptSecrets | undefined
  /** Whether the answer's content is JSON (values are restored into it escaped). */
  readonly jsonContent: boolean
}

/** What a verification step needs to know about the attempt it checks: its request and its own facts. */
export interface AttemptContext {
  /** What the stages may use of the guard that runs them. */
  services: AttemptServices
  request: AttemptRequest
  /** This attempt's canary, or undefined when the echo policy is `off`. */
  canary: string | undefined
  /** The tenant's prefix marker at the start of the prompt (`cacheIsolation: 'prefix'`). */
  marker: string | undefined
  /** What this tenant's own verified prompts say the engine may have cached (0 on a retry's record). */
  prefix: () => Promise<PrefixLookup>
  /**
   * This request's prompt in the foreign-content book (printed once, after the first call was made):
   * each attempt watches its answer with a fresh watch. Undefined when the check is off.
   */
  content: () => Promise<PrintedPrompt | undefined>
  /**
   * The second opinion on foreign-content evidence (the foreign-content plug-in's); undefined when
   * off and inside a second opinion's own request.
   */
  recall?: Recall
  /** Keeps background work (calibration reports) alive past the response, where the host allows. */
  waitUntil: ((promise: Promise<unknown>) => void) | undefined
  /** The host's hook on an answer held until its verdict, each {@link HOLDING_STEP_BYTES} it grows. */
  holding?: (bytes: number) => void
  /** When the upstream call was made, by the guard's clock. */
  startedAt: number
  attempt: number
}

/**
 * What an answer (or an engine's refusal) can teach learned state. Verification says what it is; the
 * orchestrator teaches it once, and only from a released answer or a refusal.
 */
export interface Lesson {
  /** The engine's `usage.prompt_tokens` (or the count its refusal stated). */
  reported?: number
  /** The engine's `usage.prompt_tokens_details.cached_tokens`. */
  reportedCached?: number
  /** Time to the first token, when the answer was streamed (or fetched as a stream). */
  firstTokenMs?: number
  /** The echo verified: the prompt's end was read, so timing and prefixes may be learned. */
  verified: boolean
  /** The count comes from an engine refusal (rare, and the most valuable observation). */
  refusal?: boolean
  /** Verified answers only: makes the answer's words known as the model's (foreign-content plug-in). */
  content?: () => void
  /** A stream released under observe with a finding: it teaches nothing at all. */
  observed?: true
}

/**
 * What a verification step concluded, and the withheld text if it did not release (or, released under
 * observe, what its incident records).
 */
export interface AttemptOutcome<T> {
  verdict: Verdict
  released?: T
  withheld: Record<string, string>
  figures: QuarantineRecord['figures']
  canaries: QuarantineRecord['canaries']
  /** The released stream's format, when the verification saw it. */
  format?: StreamFormat
  /** Tenants whose prompt text the answer carried (foreign-content evidence), for the record. */
  contentSources?: string[]
  /** Other requests' secret stand-ins found, per kind (the verdict log's `secrets.foreign`). */
  foreignStandIns?: Record<string, number>
  /** This request's secrets restored in a released whole answer, per kind. */
  restored?: Record<string, number>
  /**
   * A released stream: ms from the upstream call to its first byte handed to the client (undefined
   * if none ever was), settled as the client reads — before any quarantine that ends the stream.
   */
  firstByte?: FirstByte
  /** A released whole answer's lesson (a stream's comes at its end: `VerifiedStream.lessonAt`). */
  lesson?: Lesson
}

/**
 * The canary-shaped tokens an answer may carry as its own (cut, never reported): this attempt's canary
 * and the tenant's prefix marker. Empty: the answer is not scanned at all (echo policy `off`, no marker).
 *
 * @example
 * if (ownTokens(ctx).length === 0) return texts
 */
export function ownTokens(ctx: AttemptContext): string[] {
  const own: string[] = []
  if (ctx.canary !== undefined) own.push(ctx.canary)
  if (ctx.marker !== undefined) own.push(ctx.marker)
  return own
}

/** How often, in held bytes, the host hears an answer held until its verdict grow (RunnerHooks.holding). */
export const HOLDING_STEP_BYTES = 256 * 1024
