import o200k from 'gpt-tokenizer/encoding/o200k_base'
import { beforeAll, describe, expect, it } from 'vitest'
import { GuardError, guardAi } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { english } from '../support/prompts'
import {
  code,
  type Encoder,
  json,
  loadReferenceFamily,
  rng,
  sized,
  udhrText,
} from './ceiling-corpus'

/**
 * The ceiling through `guardAi`, as a client meets it: a prompt just over the real pool in ANY
 * reference tokenizer is refused before it reaches the upstream, in every script; English at 95% of
 * the ceiling (by its largest reference count) is still admitted. A small pool keeps the sizes
 * quick to count.
 */
let encoders: Encoder[] = []
const PLAIN = { disallowedSpecial: new Set<string>() }
const MODEL = 'test/family-model'
const POOL = 6_000
const RESERVE = 256
const CEILING = POOL - RESERVE
const PROFILE = {
  contextWindow: 2 * POOL,
  kvPoolTokens: POOL,
  maxPrefillTokensPerSecond: 1e12,
  defaultOutputReserve: RESERVE,
  tokenizerDrift: 0.03, // the built-in glm-5.3 margin
  echo: 'off' as const,
}

/** The most tokens any tokenizer of the family (o200k included) counts for `text`. */
function largest(text: string): number {
  let most = o200k.countTokens(text, PLAIN)
  for (const encoder of encoders) {
    most = Math.max(most, encoder.encode(text, { add_special_tokens: false }).length)
  }
  return most
}

/** The shortest prefix of `source` (repeated as needed) whose largest family count exceeds `target`. */
function justOver(source: string, target: number): string {
  let hi = source.length
  let text = source
  while (largest(text) <= target) {
    hi *= 2
    text = sized(source, hi)
  }
  let lo = 0
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (largest(sized(source, mid)) > target) hi = mid
    else lo = mid
  }
  return sized(source, hi)
}

function upstream(): AiRunner & { calls: number } {
  const runner = {
    calls: 0,
    run: async () => {
      runner.calls++
      return {
        choices: [
          { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
        ],
      }
    },
  }
  return runner
}

beforeAll(async () => {
  encoders = Object.values(await loadReferenceFamily())
}, 60_000)

describe('the ceiling through guardAi', () => {
  const next = rng(13)
  const SOURCES: [string, () => string][] = [
    ['English', () => udhrText('eng')],
    ['Norwegian', () => udhrText('nob')],
    ['Russian', () => udhrText('rus')],
    ['Arabic', () => udhrText('arb')],
    ['Hindi', () => udhrText('hin')],
    ['Tamil', () => udhrText('tam')],
    ['Georgian', () => udhrText('kat')],
    ['Chinese', () => udhrText('cmn_hans')],
    ['Korean', () => udhrText('kor')],
    ['JSON', () => json(next, 20_000)],
    ['code', () => code(next, 20_000)],
  ]
  for (const [name, source] of SOURCES) {
    it(`should refuse ${name} just over the pool in its largest reference count, before the upstream`, async () => {
      // The text alone already fills the ceiling in at least one reference tokenizer.
      const text = justOver(source(), CEILING)
      const counting = upstream()
      const ai = guardAi(counting, { secret: 'c'.repeat(40), models: { [MODEL]: PROFILE } })
      const error = await ai.run(MODEL, { messages: [{ role: 'user', content: text }] }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(GuardError)
      expect((error as GuardError).code).toBe('context_length_exceeded')
      expect(counting.calls).toBe(0)
    }, 60_000)
  }

  it('should admit English at 95% of the ceiling by its largest reference count', async () => {
    const text = justOver(english(CEILING), Math.floor(CEILING * 0.95))
    expect(largest(text)).toBeLessThanOrEqual(Math.ceil(CEILING * 0.95) + 2)
    const counting = upstream()
    const ai = guardAi(counting, { secret: 'c'.repeat(40), models: { [MODEL]: PROFILE } })
    await ai.run(MODEL, { messages: [{ role: 'user', content: text }] })
    expect(counting.calls).toBe(1)
  }, 60_000)
})
