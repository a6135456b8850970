import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { MemoryQuarantineStore } from '../../src'
import { MemoryCalibration } from '../../src/core/calibration/learned'
import type { AiRunner } from '../../src/core/call/upstream'
import { GuardError } from '../../src/core/errors'
import { Guard } from '../../src/core/guard'
import { DEFAULT_PLUGINS } from '../../src/default-plugins'
import { chat, document, english } from '../support/prompts'
import { recordVerdicts } from '../support/verdicts'

/**
 * Tenant isolation: after any sequence of 1,000 requests from one tenant — every script,
 * every size, streams and whole answers, opt-out fields, `max_tokens: 1`, prompts the engine refuses —
 * another tenant's honest traffic gets exactly the verdicts it got before. Honest engine (`fixed`),
 * one guard shared by both tenants (as in the Worker), one virtual clock.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'tenant-isolation-canary-secret-0123456789ab'
const POOL = 65_536
const PROFILE = {
  contextWindow: 131_072,
  kvPoolTokens: POOL,
  maxPrefillTokensPerSecond: 200_000,
  defaultOutputReserve: 256,
}

/** Deterministic PRNG (Park–Miller), so a failure replays exactly. */
function prng(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 48_271) % 2_147_483_647
    return x / 2_147_483_647
  }
}

const SCRIPTS: Record<string, string> = {
  georgian: 'აბგდევზთიკლმნოპჟრსტუფქღყშჩცძწჭხჯჰ',
  cyrillic: 'абвгдежзийклмнопрстуфхцчшщыэюя',
  devanagari: 'कखगघङचछजझञटठडढणतथदधनपफबभमयरलवशषसह',
  han: '的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自后',
  digits: '0123456789',
}

function prose(letters: string, chars: number, random: () => number): string {
  let out = ''
  while (out.length < chars) {
    const word = 2 + Math.floor(random() * 8)
    for (let i = 0; i < word; i++) out += letters[Math.floor(random() * letters.length)]
    out += random() < 0.1 ? '.\n' : ' '
  }
  return out
}

/** Status and code of one call: what a client can tell apart. */
async function outcome(ai: AiRunner, inputs: Record<string, unknown>): Promise<string> {
  try {
    const out = await ai.run(MODEL, inputs)
    if (out instanceof ReadableStream) await new Response(out as ReadableStream<Uint8Array>).text()
    return '200'
  } catch (error) {
    if (error instanceof GuardError) return `${error.status} ${error.code}`
    throw error
  }
}

describe('no tenant moves another tenant’s verdicts', () => {
  it('should leave an honest tenant’s refusals and quarantines unchanged after 1,000 requests of another', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine(
      {
        poolTokens: POOL,
        contextWindow: 131_072,
        prefillTokensPerSecond: 50_000,
        decodeTokensPerSecond: Number.POSITIVE_INFINITY,
        seed: 4,
        mode: 'fixed',
      },
      { clock },
    )
    const verdicts = recordVerdicts()
    const guard = new Guard(
      {
        secret: SECRET,
        models: { [MODEL]: PROFILE },
        hooks: { onVerdict: verdicts.onVerdict, now: () => clock.now() },
        quarantine: { store: new MemoryQuarantineStore() },
        ceiling: { calibration: new MemoryCalibration({ now: () => clock.now() }) },
        timing: { minEvidenceMs: 5 },
      },
      DEFAULT_PLUGINS,
    )
    const victim = guard.runner(engine.binding('victim'), 'victim')
    const attacker = guard.runner(engine.binding('attacker'), 'attacker')
    const random = prng(20_261_130)
    const honest: Record<string, unknown>[] = [
      // English prose near the ceiling: the figure most at risk from a poisoned margin.
      chat(`VICTIM ${english(Math.floor(POOL * 0.85))}`),
      chat(document('VICTIM', 20_000), { stream: true }),
      chat(document('VICTIM', 6_000), { response_format: { type: 'json_object' } }),
      chat(prose(SCRIPTS.georgian!, 30_000, prng(1)), { stream: true }),
      chat(prose(SCRIPTS.cyrillic!, 60_000, prng(2))),
      chat(`${document('VICTIM', 8_000)}\n${prose(SCRIPTS.han!, 8_000, prng(3))}`),
      chat(document('VICTIM', Math.floor(POOL * 1.2))), // refused before and after
    ]
    // The victim's verdicts as the operator's log shows them, before and after: the same actions.
    const logged = () =>
      verdicts.events.map((v) => `${v.tenant} ${v.action} ${v.reasons.join(',')}`)
    const before: string[] = []
    for (const inputs of honest) before.push(await outcome(victim, inputs))
    const loggedBefore = logged()
    verdicts.clear()
    expect(before[0]).toBe('200')
    expect(before.at(-1)).toBe('400 context_length_exceeded')

    for (let i = 0; i < 1_000; i++) {
      const names = Object.keys(SCRIPTS)
      const script = random() < 0.4 ? 'latin' : names[Math.floor(random() * names.length)]!
      const big = random() < 0.04
      const chars = Math.floor((big ? 40_000 : 400) + random() * (big ? 80_000 : 8_000))
      const text =
        script === 'latin'
          ? document('ATTACKER', Math.floor(chars / 4.5))
          : prose(SCRIPTS[script]!, chars, random)
      const extra: Record<string, unknown> = { stream: random() < 0.5 }
      const roll = random()
      if (roll < 0.1) extra.max_tokens = 1
      else if (roll < 0.2) extra.guided_json = null
      else if (roll < 0.3) extra.response_format = { type: 'json_object' }
      else if (roll < 0.35) extra.tools = [{ type: 'function', function: { name: 'f' } }]
      await outcome(attacker, chat(text, extra))
    }
    expect(verdicts.events.filter((v) => v.tenant !== 'attacker')).toEqual([])
    verdicts.clear()

    const after: string[] = []
    for (const inputs of honest) after.push(await outcome(victim, inputs))
    expect(after).toEqual(before)
    expect(logged()).toEqual(loggedBefore)
  }, 300_000)
})
