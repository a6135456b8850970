/**
 * @module The ceiling preflight: admit a request below the model's real pool, or refuse it with figures.
 */
import { ceilingFor, decideCeiling } from './ceiling/ceiling'
import { type PromptPieces, templateOverhead } from './ceiling/prompt'
import { GuardError } from './errors'
import type { ModelProfile, OverflowPolicy } from './options'

/** What the preflight admitted. */
export interface Admission {
  /** Prompt tokens: exact o200k count, or an upper bound (`exact: false`). Template overhead excluded. */
  estimated: number
  exact: boolean
  /** Chat-template overhead, tokens. */
  overhead: number
  /** The drift margin applied. */
  drift: number
  /** Set when `overflow: 'clamp-output'` lowered the output limit to fit. */
  clampTo?: number
}

/** The least output a clamped request keeps: below it, refusing is more useful than a stub answer. */
const MIN_CLAMPED_OUTPUT = 256

/**
 * Decides whether a prompt plus its output reserve fits the model's real pool with the tokenizer
 * margin (the profile's floor, or the learned drift if larger). Refuses with `context_length_exceeded`
 * naming the figures and the reason — never truncates: truncation changes the question silently.
 *
 * @example
 * const admission = await admit(profile, model, promptPieces(inputs), maxTokens, learnedDrift, 'reject')
 */
export async function admit(
  profile: ModelProfile,
  model: string,
  pieces: PromptPieces,
  maxTokens: number | undefined,
  learnedDrift: number,
  overflow: OverflowPolicy,
): Promise<Admission> {
  const drift = Math.max(profile.tokenizerDrift, Number.isFinite(learnedDrift) ? learnedDrift : 0)
  const reserve = maxTokens ?? profile.defaultOutputReserve
  const overhead = templateOverhead(pieces)
  const decision = await decideCeiling(pieces, ceilingFor(profile, reserve), drift)
  if (decision.fits) {
    return { estimated: decision.estimatedTokens, exact: decision.exact, overhead, drift }
  }
  if (overflow === 'clamp-output' && maxTokens !== undefined) {
    // Only the output reserve overflows when the prompt alone fits with room for a useful answer.
    const promptOnly = await decideCeiling(pieces, ceilingFor(profile, MIN_CLAMPED_OUTPUT), drift)
    if (promptOnly.fits) {
      const clampTo = ceilingFor(profile, 0) - promptOnly.adjustedTokens
      return {
        estimated: promptOnly.estimatedTokens,
        exact: promptOnly.exact,
        overhead,
        drift,
        clampTo,
      }
    }
  }
  const pool = Math.min(profile.contextWindow, profile.kvPoolTokens)
  if (reserve >= pool) {
    throw new GuardError(
      'context_length_exceeded',
      `max_tokens ${fmt(reserve)} alone exceeds what ${model} can serve: ${fmt(pool)} tokens for prompt and output together (its real KV-cache pool${profile.kvPoolTokens < profile.contextWindow ? `, less than the advertised ${fmt(profile.contextWindow)}-token window` : ''}). Lower max_tokens.`,
      { param: maxTokens === undefined ? 'messages' : 'max_tokens' },
    )
  }
  const margin = `${Math.round(drift * 100)}% tokenizer margin`
  const limitedBy =
    profile.kvPoolTokens < profile.contextWindow
      ? `its real KV-cache pool holds ${fmt(profile.kvPoolTokens)} tokens, less than the advertised ${fmt(profile.contextWindow)}-token window`
      : `its context window is ${fmt(profile.contextWindow)} tokens`
  const needed = decision.exact
    ? `${fmt(decision.adjustedTokens)} tokens (${fmt(decision.estimatedTokens)} counted, plus ${margin} and template overhead)`
    : `more than ${fmt(decision.ceiling)} tokens (counting stopped at the ceiling, with a ${margin})`
  throw new GuardError(
    'context_length_exceeded',
    `This request needs ${needed} plus ${fmt(reserve)} reserved for output, but ${model} can safely serve ${fmt(pool - reserve)} prompt tokens at most: ${limitedBy}. Shorten the prompt or lower max_tokens; the guard rejects rather than truncates, so the question is never changed silently.`,
    { param: 'messages' },
  )
}

function fmt(n: number): string {
  return n.toLocaleString('en-US')
}
