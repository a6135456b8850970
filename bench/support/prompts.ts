/**
 * @module Deterministic prompts of a given size whose every line names its owner, so a leaked fragment
 * is attributable by content alone (the way the incident's 155 answers were).
 */
import { injectCanary } from '../../src/core/canary'
import { BUILTIN_PROFILES, type EchoWording } from '../../src/core/vocabulary/options'

/** About 17 tokens (o200k and cl100k alike) per line. */
const TOKENS_PER_LINE = 17

/**
 * A document of roughly `tokens` tokens; every line carries `label`.
 *
 * @example
 * ledger('ACCT-A-7', 32_000)
 */
export function ledger(label: string, tokens: number, salt = 0): string {
  const lines: string[] = []
  for (let i = 0; i < Math.ceil(tokens / TOKENS_PER_LINE); i++) {
    lines.push(
      `${label} ledger entry ${i + salt}: the quarterly figure stays private to ${label}.\n`,
    )
  }
  return lines.join('')
}

/**
 * A one-message chat request for the Workers AI binding.
 *
 * @example
 * chat(ledger('X', 1_000), { stream: true })
 */
export function chat(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messages: [{ role: 'user', content: text }], ...extra }
}

/** The incident's model id: its built-in profile is the one the guard ships with. */
export const MODEL = '@cf/zai-org/glm-5.3'

/** The bench's canary key (≥ 32 bytes); never a production secret. */
export const BENCH_SECRET = 'bench-only-canary-secret-0123456789abcdef'

const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz'

/**
 * `inputs` with the same echo directive the guard appends, around a fresh canary-shaped token that no
 * key minted. The bench's direct requests carry it so the simulator reads, tokenizes and caches the
 * same shape of prompt on both paths (a fresh tail every request); only the guard's work differs.
 *
 * @example
 * await engine.binding().run(MODEL, withLookalikeDirective(chat(text)))
 */
export function withLookalikeDirective(
  inputs: Record<string, unknown>,
  wording: EchoWording = 'reply-first',
): Record<string, unknown> {
  let token = 'cnry_'
  const bytes = crypto.getRandomValues(new Uint8Array(24))
  for (const b of bytes) token += BASE32[b & 31]
  return injectCanary(inputs, token, 'text', wording)
}

/**
 * The built-in profile's `maxPrefillTokensPerSecond` for MODEL: a simulator prefilling at this rate is
 * the fastest engine the timing check accepts as honest.
 */
export const PHYSICAL_PREFILL_TOKENS_PER_SECOND =
  BUILTIN_PROFILES[MODEL]?.maxPrefillTokensPerSecond ?? Number.NaN

/**
 * `text` opened by a line naming `round`, so no prefix cache holds any of it and the engine reads it
 * whole (the first page differs, and a page is cached only after every page before it).
 *
 * @example
 * freshPrompt(ledger('X', 32_000), 17)
 */
export function freshPrompt(text: string, round: number | string): string {
  return `Request ${round}: read all of the following.\n${text}`
}
