import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { guardAi, type VerdictLog } from '../../src'
import { chat, english } from '../support/prompts'

/**
 * The verdict log's size figures mean what their names say: `estimatedTokens` is the model's tokens
 * (never a byte count — 0.2 logged 840,224 "estimated tokens" for a prompt of 374,383), and a prompt
 * admitted by its bytes alone says so with `tokenBound`.
 */
const MODEL = '@cf/zai-org/glm-5.3'

async function logged(tokens: number): Promise<{ log: VerdictLog; reported: number }> {
  const logs: VerdictLog[] = []
  // An honest engine on a virtual clock shared with the guard: prefill takes its simulated time.
  const clock = new VirtualClock()
  const engine = new SimEngine({ mode: 'fixed', prefillTokensPerSecond: 100_000 }, { clock })
  const ai = guardAi(engine.binding('app'), {
    secret: 'verdict-log-test-secret-0123456789abcdef',
    onVerdict: (event) => logs.push(event),
    now: () => clock.now(),
  })
  const out = (await ai.run(MODEL, chat(english(tokens)))) as { usage: { prompt_tokens: number } }
  expect(logs.map((l) => l.action)).toEqual(['release'])
  return { log: logs[0]!, reported: out.usage.prompt_tokens }
}

describe('verdict log figures', { timeout: 60_000 }, () => {
  it('should log a short prompt admitted by its bytes with a token bound, not an estimate', async () => {
    const { log, reported } = await logged(2_000)
    expect(log.estimatedTokens).toBeUndefined()
    // The bytes of English text: about four times its tokens, and never fewer than them.
    expect(log.tokenBound).toBeGreaterThan(reported * 3)
  })

  it('should log a counted prompt’s estimate in the model’s tokens, close above what the engine counted', async () => {
    const { log, reported } = await logged(300_000)
    expect(log.tokenBound).toBeUndefined()
    expect(log.estimatedTokens).toBeGreaterThanOrEqual(reported)
    expect(log.estimatedTokens).toBeLessThan(reported * 1.1)
  })
})
