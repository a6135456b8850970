/**
 * @module The verdict's vocabulary: the signals the guards gather about one answer, the reasons a
 * verdict gives and the verdict itself. Types only, so every stage may name them; only
 * src/core/verify/verdict.ts decides one.
 */
import type { TimingSignal } from '../timing/prefill'

/**
 * How the echo check ended. `cut-off`: the answer reached its output limit before any visible reply
 * long enough to carry the echo (a reasoning model spends its budget thinking first).
 */
export type EchoOutcome = 'echoed' | 'missing' | 'cut-off' | 'not-requested'

/** Every signal the guards gathered about one answer. */
export interface Signals {
  echo: EchoOutcome
  /** Canaries in the answer that verify under our key but belong to another request. */
  foreignCanaries: number
  /** Stand-ins of secrets that verify under our key but were minted for another request. */
  foreignStandIns?: number
  /** Another tenant's recent prompt text in the answer (src/plugins/foreign-content), when found. */
  foreignContent?: { source: string; run: number }
  timing?: TimingSignal
  /**
   * The upstream's own prompt count beside the guard's lower estimate of it (the family's smallest
   * count with a margin, template included), when both are known.
   */
  usage?: { reported: number; lower: number }
  /** Attempts made so far, including this one, and how many retries a lone missing echo may use. */
  attempt: number
  retries: number
  /**
   * Where the answer is when it is judged: `held` (nothing sent yet; the default) or `released` (a
   * stream whose first bytes left under the `async` policy, or a finding after release): no retry
   * can take released bytes back, so a lone missing echo is withheld at once.
   */
  phase?: 'held' | 'released'
}

/** A reason code and what it weighs. */
export type Reason =
  | 'foreign_canary'
  | 'foreign_stand_in'
  | 'foreign_content'
  | 'ttft_impossible'
  | 'usage_undercount'
  | 'echo_missing'
  | 'echo_missing_repeatedly'
  | 'echo_cut_off'
  | 'cache_unexplained'

/**
 * The checks whose evidence is a judgement, each of which the operator may run in observe mode:
 * `content` (`foreign_content`), `timing` (`ttft_impossible`, `usage_undercount`, `cache_unexplained`)
 * and `echo` (`echo_missing`, `echo_missing_repeatedly`). Proof (another request's canary or
 * stand-in) has no such mode.
 */
export type ObservableCheck = 'content' | 'timing' | 'echo'

/** Which checks are observed: their verdicts release the answer and record what they would withhold. */
export type Observe = Readonly<Record<ObservableCheck, boolean>>

/** The decision on one answer. */
export interface Verdict {
  /** `refuse`: withheld as a client error (nothing leaked, nothing to review), never an incident. */
  action: 'release' | 'retry' | 'quarantine' | 'refuse'
  reasons: Reason[]
  score: number
  /**
   * Released under observe: every one of `reasons` belongs to an observed check, and enforced they
   * would have withheld the answer. It is recorded as an observed incident and teaches nothing.
   */
  observed?: true
}
