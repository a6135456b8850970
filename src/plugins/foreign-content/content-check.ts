/**
 * @module The foreign-content check over one streamed answer: text per channel in, evidence and
 * "release up to here" out.
 *
 * A channel that stops while another flows on (reasoning done, content started) is closed for the
 * check, so its last words — held until enough follows to judge them — are judged and released rather
 * than holding every later event to the end of the stream. Should the channel resume, its new text is
 * judged as a new piece.
 */

import type { Channel, Check, FrameReading, Recall } from '../../core'
import type { ContentWatch, ForeignContent } from './content-watch'
import { type OpinionHold, secondOpinion } from './second-opinion'

interface Piece {
  /** The watch's key for the channel's current piece. */
  key: string
  channel: Channel
  /** Where that piece starts in the channel's text. */
  base: number
  /** The channel's text length so far. */
  length: number
  closed: boolean
}

/** One answer's foreign-content watch, with channels that may pause. */
export class ContentHold implements OpinionHold {
  readonly #watch: ContentWatch
  readonly #pieces = new Map<Channel, Piece>()
  /** Every piece by its watch key: evidence names the piece, positions are the channel's. */
  readonly #byKey = new Map<string, Piece>()
  /** Each channel's text as read, up to {@link KEEP_TEXT} characters: a second opinion's cue. */
  readonly #texts = new Map<Channel, KeptText>()
  #count = 0
  /** Second opinions asked for this answer (see ./second-opinion.ts). */
  opinions = 0

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
      piece = { key: `${channel}#${this.#count++}`, channel, base, length: base, closed: false }
      this.#pieces.set(channel, piece)
      this.#byKey.set(piece.key, piece)
    }
    this.#watch.push(piece.key, text, false)
    piece.length += text.length
    let kept = this.#texts.get(channel)
    if (kept === undefined) {
      kept = new KeptText()
      this.#texts.set(channel, kept)
    }
    if (kept.length < KEEP_TEXT) kept.add(text)
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
  evidence(headPrints?: number): ForeignContent | undefined {
    const found = this.#watch.evidence(headPrints)
    if (!found) return undefined
    const piece = this.#byKey.get(found.channel)
    const base = piece?.base ?? 0
    return {
      ...found,
      channel: piece?.channel ?? found.channel.replace(/#\d+$/, ''),
      from: base + found.from,
      headEnd: base + found.headEnd,
    }
  }

  /**
   * The text a second opinion continues from for this evidence: up to `chars` characters before its
   * run, then the run's head (its first shingle), with every other match of another tenant's text
   * cut out. Undefined when that text was not kept (an answer past {@link KEEP_TEXT}).
   *
   * @example
   * const cue = hold.cue(found, 600)
   */
  cue(found: ForeignContent, chars: number): { text: string; head: string } | undefined {
    const text = this.#texts.get(found.channel as Channel)?.text()
    if (text === undefined || found.headEnd > text.length) return undefined
    const start = Math.max(0, found.from - chars)
    const cuts: [number, number][] = []
    for (const piece of this.#byKey.values()) {
      if (piece.channel !== found.channel) continue
      for (const m of this.#watch.foreignMatches(piece.key)) {
        const from = piece.base + m.from
        const end = piece.base + m.end
        if (end > start && from < found.from) cuts.push([Math.max(from, start), end])
      }
    }
    cuts.sort((a, b) => a[0] - b[0])
    let before = ''
    let at = start
    for (const [from, end] of cuts) {
      if (from > at) before += text.slice(at, from)
      at = Math.max(at, end)
    }
    if (at < found.from) before += text.slice(at, found.from)
    return { text: before, head: text.slice(found.from, found.headEnd) }
  }

  /**
   * Excuses what the model recalled from a clean cue (see `ContentWatch.excuse`). `cleared`: it went
   * on from the cue's very end — the run's first fingerprint past the head is among what it wrote —
   * and wrote more of the run than that, so the head, which its cue held and it could not write, is
   * its text too and is excused with it; `partial`: it wrote some of the run but not from where the
   * cue stops (a stock phrase the source had pasted: those words are the model's, the rest stands);
   * `none`: nothing of it.
   *
   * @example
   * if (hold.excuse(recalled, found) === 'none') quarantine()
   */
  excuse(prints: ReadonlySet<number>, found: ForeignContent): 'cleared' | 'partial' | 'none' {
    const head = new Set(found.head)
    const rest = found.prints.filter((print) => !head.has(print))
    const recalled = rest.filter((print) => prints.has(print)).length
    if (recalled === 0) return 'none'
    this.#watch.excuse(prints)
    if (!prints.has(rest[0]!) || recalled < Math.min(2, rest.length)) return 'partial'
    this.#watch.excuse(found.head)
    return 'cleared'
  }
}

/** Characters of each channel kept for a second opinion's cue (an answer longer is not probed). */
const KEEP_TEXT = 1 << 20

/** Pieces joined into one string at a time (see {@link KeptText}). */
const JOIN_PIECES = 64

/**
 * A channel's text as read, kept in blocks of {@link JOIN_PIECES} pieces: appended piece by piece
 * (`kept + text`), a long answer was a chain of one small string per event, all alive to its end and
 * copied through every young-generation collection of the stream.
 */
class KeptText {
  readonly #blocks: string[] = []
  readonly #pieces: string[] = []
  length = 0

  add(text: string): void {
    this.#pieces.push(text)
    this.length += text.length
    if (this.#pieces.length >= JOIN_PIECES) {
      this.#blocks.push(this.#pieces.join(''))
      this.#pieces.length = 0
    }
  }

  text(): string {
    return this.#blocks.join('') + this.#pieces.join('')
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
  /** Whom a second opinion is asked of (see ./second-opinion.ts). */
  readonly #ask: { recall: Recall | undefined }

  constructor(
    hold: ContentHold,
    options: {
      holdBack: boolean
      barrier: (channel: Channel) => number
      ask: { recall: Recall | undefined }
      onEvidence: (found: ForeignContent) => Promise<void>
    },
  ) {
    this.#hold = hold
    this.#holdBack = options.holdBack
    this.#barrier = options.barrier
    this.#ask = options.ask
    this.#onEvidence = options.onEvidence
  }

  read(name: Channel, text: string, _at: number, { fresh }: FrameReading): void {
    // Held text was read while the answer was verified.
    if (fresh) this.#hold.push(name, text)
  }

  judge(final: boolean): Promise<void> | undefined {
    if (final) this.#hold.end()
    if (this.#hold.evidence() === undefined) return undefined
    // The run is held (its first unit never left): the stream waits while the model is asked.
    return secondOpinion(this.#ask, this.#hold).then((found) =>
      found ? this.#onEvidence(found) : undefined,
    )
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
