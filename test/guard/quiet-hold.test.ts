import { describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { prng } from '../../sim/random'
import type { GuardError } from '../../src'
import {
  FINGERPRINT_DEFAULTS,
  holdBackUnits,
  minimumSpan,
  quietHoldBackUnits,
} from '../../src/plugins/foreign-content'
import { chatChunk as chunk, drainText, openStream } from '../support/open-stream'
import { chat, sseText } from '../support/prompts'
import { withTenantA } from '../support/tenant-a'

/**
 * The foreign-content hold-back is 9 units while none of the last 29 matched another tenant, 29
 * otherwise (holdBackUnits at the defaults). The short hold must never let out a word of another
 * tenant's span of 30 words or more (minimumSpan), wherever the span begins: right after clean words,
 * after fragments of that tenant's text too short to be evidence, at any split of the events.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'quiet-hold-test-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }
const A_WORDS = english(51, 20_000).split(/\s+/)
const A_TEXT = A_WORDS.join(' ')
const CLEAN_WORDS = english(52, 12_000).split(/\s+/)
const SPAN = minimumSpan(FINGERPRINT_DEFAULTS)
const LONG = holdBackUnits(FINGERPRINT_DEFAULTS)
const QUIET = quietHoldBackUnits(FINGERPRINT_DEFAULTS)

/** `words` as content events of 1 to 4 words each, split as `next` decides. */
function events(words: string[], next: () => number): string[] {
  const out: string[] = []
  for (let at = 0; at < words.length; ) {
    const take = 1 + Math.floor(next() * 4)
    out.push(chunk({ content: `${words.slice(at, at + take).join(' ')} ` }))
    at += take
  }
  return out
}

/** B's streamed request over `events(own)`, the upstream closed at once: the words B received. */
async function asB(
  guard: Awaited<ReturnType<typeof withTenantA>>,
  events: (own: string) => string[],
) {
  const upstream = openStream(events)
  const out = (await guard
    .wrap(upstream, { tenant: 'tenant-b' })
    .run(MODEL, chat('Summarise.', { stream: true }))) as ReadableStream<Uint8Array>
  const reader = out.getReader()
  const firstRead = reader.read()
  upstream.close(['data: [DONE]\n\n'])
  const { text, error } = await drainText(reader, firstRead)
  return {
    received: text
      .trim()
      .split(/\s+/)
      .filter((word) => word !== ''),
    error,
  }
}

describe('the short foreign-content hold', () => {
  it('should let out no word of another tenant’s span, wherever it starts after clean text', async () => {
    const guard = await withTenantA({ secret: SECRET, models }, A_TEXT)
    const next = prng(17)
    for (let trial = 0; trial < 40; trial++) {
      const clean = CLEAN_WORDS.slice(trial * 40, trial * 40 + Math.floor(next() * 40))
      // Odd trials: fragments of A (too short to be evidence, a whole window or less) in between.
      if (trial % 2 === 1) {
        const from = Math.floor(next() * 500)
        clean.splice(
          Math.floor(next() * clean.length),
          0,
          ...A_WORDS.slice(from, from + 4 + Math.floor(next() * 8)),
        )
      }
      const length = SPAN + Math.floor(next() * 6)
      const first = 600 + Math.floor(next() * 1_500)
      const leaked = A_WORDS.slice(first, first + length)
      const after = CLEAN_WORDS.slice(1_800, 1_830)
      const { received, error } = await asB(guard, (own) => [
        chunk({ role: 'assistant', content: `${own}\n` }),
        ...events([...clean, ...leaked, ...after], next),
      ])
      expect((error as GuardError).code, `trial ${trial}`).toBe('response_quarantined')
      // Only clean words before the span left: the received text is a prefix of them.
      expect(received.length, `trial ${trial}`).toBeLessThanOrEqual(clean.length)
      expect(received, `trial ${trial}`).toEqual(clean.slice(0, received.length))
    }
  })

  it('should keep a paused channel’s quote of another tenant until the answer ends, not release it', async () => {
    const guard = await withTenantA({ secret: SECRET, models }, A_TEXT)
    const next = prng(23)
    for (let trial = 0; trial < 12; trial++) {
      // The reasoning ends on a quote of A too short for evidence; the content quotes A at length.
      const first = 400 + trial * 120
      const short = A_WORDS.slice(first, first + 12 + Math.floor(next() * 14))
      const long = A_WORDS.slice(first + 60, first + 60 + SPAN + 5)
      const { received, error } = await asB(guard, (own) => [
        chunk({ role: 'assistant', reasoning_content: `${own} ` }),
        ...CLEAN_WORDS.slice(0, 20).map((word) => chunk({ reasoning_content: `${word} ` })),
        ...short.map((word) => chunk({ reasoning_content: `${word} ` })),
        ...long.map((word) => chunk({ content: `${word} ` })),
      ])
      expect((error as GuardError).code, `trial ${trial}`).toBe('response_quarantined')
      // None of A's words reached the client: only clean reasoning words, if any.
      const clean = CLEAN_WORDS.slice(0, 20)
      expect(received, `trial ${trial}`).toEqual(clean.slice(0, received.length))
    }
  })

  it('should hold 29 words and the episode while any of the last 29 matched another tenant, 9 otherwise', async () => {
    const guard = await withTenantA({ secret: SECRET, models }, A_TEXT)
    /** Content of `words` (one event each) into an open stream: the words the client has so far. */
    const open = async (words: string[]) => {
      const upstream = openStream((own) => [
        chunk({ role: 'assistant', content: `${own}\n` }),
        ...words.map((word) => chunk({ content: `${word} ` })),
      ])
      const out = (await guard
        .wrap(upstream, { tenant: 'tenant-b' })
        .run(MODEL, chat('Summarise.', { stream: true }))) as ReadableStream<Uint8Array>
      let raw = ''
      const reader = out.getReader()
      const decoder = new TextDecoder()
      void (async () => {
        for (let next = await reader.read(); !next.done; next = await reader.read()) {
          raw += decoder.decode(next.value, { stream: true })
        }
      })().catch(() => {})
      const received = async () => {
        // Macrotasks: the guard has read and judged everything sent so far.
        for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 0))
        return sseText(raw).content.trim().split(/\s+/).filter(Boolean)
      }
      return { upstream, received }
    }
    const clean = CLEAN_WORDS.slice(0, LONG + 20)
    // Twelve clean words: all but the last 9 are out.
    const quiet = await open(clean.slice(0, 12))
    expect(await quiet.received()).toEqual(clean.slice(0, 12 - QUIET))
    quiet.upstream.close(['data: [DONE]\n\n'])
    // Twelve of A's words (they match A, no evidence yet): nothing is out.
    const fragment = A_WORDS.slice(900, 912)
    const loud = await open(fragment)
    expect(await loud.received()).toEqual([])
    // Twenty clean words after them: A's words are still among the last 29, so 29 are held, and
    // everything from the first of A's words that matched (the episode's start).
    loud.upstream.send(clean.slice(0, 20).map((word) => chunk({ content: `${word} ` })))
    const early = await loud.received()
    expect(early.length).toBeLessThanOrEqual(12 + 20 - LONG)
    expect(early).toEqual(fragment.slice(0, early.length))
    // 29 more: A's last match is over 29 units back, all but the last 9 are out.
    loud.upstream.send(clean.slice(20).map((word) => chunk({ content: `${word} ` })))
    expect(await loud.received()).toEqual([...fragment, ...clean.slice(0, clean.length - QUIET)])
    loud.upstream.close(['data: [DONE]\n\n'])
    expect(await loud.received()).toEqual([...fragment, ...clean])
  })
})
