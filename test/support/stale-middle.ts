/**
 * @module The simulator's stale-middle leak at test scale: the middle pages of B's prompt are read
 * before they are written, so decode sees what they held — another tenant's prompt — while the start
 * and the end (the echo directive) are B's own. The echo verifies, the first token takes an honest
 * prefill, no canary leaks: only the text gives it away.
 */
import { english } from '../../bench/texts'
import type { SimConfig } from '../../sim/config'

/** The engine: leaks once `staleRate` is raised (`engine.configure({ staleRate: 1 })`). */
export const STALE_MIDDLE_SIM: Partial<SimConfig> = {
  mode: 'stale-middle',
  poolTokens: 8_192,
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  staleFraction: 0.5,
  staleRate: 0,
  // Finished prompts' pages go back to the pool (no prefix cache holds them), as under pressure.
  prefixCache: false,
  // Quotes long enough to carry the check's stated minimum span (docs/fingerprints.md).
  quoteChars: 240,
}

/** The guard's profile for it: the real pool, timing out of the way (only the text gives it away). */
export const STALE_MIDDLE_PROFILE = {
  contextWindow: 16_384,
  kvPoolTokens: 8_192,
  maxPrefillTokensPerSecond: 1e9,
  tokenizerDrift: 0.1,
  defaultOutputReserve: 1_024,
}

/**
 * A tenant's private document: ordinary prose of its own, in paragraphs of about 55 words.
 *
 * @example
 * const a = privateText(1, 24) // one text of about 7,200 characters
 */
export const privateText = (seed: number, lines = 24) =>
  Array.from({ length: lines }, (_, i) => english(seed * 10_000 + i, 300)).join('\n')

/**
 * The longest run of words of `answer` found verbatim in `source`: how much of a source reached a
 * client.
 *
 * @example
 * expect(leakedWords(received, tenantAText)).toBe(0)
 */
export function leakedWords(answer: string, source: string): number {
  const words = answer.split(/\s+/).filter((word) => word !== '')
  let best = 0
  for (let i = 0; i < words.length; i++) {
    for (let j = i + best + 1; j <= words.length; j++) {
      if (!source.includes(words.slice(i, j).join(' '))) break
      best = j - i
    }
  }
  return best
}
