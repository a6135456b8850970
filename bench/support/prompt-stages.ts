/**
 * @module The guard's per-prompt work as the prompt-cpu benchmark times it, shared by the suite and
 * its fresh-process child (bench/fresh-prompt.ts) so both time the same calls.
 */
import { ceilingFor, decideCeiling, type Margins } from '../../src/core/ceiling/ceiling'
import { type PromptPieces, promptPieces } from '../../src/core/ceiling/prompt'
import {
  FINGERPRINT_DEFAULTS,
  fingerprintKey,
  printPrompt,
} from '../../src/plugins/foreign-content'
import { builtInDetectors, findSecrets } from '../../src/plugins/secrets'

/** glm-5.3's pool, a 4k output reserve and the recommended 3% drift: the ceiling suite's profile. */
export const CEILING: number = ceilingFor(
  { contextWindow: 1_048_576, kvPoolTokens: 681_280 },
  4_096,
)
/** The drift margin the ceiling suite recommends. */
export const MARGINS: Margins = () => 0.03

/** One user message of `text`. */
export function piecesOf(text: string): PromptPieces {
  return promptPieces({ messages: [{ role: 'user', content: text }] })
}

const key = fingerprintKey(new Uint8Array(32).fill(7))
const detectors = builtInDetectors()

/** The whole ceiling decision for one user message of `text`. */
export function decide(text: string): ReturnType<typeof decideCeiling> {
  return decideCeiling(piecesOf(text), CEILING, MARGINS)
}

/** The fingerprint print of `text` as one prompt. */
export function print(text: string): ReturnType<typeof printPrompt> {
  return printPrompt(key, [text], FINGERPRINT_DEFAULTS)
}

/** What one prompt costs the isolate: the ceiling decision, the fingerprint print and the secrets scan in turn. */
export async function perPrompt(text: string): Promise<number> {
  await decide(text)
  print(text)
  return findSecrets(text, detectors).length
}

/** The stages a fresh process times (bench/fresh-prompt.ts): each must be the process's first work on the text. */
export const FRESH_STAGES: Record<string, (text: string) => unknown> = {
  decideCeiling: decide,
  'per prompt': perPrompt,
}
