import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import * as full from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import * as lean from '../../src/lean'
import { chat } from '../support/prompts'
import {
  leakedWords,
  privateText,
  STALE_MIDDLE_PROFILE,
  STALE_MIDDLE_SIM,
} from '../support/stale-middle'

/**
 * The lean entry (`workers-ai-guard/lean`): the same surface without the evidence plug-ins. It keeps
 * the core's checks, refuses an option that asks for a check it does not have, and — as its module
 * doc says — does not see a stale middle of another tenant's prompt that carries no canary.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'lean-entry-test-secret-0123456789abcdef'
const AI: AiRunner = { run: async () => ({ response: 'unused' }) }

type Entry = typeof lean

/** Each way in with `options`: what it throws (undefined when it builds). */
function builds(entry: Entry, options: Record<string, unknown>): unknown[] {
  const opts = { secret: SECRET, ...options } as full.GuardOptions
  return [
    () => entry.createGuard(opts),
    () => entry.guardAi(AI, opts),
    () => new Hono().use(entry.aiGuard(opts)),
  ].map((make) => {
    try {
      make()
      return undefined
    } catch (error) {
      return error
    }
  })
}

describe('lean entry: the core without the evidence plug-ins', () => {
  it('should refuse every option that asks for foreign content or secrets, naming the default entry', () => {
    const asks = [
      { content: {} },
      // Turning part of the check off still asks for the rest of it.
      { content: { recall: false } },
      { content: { publicTexts: ['a licence'] } },
      { secrets: { high: 'substitute' } },
      { secrets: { high: 'off' } },
      { secrets: {} },
    ]
    for (const options of asks) {
      for (const error of builds(lean, options)) {
        expect(error, JSON.stringify(options)).toBeInstanceOf(Error)
        const message = (error as Error).message
        expect(message).toMatch(/^option "(content|secrets)" asks for the/)
        expect(message).toContain("import the default entry, 'workers-ai-guard'")
      }
    }
  })

  it('should build with no evidence option, or with foreign content turned off', () => {
    for (const options of [{}, { content: false }, { secrets: undefined }]) {
      expect(builds(lean, options)).toEqual([undefined, undefined, undefined])
    }
  })

  it('should build the default entry with every evidence option the lean one refuses', () => {
    for (const options of [{ content: { recall: false } }, { secrets: { high: 'substitute' } }]) {
      expect(builds(full as Entry, options)).toEqual([undefined, undefined, undefined])
    }
  })

  it("should keep the core's checks: an answer without this request's canary is withheld", async () => {
    const ignoresEcho: AiRunner = { run: async () => ({ response: 'An answer without the code.' }) }
    const guard = lean.createGuard({ secret: SECRET })
    const error = await guard
      .wrap(ignoresEcho, { tenant: 'alice' })
      .run(MODEL, chat('Hello there.'))
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(lean.GuardError)
    expect((error as lean.GuardError).code).toBe('response_quarantined')
  })

  it('should release an honest answer', async () => {
    const engine = new SimEngine({
      mode: 'fixed',
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    })
    const ai = lean.guardAi(engine.binding('app'), { secret: SECRET, tenant: 'alice' })
    const out = (await ai.run(MODEL, chat('Say hello.'))) as {
      choices: { message: { content: string } }[]
    }
    const content = out.choices[0]!.message.content
    expect(content.length).toBeGreaterThan(0)
    expect(content).not.toMatch(lean.CANARY_PATTERN)
  })

  // What the lean entry says it does not catch, side by side with the default entry that does: B's
  // answer carries the stale middle of A's prompt, and no canary.
  for (const [name, entry, withheld] of [
    ['default', full as Entry, true],
    ['lean', lean, false],
  ] as const) {
    it(`should ${withheld ? 'withhold' : 'release'} a stale middle of another tenant's prompt (${name} entry)`, async () => {
      const clock = new VirtualClock()
      const engine = new SimEngine(STALE_MIDDLE_SIM, { clock })
      const guard = entry.createGuard({
        secret: SECRET,
        models: { [MODEL]: STALE_MIDDLE_PROFILE },
        hooks: { onVerdict: () => {}, now: () => clock.now() },
      })
      const send = (tenant: string, text: string) =>
        guard
          .wrap(engine.binding('gateway'), { tenant })
          .run(MODEL, chat(text, { max_tokens: 1_024 }))
      const a = privateText(1, 24)
      await send('tenant-a', a)
      engine.configure({ staleRate: 1 })
      const b = await send('tenant-b', privateText(2, 24)).catch((e: unknown) => e)
      if (withheld) {
        expect((b as full.GuardError).code).toBe('response_quarantined')
        return
      }
      const content = (b as { choices: { message: { content: string } }[] }).choices[0]!.message
        .content
      expect(leakedWords(content, a)).toBeGreaterThanOrEqual(6)
    }, 60_000)
  }
})
