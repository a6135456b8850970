import { beforeAll, describe, expect, it } from 'vitest'
import type { AttemptContext } from '../../src/core/attempt/context'
import { UpstreamEvents } from '../../src/core/call/upstream-events'
import { type CanaryKey, importCanaryKey, mintCanary, tenantTag } from '../../src/core/canary'
import { GuardError } from '../../src/core/errors'
import { type Channel, channelEntries, parseFrame } from '../../src/core/format/frames'
import { encodeSseEvent, type SseEvent, sseDecoder } from '../../src/core/format/sse'
import { clientStream } from '../../src/core/release/client-stream'
import { Release } from '../../src/core/release/release-stream'
import { AnswerJudge } from '../../src/core/verify/stream-judge'
import type { StreamJudge, TextSpan } from '../../src/core/vocabulary/release-judge'

/**
 * The one hold-back: the release stage of a verified stream. Whatever the split of the upstream's
 * events, our own canary never reaches the client (whole or in pieces), another request's canary ends
 * the stream before any piece of it leaves, and everything else is released as soon as it cannot be
 * the start of a canary.
 */
const CHANNELS: Channel[] = ['reasoning', 'content', 'tool:0', 'tool:3']

let key: CanaryKey
let own: string
let foreign: string
let globexTag: string

beforeAll(async () => {
  key = await importCanaryKey('release-test-secret-0123456789abcdefghij')
  own = await mintCanary(key, { requestId: 'req-own', tenant: 'acme' })
  foreign = await mintCanary(key, { requestId: 'req-other', tenant: 'globex' })
  globexTag = await tenantTag(key, 'globex')
})

/** A chat chunk carrying `text` on `channel`. */
function event(channel: Channel, text: string): SseEvent {
  const delta: Record<string, unknown> =
    channel === 'reasoning'
      ? { reasoning_content: text }
      : channel === 'content'
        ? { content: text }
        : { tool_calls: [{ index: Number(channel.slice(5)), function: { arguments: text } }] }
  return {
    data: JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta }] }),
  }
}

/** What the client receives: each released event's texts, and how the stream ended. */
async function release(pieces: [Channel, string][], canary: string | null = own) {
  // The release stage reads only the attempt's canary (none: `null`) and the guard's key.
  const ctx = {
    canary: canary ?? undefined,
    request: { tenant: 'acme' },
    services: { key: async () => key },
  } as unknown as AttemptContext
  let foreignSeen: { channel: Channel; tag: string | undefined } | undefined
  // One upstream chunk per event, read as the client reads: the release keeps pace with both.
  const chunks = [...pieces.map(([channel, text]) => event(channel, text)), { data: '[DONE]' }].map(
    (e) => new TextEncoder().encode(encodeSseEvent(e)),
  )
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.shift()
      if (next) controller.enqueue(next)
      else controller.close()
    },
  })
  const upstream = new UpstreamEvents(body, {
    firstByteMs: 10_000,
    idleMs: 10_000,
  })
  const stream = clientStream(
    upstream,
    new Release(
      [],
      new AnswerJudge(ctx, {
        strips: {},
        onForeign: async (channel, tag) => {
          foreignSeen = { channel, tag }
          return new GuardError('response_quarantined', 'withheld')
        },
      }),
    ),
  ).pipeThrough(sseDecoder())
  const released: Partial<Record<Channel, string>> = {}
  const steps: Partial<Record<Channel, string>>[] = []
  const reader = stream.getReader()
  let error: unknown
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      for (const [channel, text] of channelEntries(parseFrame(next.value).texts)) {
        released[channel] = (released[channel] ?? '') + text
      }
      steps.push({ ...released })
    }
  } catch (e) {
    error = e
  }
  return { released, steps, error, foreignSeen }
}

/** Every split of `text` into two pieces, plus one char at a time. */
function splits(text: string): string[][] {
  const out: string[][] = []
  for (let cut = 0; cut <= text.length; cut++) out.push([text.slice(0, cut), text.slice(cut)])
  out.push(Array.from(text))
  return out
}

/** No released text ends in a 5+-character start of `token` (a piece of a canary leaving). */
function noPieceOf(token: string, text: string): boolean {
  for (let n = 5; n <= token.length; n++) if (text.includes(token.slice(0, n))) return false
  return true
}

/** `text` on `channel` in events of `size` characters: no step may release a piece of a canary. */
async function releaseInEvents(channel: Channel, text: string, size: number) {
  const pieces: [Channel, string][] = []
  for (let at = 0; at < text.length; at += size) pieces.push([channel, text.slice(at, at + size)])
  const result = await release(pieces)
  for (const step of result.steps) {
    expect(noPieceOf(own, step[channel] ?? ''), `size ${size}`).toBe(true)
    expect(noPieceOf(foreign, step[channel] ?? ''), `size ${size}`).toBe(true)
  }
  return result
}

describe('the release stage', () => {
  it('should strip our own canary split at every offset, on every channel', async () => {
    const text = `${own}\nHello, ${own.toUpperCase()} world c`
    for (const channel of CHANNELS) {
      for (const pieces of splits(text)) {
        const { released, error } = await release(pieces.map((p) => [channel, p]))
        expect(error).toBeUndefined()
        // The space after a cut canary goes with it: no double space left behind.
        expect(released[channel] ?? '', JSON.stringify(pieces)).toBe('\nHello, world c')
      }
    }
  })

  it('should end the stream at another request’s canary split at every offset, before any piece of it', async () => {
    const text = `Leaked: x${foreign}y, then more.`
    for (const pieces of splits(text)) {
      const { released, error, foreignSeen } = await release(pieces.map((p) => ['content', p]))
      expect(error).toBeInstanceOf(GuardError)
      expect(foreignSeen).toEqual({ channel: 'content', tag: globexTag })
      // At most the text before the canary, and nothing after it.
      expect('Leaked: x'.startsWith(released.content ?? '')).toBe(true)
    }
  })

  it('should never release a piece that could still become a canary, whatever the event sizes', async () => {
    for (const [text, clean] of [
      [`ab${own}cd`, 'abcd'],
      [`ab${foreign}cd`, undefined],
    ] as const) {
      for (let size = 1; size <= 30; size++) {
        const { released, error } = await releaseInEvents('reasoning', text, size)
        if (clean === undefined) expect(error).toBeInstanceOf(GuardError)
        else expect(released.reasoning).toBe(clean)
      }
    }
  })

  it('should catch a canary deep in a long stream, past where the released text is trimmed', async () => {
    // Over 4,096 characters released first: the stage keeps only their last few to scan again.
    const long = 'lorem ipsum dolor sit amet, '.repeat(200)
    for (const [text, clean] of [
      [`${long}ab${own}cd${long}`, `${long}abcd${long}`],
      [`${long}ab${foreign}cd`, undefined],
    ] as const) {
      for (const size of [7, 12, 29, 31]) {
        const { released, error } = await releaseInEvents('content', text, size)
        if (clean === undefined) {
          expect(error).toBeInstanceOf(GuardError)
          expect(`${long}ab`.startsWith(released.content ?? '')).toBe(true)
        } else expect(released.content).toBe(clean)
      }
    }
  })

  it('should still catch a canary whose first letters left as a paused channel’s tail, after a trim', async () => {
    // The reasoning pauses on "cnry" (released once the content flows), 5,000 characters in: only the
    // last released characters are kept, and they must still meet the rest of the canary.
    const long = 'x'.repeat(5_000)
    const { released, error } = await release([
      ['reasoning', `${long}${foreign.slice(0, 4)}`],
      ['content', 'hello '],
      ['content', 'world'],
      ['reasoning', foreign.slice(4)],
      ['content', 'more'],
    ])
    expect(error).toBeInstanceOf(GuardError)
    expect(released.content).toBe('hello world')
    expect(released.reasoning).toBe(`${long}${foreign.slice(0, 4)}`)
  })

  it('should release look-alikes unchanged, and cut the piece of ours a mutated canary holds', async () => {
    const lookalike = `cnry_${'7'.repeat(24)}`
    const mutated = own.slice(0, -1) + (own.endsWith('0') ? '1' : '0')
    const text = `see ${lookalike} and ${mutated}!`
    for (const pieces of splits(text)) {
      const { released, error } = await release(pieces.map((p) => ['tool:1', p]))
      expect(error).toBeUndefined()
      // Its first 28 characters are a piece of our canary: never released.
      expect(released['tool:1']).toBe(`see ${lookalike} and ${mutated.slice(-1)}!`)
    }
  })

  it('should keep channels apart, and cut the pieces of our canary left on each', async () => {
    const { released, error } = await release([
      ['reasoning', own.slice(0, 10)],
      ['content', own.slice(10)],
    ])
    expect(error).toBeUndefined()
    // The rest of our canary on another channel is not a canary there, but a piece of ours: cut too.
    expect(released.content ?? '').toBe('')
    expect(released.reasoning ?? '').toBe('')
  })

  it('should pass text through unscanned only where the echo policy is off (no canary minted)', async () => {
    const off = await release([['content', `a ${foreign} b`]], null)
    expect(off.error).toBeUndefined()
    expect(off.released.content).toBe(`a ${foreign} b`)
    // With a canary (policies require and scan-only), the same text ends the stream.
    expect((await release([['content', `a ${foreign} b`]])).error).toBeInstanceOf(GuardError)
  })
})

describe('the release stage’s bytes', () => {
  /** The chunks the client receives when the upstream sends `chunks` (no canary to cut). */
  async function delivered(chunks: Uint8Array[]): Promise<Uint8Array[]> {
    const ctx = {
      canary: own,
      request: { tenant: 'acme' },
      services: { key: async () => key },
    } as unknown as AttemptContext
    const queue = [...chunks]
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = queue.shift()
        if (next) controller.enqueue(next)
        else controller.close()
      },
    })
    const upstream = new UpstreamEvents(body, { firstByteMs: 10_000, idleMs: 10_000 })
    const release = new Release(
      [],
      new AnswerJudge(ctx, {
        strips: {},
        onForeign: async () => new GuardError('response_quarantined', 'withheld'),
      }),
    )
    const out: Uint8Array[] = []
    const reader = clientStream(upstream, release).getReader()
    for (let next = await reader.read(); !next.done; next = await reader.read())
      out.push(next.value)
    return out
  }

  it('should hand on a chunk that was exactly one untouched event as that very chunk', async () => {
    const chunks = [
      event('content', 'Hello there, '),
      event('content', 'and more words.'),
      { data: '[DONE]' },
    ].map((e) => new TextEncoder().encode(encodeSseEvent(e)))
    const out = await delivered(chunks)
    expect(out).toHaveLength(3)
    for (const [i, chunk] of out.entries()) expect(chunk).toBe(chunks[i])
  })

  it('should send the same bytes, as new chunks, where the upstream split or joined its events', async () => {
    const whole = new TextEncoder().encode(
      [event('content', 'Hello there, '), event('content', 'and é more.'), { data: '[DONE]' }]
        .map(encodeSseEvent)
        .join(''),
    )
    for (const cuts of [[5], [40, 41], [whole.length - 3], [80, 120, 121]]) {
      const points = [0, ...cuts, whole.length]
      const chunks = points.slice(1).map((end, i) => whole.slice(points[i], end))
      const out = await delivered(chunks)
      const joined = new Uint8Array(out.reduce((n, c) => n + c.length, 0))
      let at = 0
      for (const chunk of out) {
        expect(chunks).not.toContain(chunk)
        joined.set(chunk, at)
        at += chunk.length
      }
      expect(joined).toEqual(whole)
    }
  })
})

describe('the release stage’s judge', () => {
  /** A judge letting each channel go up to `reach[channel]`, recording its reads and questions. */
  function recordingJudge(reach: Partial<Record<Channel, number>>, grantPause: boolean) {
    const read: TextSpan[][] = []
    const asked: Channel[] = []
    const paused: Channel[][] = []
    const judge: StreamJudge = {
      start: async () => {},
      read: (_frame, spans) => {
        read.push([...spans])
      },
      judge: () => undefined,
      releasableTo: (channel) => {
        asked.push(channel)
        return reach[channel] ?? Number.POSITIVE_INFINITY
      },
      edits: () => [],
      pause: (channels) => {
        paused.push([...channels])
        return grantPause
      },
      released: () => {},
    }
    return { judge, read, asked, paused }
  }

  const frames = () =>
    [
      event('reasoning', 'ab'),
      event('content', 'cd'),
      event('reasoning', 'e'),
      event('content', 'fgh'),
    ].map((e) => parseFrame(e))

  it('should hand the judge each frame’s spans, each channel’s offsets counted once', async () => {
    const { judge, read } = recordingJudge({}, false)
    const release = new Release([], judge)
    await release.begin()
    await release.take(frames())
    expect(read).toEqual([
      [{ channel: 'reasoning', text: 'ab', start: 0, end: 2 }],
      [{ channel: 'content', text: 'cd', start: 0, end: 2 }],
      [{ channel: 'reasoning', text: 'e', start: 2, end: 3 }],
      [{ channel: 'content', text: 'fgh', start: 2, end: 5 }],
    ])
  })

  it('should ask how far each channel may go once per batch, and again after a pause', async () => {
    const open = recordingJudge({}, false)
    const release = new Release([], open.judge)
    await release.begin()
    const all = frames().map((frame) => encodeSseEvent(frame.event))
    expect(await release.take(frames())).toBe(all.join(''))
    expect(open.asked).toEqual(['reasoning', 'content'])

    // The content held while the reasoning goes on: a pause is asked for once, refused.
    const refused = recordingJudge({ content: 0 }, false)
    const held = new Release([], refused.judge)
    await held.begin()
    expect(await held.take(frames())).toBe(encodeSseEvent(event('reasoning', 'ab')))
    expect(refused.asked).toEqual(['reasoning', 'content'])
    expect(refused.paused).toEqual([['content']])

    // Granted: the judge may let the channels go further, so it is asked again; the last content
    // waits (nothing after it has moved on).
    const granted = recordingJudge({ content: 0 }, true)
    const moved = new Release([], granted.judge)
    await moved.begin()
    expect(await moved.take(frames())).toBe(all.slice(0, 3).join(''))
    expect(granted.paused).toEqual([['content']])
    expect(granted.asked).toEqual(['reasoning', 'content', 'reasoning', 'content'])
  })
  it('should release a long held head in pieces that join to its events, in order', async () => {
    const head = Array.from({ length: 600 }, (_, i) =>
      parseFrame(event(i % 3 === 0 ? 'reasoning' : 'content', `w${i} é `)),
    )
    const pieces = await new Release(head, recordingJudge({}, false).judge).begin()
    // A piece per batch of 256 frames, none empty.
    expect(pieces).toHaveLength(3)
    expect(pieces.join('')).toBe(head.map((frame) => encodeSseEvent(frame.event)).join(''))

    // The content held (a pause refused): only the reasoning before it leaves, and no empty piece.
    expect(await new Release(head, recordingJudge({ content: 0 }, false).judge).begin()).toEqual([
      encodeSseEvent(head[0]!.event),
    ])
  })
})
