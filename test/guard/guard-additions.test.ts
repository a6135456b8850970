/**
 * The ceiling charges what the guard itself adds to a prompt (its echo directive, the tenant's
 * marker): a prompt that fits only without them is refused before any call, and the same prompt is
 * admitted where the guard adds nothing.
 */
import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { createGuard, GuardError, type ModelProfile } from '../../src'
import { promptPieces } from '../../src/core/ceiling/prompt'
import { guardAdditionTokens } from '../../src/core/plan/guard-additions'
import { admit } from '../../src/core/plan/preflight'
import { chat, counted } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'test-canary-secret-0123456789abcdef-xyz'
const MAX_TOKENS = 256

/** A small pool, so the boundary is found in a few thousand words. */
const SMALL = {
  contextWindow: 8_192,
  kvPoolTokens: 4_096,
  maxPrefillTokensPerSecond: 4_000_000,
}

const ADDING = {
  ...SMALL,
  echo: 'require',
  directive: 'note-first',
  cacheIsolation: 'prefix',
} as const
const NOTHING = { ...SMALL, echo: 'off', directive: 'reply-first', cacheIsolation: 'off' } as const

/** The longest run of words the ceiling admits for `profile` when nothing is added to it. */
async function longestBare(profile: ModelProfile): Promise<string> {
  const fits = async (n: number) => {
    const pieces = promptPieces(chat('word '.repeat(n)))
    return admit({
      profile,
      model: MODEL,
      pieces,
      maxTokens: MAX_TOKENS,
      learned: {},
      overflow: 'reject',
    }).then(
      () => true,
      () => false,
    )
  }
  let lo = 1
  let hi = 4_096
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (await fits(mid)) lo = mid
    else hi = mid - 1
  }
  return 'word '.repeat(lo)
}

function send(profile: Partial<ModelProfile>, text: string) {
  const upstream = counted(
    new SimEngine({ mode: 'fixed', decodeTokensPerSecond: Infinity }).binding('t'),
  )
  const guard = createGuard({ secret: SECRET, models: { [MODEL]: profile } })
  const run = guard
    .wrap(upstream, { tenant: 't' })
    .run(MODEL, chat(text, { max_tokens: MAX_TOKENS }))
  return { upstream, guard, run }
}

describe('the guard’s own additions under the ceiling', () => {
  it('should bound the directive and marker above their size in bytes', () => {
    // note-first's directive and a marker: the bytes of what is injected, plus a turn's template.
    expect(guardAdditionTokens(ADDING, 'text')).toBeGreaterThan(78 + 29)
    expect(guardAdditionTokens(ADDING, 'none')).toBe(31)
    expect(guardAdditionTokens(NOTHING, 'none')).toBe(0)
  })

  it('should refuse, before any call, a prompt that fits only without the guard’s additions', async () => {
    const { guard } = send(ADDING, '')
    const text = await longestBare(guard.profile(MODEL))
    const { upstream, run } = send(ADDING, text)
    const error = await run.catch((e: unknown) => e)
    expect(error).toBeInstanceOf(GuardError)
    expect((error as GuardError).code).toBe('context_length_exceeded')
    expect(upstream.calls).toBe(0)
  })

  it('should admit the same prompt where the guard adds nothing, and a shorter one where it does', async () => {
    const bare = send(NOTHING, '')
    const text = await longestBare(bare.guard.profile(MODEL))
    const plain = send(NOTHING, text)
    await expect(plain.run).resolves.toBeTruthy()
    expect(plain.upstream.calls).toBe(1)
    // Room for the additions (each word is at most a token and a byte more): admitted with them.
    const words = text.length / 5 - guardAdditionTokens(ADDING, 'text')
    const shorter = send(ADDING, 'word '.repeat(words))
    const answer = (await shorter.run) as { choices: { message: { content: string } }[] }
    expect(answer.choices[0]?.message.content).toBeTruthy()
    expect(shorter.upstream.calls).toBe(1)
  })
})
