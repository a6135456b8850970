import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { UpstreamEvents } from '../../src/core/call/upstream-events'
import { GuardError } from '../../src/core/errors'

/**
 * The stream's stall deadlines, now one timer checked when it fires: a silent upstream still becomes a
 * 504 before its first byte and mid-answer, and a client that reads slowly is not an upstream that stalls.
 * The deadlines run on Vitest's fake timers: with real ones, other work of a busy isolate could delay a
 * deadline's ticks past the upstream's own timer and turn the test into a measure of the machine.
 */
const utf8 = new TextEncoder()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const event = (text: string) => utf8.encode(`data: ${JSON.stringify({ response: text })}\n\n`)

/** An upstream that sends `chunks` after the given delays (ms), then ends. */
function upstream(chunks: [number, Uint8Array][]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = chunks.shift()
      if (!next) return controller.close()
      await sleep(next[0])
      controller.enqueue(next[1])
    },
  })
}

async function failure(read: () => Promise<unknown>): Promise<GuardError> {
  const error = await read().then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(GuardError)
  return error as GuardError
}

/** Advances the fake clock in 5 ms steps until `work` settles; resolves or rejects as it does. */
async function settle<T>(work: Promise<T>): Promise<T> {
  let done = false
  work.then(
    () => {
      done = true
    },
    () => {
      done = true
    },
  )
  for (let ms = 0; !done; ms += 5) {
    if (ms > 60_000) throw new Error('nothing settled within a minute of fake time')
    await vi.advanceTimersByTimeAsync(5)
  }
  return work
}

/** Every content text of `events` until it ends. */
async function readAll(events: UpstreamEvents): Promise<string[]> {
  const texts: string[] = []
  for (let frames = await events.next(); frames; frames = await events.next()) {
    for (const frame of frames) texts.push(frame.texts.content ?? '')
  }
  return texts
}

describe('UpstreamEvents deadlines', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('should end an upstream that sends no first byte in time with a 504', async () => {
    const events = new UpstreamEvents(upstream([[400, event('late')]]), {
      firstByteMs: 60,
      idleMs: 1_000,
    })
    const error = await settle(failure(() => events.next()))
    expect([error.status, error.code]).toEqual([504, 'upstream_error'])
    expect(error.message).toMatch(/no first byte within 60 ms/)
  })

  it('should end an upstream that goes silent mid-answer while a read waits', async () => {
    const events = new UpstreamEvents(
      upstream([
        [0, event('a')],
        [400, event('b')],
      ]),
      {
        firstByteMs: 1_000,
        idleMs: 60,
      },
    )
    expect((await settle(events.next()))?.[0]?.texts.content).toBe('a')
    const error = await settle(failure(() => events.next()))
    expect(error.message).toMatch(/nothing for 60 ms mid-answer/)
  })

  it('should never end a wait shorter than its limit, and catch a stall within 1¼ limits', async () => {
    // Each chunk comes 0.7 limits after the last: waits the timer first sees mid-way must not add up.
    const steady = new UpstreamEvents(
      upstream([
        [0, event('a')],
        [70, event('b')],
        [70, event('c')],
        [70, event('d')],
        [70, event('e')],
      ]),
      { firstByteMs: 1_000, idleMs: 100 },
    )
    expect(await settle(readAll(steady))).toEqual(['a', 'b', 'c', 'd', 'e'])
    const stalled = new UpstreamEvents(
      upstream([
        [0, event('a')],
        [40, event('b')],
        [1_000, event('late')],
      ]),
      { firstByteMs: 1_000, idleMs: 100 },
    )
    await settle(stalled.next())
    await settle(stalled.next())
    const started = Date.now()
    const error = await settle(failure(() => stalled.next()))
    expect(error.message).toMatch(/nothing for 100 ms mid-answer/)
    const took = Date.now() - started
    expect(took).toBeGreaterThanOrEqual(100)
    expect(took).toBeLessThanOrEqual(125 + 5) // a tick late at most, and one step of the clock
  })

  it('should not count the time a slow client takes between reads against the upstream', async () => {
    const events = new UpstreamEvents(
      upstream([
        [0, event('a')],
        [0, event('b')],
        [0, event('c')],
      ]),
      {
        firstByteMs: 1_000,
        idleMs: 50,
      },
    )
    const texts: string[] = []
    const slowReader = async () => {
      for (let frames = await events.next(); frames; frames = await events.next()) {
        for (const frame of frames) texts.push(frame.texts.content ?? '')
        await sleep(150) // three idle limits between reads: the upstream had its bytes ready
      }
    }
    await settle(slowReader())
    expect(texts).toEqual(['a', 'b', 'c'])
    expect(events.truncated).toBe(false)
  })
})

/** An upstream that sends `chunks` at once, then ends, and records its cancellation. */
function recorded(chunks: Uint8Array[]): {
  body: ReadableStream<Uint8Array>
  cancelled: unknown[]
} {
  const cancelled: unknown[] = []
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.shift()
      if (next) controller.enqueue(next)
      else controller.close()
    },
    cancel(reason) {
      cancelled.push(reason)
    },
  })
  return { body, cancelled }
}

describe('UpstreamEvents bytes', () => {
  const limits = { firstByteMs: 1_000, idleMs: 1_000 }

  it('should give each chunk its frames in order, events split anywhere, then the end', async () => {
    const bytes = new Uint8Array([...event('one'), ...event('two'), ...event('three')])
    const { body } = recorded([bytes.subarray(0, 5), bytes.subarray(5, 30), bytes.subarray(30)])
    const events = new UpstreamEvents(body, limits)
    const batches: string[][] = []
    for (let frames = await events.next(); frames; frames = await events.next()) {
      batches.push(frames.map((f) => f.texts.content ?? ''))
    }
    expect(batches.flat()).toEqual(['one', 'two', 'three'])
    expect(batches[0]).toEqual([]) // five bytes complete no event
    expect(await events.next()).toBeUndefined() // and stays ended
  })

  it('should fail on bytes that are not UTF-8 and cancel the upstream, never hand on a frame', async () => {
    const { body, cancelled } = recorded([
      event('fine'),
      new Uint8Array([...utf8.encode('data: {"response":"'), 0xff, ...utf8.encode('"}\n\n')]),
      event('never read'),
    ])
    const events = new UpstreamEvents(body, limits)
    expect((await events.next())?.[0]?.texts.content).toBe('fine')
    await expect(events.next()).rejects.toThrow(/not valid UTF-8/)
    expect(cancelled).toHaveLength(1)
    expect(events.ended).toBe(true)
    expect(await events.next()).toBeUndefined()
  })

  it('should fail on an event over maxEventBytes before buffering it, and cancel the upstream', async () => {
    const { body, cancelled } = recorded([utf8.encode(`data: ${'x'.repeat(5_000)}`)])
    const events = new UpstreamEvents(body, limits, 1_024)
    await expect(events.next()).rejects.toThrow(/exceeds maxEventBytes \(1024 bytes\)/)
    expect(cancelled).toHaveLength(1)
  })
})
