/**
 * @module The foreign-content check over one streamed answer: text per channel in, evidence and
 * "release up to here" out.
 *
 * A channel that stops while another flows on (reasoning done, content started) is closed for the
 * check, so its last words — held until enough follows to judge them — are judged and released rather
 * than holding every later event to the end of the stream. Should the channel resume, its new text is
 * judged as a new piece.
 */
import type { ContentWatch, ForeignContent } from '../fingerprint'
import type { Channel } from '../format/frames'
import type { Check } from './check'

interface Piece {
  /** The watch's key for the channel's current piece. */
  key: string
  /** Where that piece starts in the channel's text. */
  base: number
  /** The channel's text length so far. */
  length: number
  closed: boolean
}

/** One answer's foreign-content watch, with channels that may pause. */
export class ContentHold {
  readonly #watch: ContentWatch
  readonly #pieces = new Map<Channel, Piece>()
  #count = 0

  constructor(watch: ContentWatch) {
    this.#watch = watch
  }

  /** The watch itself: what a released, verified answer teaches (see `PrintedPrompt.learn`). */
  get watch(): ContentWatch {
    return this.#watch
  }

  /**
   * Reads a channel's next text.
   *
   * @example
   * hold.push('content', delta)
   */
  push(channel: Channel, text: string): void {
    if (text === '') return
    let piece = this.#pieces.get(channel)
    if (piece === undefined || piece.closed) {
      const base = piece?.length ?? 0
      piece = { key: `${channel}#${this.#count++}`, base, length: base, closed: false }
      this.#pieces.set(channel, piece)
    }
    this.#watch.push(piece.key, text, false)
    piece.length += text.length
  }

  /**
   * Closes a channel's current piece: everything it holds is judged now and may be released. Not
   * while what it holds matched another tenant lately (false: left open, held to the answer's end):
   * a quote the pause cut short may be the start of a leak the answer goes on with in another
   * channel, where its run does not reach — at k = 6 the detection bench's stale pages let 19 words
   * of reasoning out that way before the content's quote made evidence.
   *
   * @example
   * if (hold.pause('reasoning')) releaseReasoningTail() // content has started
   */
  pause(channel: Channel): boolean {
    const piece = this.#pieces.get(channel)
    if (piece === undefined || piece.closed) return true
    const foreign = this.#watch.foreignEnd(piece.key)
    const lately = foreign >= 0 && foreign > this.#watch.longHoldFrom(piece.key)
    if (lately || this.#watch.running(piece.key)) return false
    this.#close(piece)
    return true
  }

  /**
   * The answer ended: every channel is judged to its last word.
   *
   * @example
   * hold.end()
   */
  end(): void {
    for (const piece of this.#pieces.values()) if (!piece.closed) this.#close(piece)
  }

  #close(piece: Piece): void {
    this.#watch.push(piece.key, '', true)
    piece.closed = true
  }

  /**
   * Where the channel's text may be released up to, as far as this check goes. `barrier` is where a
   * token of this request's own starts in the channel (its canary, its prefix marker), already read:
   * no other tenant's prompt holds it, so no other tenant's text runs across it, and every span of
   * the text before it that could be another tenant's has been read whole and judged. What lies
   * before it may leave without waiting for the units held after it — unless anything in the last
   * `holdBackUnits` matched another tenant's prompt at all (then what comes after the barrier may still make that evidence,
   * and the text waits as it would without one).
   *
   * @example
   * const safe = Math.min(canarySafe, hold.safeFrom('reasoning', ownCanaryAt))
   */
  safeFrom(channel: Channel, barrier = 0): number {
    const piece = this.#pieces.get(channel)
    if (piece === undefined) return Number.POSITIVE_INFINITY
    if (piece.closed) return piece.length
    const judged = piece.base + this.#watch.safeFrom(piece.key)
    if (barrier <= judged) return judged
    // A match within the last 21 units (not only within what is held now) may still grow.
    const foreign = this.#watch.foreignEnd(piece.key)
    if (foreign >= 0 && foreign > this.#watch.longHoldFrom(piece.key)) return judged
    if (this.#watch.running(piece.key)) return judged
    return Math.min(barrier, piece.length)
  }

  /**
   * Another tenant's prompt text in what was read, once there is enough of it.
   *
   * @example
   * if (hold.evidence()) quarantine()
   */
  evidence(): ForeignContent | undefined {
    const found = this.#watch.evidence()
    return found ? { ...found, channel: found.channel.replace(/#\d+$/, '') } : undefined
  }
}

/**
 * The foreign-content check as one of a stream's checks: each channel's last words held until they
 * are judged (unless `holdBack` is off: under `async` evidence ends the stream after they left), and
 * evidence ends the stream before the event that completes it.
 *
 * @example
 * const check = new ContentCheck(hold, { holdBack: true, barrier: (c) => 0, onEvidence })
 */
export class ContentCheck implements Check {
  readonly #hold: ContentHold
  readonly #holdBack: boolean
  /** Where a token of this request's own starts in the channel (see `ContentHold.safeFrom`). */
  readonly #barrier: (channel: Channel) => number
  readonly #onEvidence: (found: ForeignContent) => Promise<void>

  constructor(
    hold: ContentHold,
    options: {
      holdBack: boolean
      barrier: (channel: Channel) => number
      onEvidence: (found: ForeignContent) => Promise<void>
    },
  ) {
    this.#hold = hold
    this.#holdBack = options.holdBack
    this.#barrier = options.barrier
    this.#onEvidence = options.onEvidence
  }

  read(name: Channel, text: string, _at: number, fresh: boolean): void {
    // Held text was read while the answer was verified.
    if (fresh) this.#hold.push(name, text)
  }

  judge(final: boolean): Promise<void> | undefined {
    if (final) this.#hold.end()
    const found = this.#hold.evidence()
    return found ? this.#onEvidence(found) : undefined
  }

  releasableTo(name: Channel): number {
    return this.#holdBack
      ? this.#hold.safeFrom(name, this.#barrier(name))
      : Number.POSITIVE_INFINITY
  }

  /**
   * A paused channel's last words are judged now, unless they matched another tenant lately: then they
   * wait for the end (see {@link ContentHold.pause}); evidence made by judging them ends the stream.
   */
  canPause(names: readonly Channel[]): boolean {
    for (const name of names) if (!this.#hold.pause(name)) return false
    return this.#hold.evidence() === undefined
  }
}
