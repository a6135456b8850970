import { describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { createGuard, GuardError } from '../../src'
import {
  chatChunk as chunk,
  drainText,
  type OpenStream,
  openStream,
  readUntil,
} from '../support/open-stream'
import { chat, sseText } from '../support/prompts'
import { leakedWords } from '../support/stale-middle'
import { withTenantA as withTenantAOf } from '../support/tenant-a'

/**
 * The foreign-content hold-back keeps a channel's last units until a span of 22 of them could be
 * judged (9 while none of the last 21 matched another tenant, 21 otherwise). A whole token of this request's own (its canary, restated by a reasoning model as it
 * starts) is text no other tenant's prompt holds: another tenant's text cannot run across it, so what
 * lies before it leaves once it is read — the first byte of a restating model's stream then waits
 * for the canary, not for 9 more words. Never when anything held matched another tenant's prompt,
 * and never for a look-alike or a piece of the canary.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'own-token-barrier-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }
const PREAMBLE = 'The instruction at the end: begin with '
/** Tenant A's private prompt, and runs of its words. */
const A_TEXT = english(41, 3_000)
const A_WORDS = A_TEXT.split(/\s+/)
const aRun = (from: number, count: number) => A_WORDS.slice(from, from + count).join(' ')

/** A guard shared by tenants A and B, A's prompt already sent. */
const withTenantA = () => withTenantAOf({ secret: SECRET, models }, A_TEXT)

/** B's request through `guard`: everything its client received, and how it ended (thrown or in-stream). */
async function sendB(
  guard: ReturnType<typeof createGuard>,
  upstream: OpenStream,
  more: string[],
): Promise<{ text: string; error?: unknown }> {
  let out: ReadableStream<Uint8Array>
  try {
    out = (await guard
      .wrap(upstream, { tenant: 'tenant-b' })
      .run(MODEL, chat('Summarise.', { stream: true }))) as ReadableStream<Uint8Array>
  } catch (error) {
    return { text: '', error }
  }
  // The first pull releases what the proof allows, before the rest of the answer is read.
  const reader = out.getReader()
  const first = reader.read()
  upstream.close(more)
  return drainText(reader, first)
}

/**
 * Words sent one at a time into `upstream` until the client's pending read gets bytes: how many the
 * guard needed before it could release anything.
 */
async function wordsUntilReleased(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  upstream: OpenStream,
): Promise<{ words: number; got: string }> {
  let got: string | undefined
  void reader.read().then((next) => {
    got = next.done ? '' : new TextDecoder().decode(next.value)
  })
  let words = 0
  for (; got === undefined && words < 40; words++) {
    // A macrotask: the guard has read and judged everything sent so far.
    await new Promise((resolve) => setTimeout(resolve, 0))
    if (got !== undefined) break
    upstream.send([chunk({ reasoning_content: ` x${words}` })])
  }
  return { words, got: got ?? '' }
}

describe('what precedes a token of this request’s own', () => {
  it('should release the words before the restated canary as soon as it is read, stream still open', async () => {
    const guard = createGuard({ secret: SECRET, models })
    // Events of a few tokens, as models send them: released whole, so the words before the canary
    // leave with the event before the one it starts in.
    const upstream = openStream((own) => [
      chunk({ role: 'assistant', reasoning_content: PREAMBLE }),
      chunk({ reasoning_content: `${own}.` }),
      chunk({ reasoning_content: ' Reading the context now.' }),
    ])
    const b = guard.wrap(upstream, { tenant: 'tenant-b' })
    const out = (await b.run(
      MODEL,
      chat('Summarise.', { stream: true }),
    )) as ReadableStream<Uint8Array>
    const reader = out.getReader()
    // Five units follow the canary: without it as a barrier, nothing would leave before 21 did.
    const { words, got } = await wordsUntilReleased(reader, upstream)
    expect(words).toBe(0)
    expect(sseText(got).reasoning).toBe(PREAMBLE)
    upstream.close([chunk({ content: '\nThe answer.' }), 'data: [DONE]\n\n'])
    const rest = await readUntil(reader, (seen) => seen.content.includes('answer.'))
    expect(sseText(got + rest).reasoning).toBe(`${PREAMBLE}. Reading the context now.`)
    expect(got + rest).not.toMatch(/cnry_/i)
  })

  it('should not take a look-alike or a piece of the canary for one: the words before them wait', async () => {
    for (const fake of [
      (_own: string) => 'cnry_0123456789abcdefghjkmnpq',
      (own: string) => own.slice(0, 20),
    ]) {
      const guard = createGuard({ secret: SECRET, models })
      const upstream = openStream((own) => [
        // The proof first, so the stream is released; what follows it is held as usual.
        chunk({ role: 'assistant', reasoning_content: `${own} w1 w2 ` }),
        chunk({ reasoning_content: `${fake(own)} w3` }),
      ])
      const b = guard.wrap(upstream, { tenant: 'tenant-b' })
      const out = (await b.run(
        MODEL,
        chat('Summarise.', { stream: true }),
      )) as ReadableStream<Uint8Array>
      // Taken for a barrier, it would release w1 and w2 at once; as it is, w1 waits until the nine
      // units after it are complete (the hold while nothing matched: four are, the fifth is open).
      const { words, got } = await wordsUntilReleased(out.getReader(), upstream)
      expect(words).toBeGreaterThanOrEqual(5)
      expect(sseText(got).reasoning.trim().startsWith('w1')).toBe(true)
      upstream.close(['data: [DONE]\n\n'])
    }
  })

  it('should withhold another tenant’s text quoted before the restated canary, with none of it out', async () => {
    const guard = await withTenantA()
    const upstream = openStream((own) => [
      chunk({ role: 'assistant', reasoning_content: `It says ${aRun(40, 30)}. ` }),
      chunk({ reasoning_content: `${PREAMBLE}${own}. Then more.` }),
    ])
    const { text, error } = await sendB(guard, upstream, [
      chunk({ content: '\nDone.' }),
      'data: [DONE]\n\n',
    ])
    expect((error as GuardError).code).toBe('response_quarantined')
    expect(leakedWords(text, A_TEXT)).toBe(0)
  })

  it('should hold the words before the canary when they matched another tenant’s prompt, so what follows can still make the evidence', async () => {
    const guard = await withTenantA()
    // Twelve of A's words (too few for evidence alone), the canary, then thirty more of A's.
    const upstream = openStream((own) => [
      chunk({ role: 'assistant', reasoning_content: `${aRun(100, 12)} ` }),
      chunk({ reasoning_content: `${own} ` }),
    ])
    const { text, error } = await sendB(guard, upstream, [
      chunk({ reasoning_content: `${aRun(112, 30)} ` }),
      chunk({ content: '\nDone.' }),
      'data: [DONE]\n\n',
    ])
    expect(error).toBeInstanceOf(GuardError)
    expect((error as GuardError).code).toBe('response_quarantined')
    expect(leakedWords(text, A_TEXT)).toBe(0)
  })
})
