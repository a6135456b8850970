/**
 * @module What the guard itself adds to a prompt, bounded before the ceiling decides: the ceiling is a
 * claim about what reaches the engine, and the guard's directive and marker reach it too.
 */
import { buildEchoDirective, buildJsonEchoDirective, CANARY_LENGTH } from '../canary'
import { TOKENS_PER_MESSAGE } from '../ceiling/prompt'
import { utf8Length } from '../ceiling/utf8'
import type { ModelProfile } from '../vocabulary/options'
import type { ProofKind } from '../vocabulary/request-facts'

/** Between the prompt's last text and the directive (src/core/canary/inject.ts), and after the marker. */
const SEPARATOR_BYTES = 2

/**
 * An upper bound, in tokens, of what the guard adds to a prompt whose proof is `proof`: the echo
 * directive of the profile's wording (or JSON mode's) with its separator, a new turn's template tokens
 * (the directive opens one when the last turn is not a user text), and the tenant's prefix marker.
 * Counted as UTF-8 bytes: no byte-level BPE spends fewer than one byte a token, so the bound holds
 * for every tokenizer of the family (the directive measures 42–78 tokens in all five: docs/limits.md).
 *
 * @example
 * guardAdditionTokens(BUILTIN_PROFILES['@cf/zai-org/glm-5.3'], 'text') // 101 + 4 + 31 = 136
 */
export function guardAdditionTokens(
  profile: Pick<ModelProfile, 'directive' | 'cacheIsolation'>,
  proof: ProofKind,
): number {
  const canary = 'x'.repeat(CANARY_LENGTH)
  let tokens = 0
  if (proof !== 'none') {
    const directive =
      proof === 'json'
        ? buildJsonEchoDirective(canary)
        : buildEchoDirective(canary, profile.directive)
    tokens += utf8Length(directive) + SEPARATOR_BYTES + TOKENS_PER_MESSAGE
  }
  if (profile.cacheIsolation === 'prefix') tokens += CANARY_LENGTH + SEPARATOR_BYTES
  return tokens
}
