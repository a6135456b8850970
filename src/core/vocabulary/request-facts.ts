/**
 * @module What the plan decided about a request that the later stages read: types only, so an
 * attempt's context (src/core/attempt/context.ts) names them without depending on the plan.
 */
import type { PromptEstimate } from '../ceiling/estimate'
import type { ScriptClass } from '../ceiling/script'
import type { PromptDigest } from '../timing/prefix-record'

/**
 * How an answer to this request proves it was generated from this prompt's end.
 * - `text`: the reply begins with this request's canary (the directive is the prompt's last text).
 * - `json`: a JSON-mode reply begins with a `guard_echo` member holding the canary (removed on release).
 * - `none`: the format cannot carry an echo (callable tools, schema-constrained decoding): timing, the
 *   usage cross-check and the foreign-canary scan are the evidence, and learned state is never taught.
 */
export type ProofKind = 'text' | 'json' | 'none'

/** `chat`: OpenAI `chat.completion(.chunk)` objects; `legacy`: Workers AI `{ response, usage? }`. */
export type StreamFormat = 'chat' | 'legacy'

/** The prompt's family estimate with what the timing and usage checks read from it. */
export interface PlanEstimate extends PromptEstimate {
  /** Fixed template tokens on top of the counted text. */
  overhead: number
  /** The class holding the largest share of the bound (timing baselines are kept per class). */
  dominant: ScriptClass
}

/** What this tenant's own verified prompts say the engine may have cached of this one. */
export interface PrefixLookup {
  digest: PromptDigest
  /** Prompt tokens (lower estimate) covered by earlier verified prompts of the same tenant. */
  cachedTokens: number
}
