/**
 * @module The token-ceiling decision: does this prompt fit the model's real KV pool, with margins?
 *
 * Policy: a prompt over the ceiling is REJECTED, never truncated. In the incident, the engine's
 * "make it fit" path (a one-token placeholder; `--allow-auto-truncate` in SGLang) is exactly what
 * served other customers' cache pages. Truncation would also answer a different question than the
 * one asked (usually dropping the end, where the actual question is) and return a 200 that hides it.
 * A clear `context_length_exceeded` lets the client shorten the prompt knowingly.
 *
 * Bounds, cheapest first:
 * 1. **Bytes.** o200k_base is a byte-level BPE and every token (special tokens excluded: we count
 *    them as text) decodes to at least one byte, and the tokens' bytes concatenate to the text's
 *    UTF-8. So tokens ≤ UTF-8 bytes. If the byte count already fits, the decision is made without
 *    loading the tokenizer. UTF-8 bytes are at least the UTF-16 length, so a text whose length is
 *    already over the limit is not measured at all.
 * 2. **Count with early exit** at the largest estimate that still fits: exact when it fits; when it
 *    does not, counting stops after about `limit` tokens of text.
 *
 * Other provable upper bounds were examined for mid-size prompts (e.g. 256k tokens of English,
 * ~1.1 MB, where bytes are ~4.5× too pessimistic); none is both sound and worth its cost:
 * - BPE stops only when no adjacent pair of tokens concatenates to a vocabulary entry, so in a
 *   stretch where every adjacent character pair is a token no two single-character tokens touch,
 *   giving k ≤ (2n + 1) / 3. Sound, but o200k lacks 29 of the 676 lowercase ASCII pairs ('bq', 'gk',
 *   …), so applying it needs a pair table per text, and 1.5 bytes/token still leaves a 256k-token
 *   English prompt above the 681,280-token pool: it would still be counted.
 * - Anything finer needs the pre-tokenizer regex, which alone is over half a full count (Node 22:
 *   14 ms of regex vs 25 ms of counting for 1.2 MB of English; the vocabulary lookups after it are
 *   cheap), so no bound between "bytes" and "count" can save more than ~2×.
 * Sampling estimates are not bounds and are not used.
 */
import { countWithinDetailed } from './count'
import { type PromptPieces, templateOverhead } from './prompt'
import { totalUtf8Length } from './utf8'

/** What the ceiling decided and why. */
export interface CeilingDecision {
  /** Whether the prompt plus margins fits the ceiling (false → reject before any upstream call). */
  fits: boolean
  /**
   * The token figure used: the exact count (`count`), the byte upper bound (`bytes`), or, for
   * `early-exit`, how many tokens were counted when counting stopped (a lower bound: more exist).
   */
  estimatedTokens: number
  /** `ceil(estimatedTokens × (1 + drift)) + templateOverhead` — what is compared with the ceiling. */
  adjustedTokens: number
  /** The ceiling compared against (prompt tokens, output reserve already taken off). */
  ceiling: number
  /** How the decision was reached (cheapest first). */
  method: 'bytes' | 'count' | 'early-exit'
  /** Whether `estimatedTokens` is the exact o200k count. */
  exact: boolean
}

/**
 * The prompt-token ceiling for a model: the smaller of its advertised window and its real KV pool
 * (the incident's pool was 681,280 tokens under a 1,048,576-token window), less the output reserve.
 *
 * @example
 * ceilingFor({ contextWindow: 1_048_576, kvPoolTokens: 681_280 }, 4_096) // 677_184
 */
export function ceilingFor(
  profile: { contextWindow: number; kvPoolTokens: number },
  outputReserve: number,
): number {
  return Math.min(profile.contextWindow, profile.kvPoolTokens) - outputReserve
}

/**
 * Estimated tokens after the drift margin: `ceil(estimate × (1 + drift))`. Floating-point
 * multiplication by a fixed factor is monotone, so a larger estimate never gets a smaller figure.
 *
 * @example
 * withDrift(1_000, 0.25) // 1_250
 */
export function withDrift(estimate: number, drift: number): number {
  return Math.ceil(estimate * (1 + drift))
}

/**
 * The largest text estimate E with `withDrift(E, drift) + overhead ≤ ceiling`, or -1 if none.
 *
 * @example
 * maxEstimateWithin(1_257, 0.25, 7) // 1_000
 */
export function maxEstimateWithin(ceiling: number, drift: number, overhead: number): number {
  const budget = ceiling - overhead
  if (budget < 0) return -1
  let estimate = Math.floor(budget / (1 + drift))
  // Correct the division's rounding so the result agrees with withDrift exactly.
  while (estimate >= 0 && withDrift(estimate, drift) > budget) estimate--
  while (withDrift(estimate + 1, drift) <= budget) estimate++
  return estimate
}

function assertArguments(ceiling: number, drift: number): void {
  if (!Number.isFinite(ceiling)) throw new RangeError(`ceiling must be finite, got ${ceiling}`)
  if (!Number.isFinite(drift) || drift < 0) {
    throw new RangeError(`drift must be a finite number ≥ 0, got ${drift}`)
  }
}

/**
 * Decides whether `pieces` fits `ceiling` with the tokenizer `drift` margin, cheapest bound first;
 * the tokenizer is loaded only when bytes cannot decide.
 *
 * @example
 * const d = await decideCeiling(promptPieces(inputs), ceilingFor(profile, reserve), 0.1)
 * if (!d.fits) throw new GuardError('context_length_exceeded', `${d.adjustedTokens} > ${d.ceiling}`)
 */
export async function decideCeiling(
  pieces: PromptPieces,
  ceiling: number,
  drift: number,
): Promise<CeilingDecision> {
  assertArguments(ceiling, drift)
  const overhead = templateOverhead(pieces)
  const limit = maxEstimateWithin(ceiling, drift, overhead)
  const decide = (
    estimatedTokens: number,
    method: CeilingDecision['method'],
    exact: boolean,
  ): CeilingDecision => {
    const adjustedTokens = withDrift(estimatedTokens, drift) + overhead
    return {
      fits: adjustedTokens <= ceiling,
      estimatedTokens,
      adjustedTokens,
      ceiling,
      method,
      exact,
    }
  }

  // Only the fixed overhead would already overflow: no count can change the answer.
  if (limit < 0) return decide(0, 'early-exit', false)
  let units = 0
  for (const text of pieces.texts) units += text.length
  // bytes ≥ UTF-16 units, so a longer text cannot pass the byte bound: skip measuring it.
  if (units <= limit) {
    const bytes = totalUtf8Length(pieces.texts)
    if (bytes <= limit) return decide(bytes, 'bytes', bytes === 0)
  }
  const counted = await countWithinDetailed(pieces.texts, limit)
  if (!counted.within) return decide(counted.tokens, 'early-exit', false)
  return decide(counted.tokens, 'count', counted.exact)
}
