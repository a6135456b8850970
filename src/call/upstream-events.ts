/**
 * @module The upstream half of the one pass over a streamed answer: each chunk read once, in order,
 * cut into SSE events and parsed into frames — no stream stage per step, and the stall deadlines kept
 * with one timer per deadline rather than one per chunk.
 */
import { GuardError } from '../errors'
import { FrameReader } from '../format/frame-reader'
import type { Frame } from '../format/frames'
import { DEFAULT_MAX_EVENT_BYTES, SseParser } from '../format/sse'

/** Time limits of one upstream stream, ms. */
export interface StallLimits {
  /** From the upstream call until its first byte. */
  firstByteMs: number
  /** Between two chunks once bytes flow. */
  idleMs: number
}

/**
 * An upstream SSE body as batches of frames, one batch per chunk read. A hung upstream becomes a 504
 * `upstream_error` (no first byte within `firstByteMs`, or nothing for `idleMs` while a read waits);
 * malformed bytes throw the parser's error, malformed events a `GuardError('upstream_error')`.
 *
 * Why only waiting reads count: a client that reads slowly is not an upstream that stalls, and a
 * deadline checked when its timer fires (and re-armed for the rest) costs nothing per chunk.
 *
 * @example
 * const upstream = new UpstreamEvents(body, { firstByteMs: 120_000, idleMs: 60_000 })
 * for (let frames = await upstream.next(); frames; frames = await upstream.next()) handle(frames)
 * if (upstream.truncated) throw new Error('cut short')
 */
export class UpstreamEvents {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #parser: SseParser
  readonly #frames = new FrameReader()
  readonly #limits: StallLimits
  /** Since when a read has waited on the upstream (the call itself, for the first byte). */
  #waitingSince: number | undefined = Date.now()
  #seen = false
  #ended = false
  #stopped = false
  #timer: ReturnType<typeof setTimeout> | undefined
  /** When the armed timer fires. */
  #due = 0
  #failure: GuardError | undefined

  constructor(
    body: ReadableStream<Uint8Array>,
    limits: StallLimits,
    maxEventBytes = DEFAULT_MAX_EVENT_BYTES,
  ) {
    this.#reader = body.getReader()
    this.#parser = new SseParser(maxEventBytes)
    this.#limits = limits
    this.#arm(limits.firstByteMs)
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
  async next(): Promise<Frame[] | undefined> {
    if (this.#ended) return undefined
    const now = Date.now()
    this.#waitingSince ??= now
    // The deadline of this wait; a timer armed for a later one (the first byte's) is brought forward.
    const due = this.#waitingSince + (this.#seen ? this.#limits.idleMs : this.#limits.firstByteMs)
    if (this.#timer === undefined || this.#due > due) this.#arm(due - now)
    let result: ReadableStreamReadResult<Uint8Array>
    try {
      result = await this.#reader.read()
    } catch (error) {
      this.#stop()
      throw this.#failure ?? error
    }
    this.#waitingSince = undefined
    if (this.#failure) throw this.#failure
    if (result.done) {
      this.#stop()
      this.#parser.end()
      return undefined
    }
    this.#seen = true
    const frames: Frame[] = []
    try {
      this.#parser.push(result.value, (event, raw) => frames.push(this.#frames.read(event, raw)))
    } catch (error) {
      await this.cancel(error)
      throw error
    }
    return frames
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

  #arm(ms: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#due = Date.now() + ms
    this.#timer = setTimeout(() => this.#check(), ms)
  }

  /**
   * The timer fired: a waiting read past its limit ends the stream; otherwise wait the rest. Never
   * re-armed while no read waits, so an abandoned stream keeps no timer alive.
   */
  #check(): void {
    this.#timer = undefined
    if (this.#stopped) return
    const limit = this.#seen ? this.#limits.idleMs : this.#limits.firstByteMs
    const since = this.#waitingSince
    // Nobody waits on the upstream: the next read arms the deadline again.
    if (since === undefined) return
    const waited = Date.now() - since
    if (waited < limit) {
      this.#arm(limit - waited)
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
