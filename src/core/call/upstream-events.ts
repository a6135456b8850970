/**
 * @module The upstream half of the one pass over a streamed answer: each chunk read once, in order,
 * cut into SSE events and parsed into frames — no stream stage per step, and the stall deadlines kept
 * with one timer per deadline rather than one per chunk.
 */
import { GuardError } from '../errors'
import { FrameReader } from '../format/frame-reader'
import type { Frame } from '../format/frames'
import { DEFAULT_MAX_EVENT_BYTES, type SseEvent, SseParser } from '../format/sse'

/** Time limits of one upstream stream, ms. */
interface StallLimits {
  /** From the upstream call until its first byte. */
  firstByteMs: number
  /** Between two chunks once bytes flow. */
  idleMs: number
}

/** The answer of a `next` after the end. */
const NOTHING: Promise<undefined> = Promise.resolve(undefined)

/** A wait is checked this many times per limit: a stall is caught within 1¼ limits of its start. */
const CHECKS_PER_LIMIT = 4

/**
 * An upstream SSE body as batches of frames, one batch per chunk read. A hung upstream becomes a 504
 * `upstream_error` (no first byte within `firstByteMs`, or nothing for `idleMs` while a read waits);
 * malformed bytes throw the parser's error, malformed events a `GuardError('upstream_error')`.
 *
 * Why only waiting reads count: a client that reads slowly is not an upstream that stalls. Why no
 * clock: a wait is timed in ticks of a timer that runs only while a read waits (a quarter of the
 * limit each), so a chunk costs no clock read (as much as the rest of `next`: docs/streaming.md). A
 * wait first seen by a tick counts from that tick — it may have begun up to a tick earlier — so a
 * stall is never caught early, and late by at most a quarter of its limit; a wait that arms the timer
 * itself is timed exactly.
 *
 * @example
 * const upstream = new UpstreamEvents(body, { firstByteMs: 120_000, idleMs: 60_000 })
 * for (let frames = await upstream.next(); frames; frames = await upstream.next()) handle(frames)
 * if (upstream.truncated) throw new Error('cut short')
 */
export class UpstreamEvents {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #parser: SseParser
  /** Reads the events as frames; shares what it learns with other readers of them (see `frames`). */
  readonly frames = new FrameReader()
  readonly #limits: StallLimits
  /** A read waits on the upstream (from the call itself, for the first byte). */
  #waiting = true
  /** Waits so far: the number of the current (or last) one. */
  #wait = 1
  /** The wait the timer is timing, and its ticks so far. */
  #timed = 1
  #ticks = 0
  #seen = false
  #ended = false
  #stopped = false
  #timer: ReturnType<typeof setTimeout> | undefined
  /** The limit the armed timer ticks for. */
  #armedFor = 0
  #failure: GuardError | undefined
  /** The frames of the chunk being read. */
  #batch: Frame[] = []

  constructor(
    body: ReadableStream<Uint8Array>,
    limits: StallLimits,
    maxEventBytes = DEFAULT_MAX_EVENT_BYTES,
  ) {
    this.#reader = body.getReader()
    this.#parser = new SseParser(maxEventBytes)
    this.#limits = limits
    this.#time(limits.firstByteMs)
  }

  /** True once the body ended inside an unfinished event (see `SseParser.truncated`). */
  get truncated(): boolean {
    return this.#parser.truncated
  }

  /** True once the body has ended (or was stopped). */
  get ended(): boolean {
    return this.#ended
  }

  /**
   * The frames completed by the next chunk (often none, or several), or undefined at the end.
   *
   * @example
   * const frames = await upstream.next()
   */
  next(): Promise<Frame[] | undefined> {
    if (this.#ended) return NOTHING
    if (!this.#waiting) {
      this.#waiting = true
      this.#wait++
    }
    // No timer, or one ticking for a longer limit (the first byte's): time this wait from now.
    const limit = this.#limit()
    if (this.#timer === undefined || this.#armedFor > limit) this.#time(limit)
    // A `then`, not an `async` body: a suspended async function copies its frame to the heap, and
    // this runs once per chunk.
    return this.#reader.read().then(this.#onRead, this.#onFailed)
  }

  /** A chunk (or the end) arrived: its frames. */
  readonly #onRead = (
    result: ReadableStreamReadResult<Uint8Array>,
  ): Frame[] | undefined | Promise<never> => {
    this.#waiting = false
    if (this.#failure) throw this.#failure
    if (result.done) {
      this.#stop()
      this.#parser.end()
      return undefined
    }
    this.#seen = true
    const frames: Frame[] = []
    this.#batch = frames
    try {
      this.#parser.push(result.value, this.#onEvent)
    } catch (error) {
      return this.cancel(error).then(() => {
        throw error
      })
    }
    return frames
  }

  /** One event of the chunk being read, as its frame. */
  readonly #onEvent = (event: SseEvent, raw: string | undefined, chunk: Uint8Array | undefined) => {
    this.#batch.push(this.frames.read(event, raw, chunk))
  }

  /** The read itself failed (or was cancelled by the watchdog, whose 504 it then is). */
  readonly #onFailed = (error: unknown): never => {
    this.#stop()
    throw this.#failure ?? error
  }

  /**
   * Stops reading and cancels the upstream (nothing more of this answer will be used).
   *
   * @example
   * await upstream.cancel()
   */
  cancel(reason?: unknown): Promise<void> {
    this.#stop()
    return this.#reader.cancel(reason).catch(() => {})
  }

  #stop(): void {
    this.#ended = true
    if (this.#stopped) return
    this.#stopped = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #limit(): number {
    return this.#seen ? this.#limits.idleMs : this.#limits.firstByteMs
  }

  /** Times the current wait from now: the timer ticks for `limit`. */
  #time(limit: number): void {
    this.#timed = this.#wait
    this.#ticks = 0
    this.#arm(limit)
  }

  #arm(limit: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#armedFor = limit
    this.#timer = setTimeout(() => this.#check(), limit / CHECKS_PER_LIMIT)
  }

  /**
   * A tick: a wait timed for its whole limit ends the stream; a wait not seen before is timed from
   * here. Never re-armed while no read waits, so an abandoned stream keeps no timer alive.
   */
  #check(): void {
    this.#timer = undefined
    if (this.#stopped) return
    // Nobody waits on the upstream: the next read arms the timer again.
    if (!this.#waiting) return
    const limit = this.#limit()
    if (this.#timed !== this.#wait) {
      this.#time(limit)
      return
    }
    this.#ticks++
    if (this.#ticks < CHECKS_PER_LIMIT) {
      this.#arm(limit)
      return
    }
    const what = this.#seen
      ? `sent nothing for ${limit} ms mid-answer`
      : `sent no first byte within ${limit} ms`
    this.#failure = new GuardError(
      'upstream_error',
      `The upstream ${what}; the request was abandoned.`,
      { status: 504 },
    )
    this.#stop()
    // Resolves the waiting read (as done); `next` then throws the failure.
    void this.#reader.cancel(this.#failure).catch(() => {})
  }
}
