/**
 * @module The release stage of a verified stream: whole upstream events, held back just long enough
 * that the stream's judge (src/vocabulary/release-judge.ts) has judged every character in them.
 *
 * Events are released whole and unchanged unless the judge cuts something from them (our own canary,
 * a stand-in restored to its value), so an answer with nothing to cut reaches the client byte for byte
 * as the upstream sent it. An event is held while any channel's text in it lies past where the judge
 * lets that channel go; what the judge finds ends the stream before that event (or anything after it)
 * is released.
 */

import { GuardError } from '../errors'
import type { Usage } from '../format/frames'
import { type Channel, type Frame, isBlankEvent, withTexts } from '../format/frames'
import { encodeSseEvent } from '../format/sse'
import type { HeldFrames, StreamJudge } from '../vocabulary/release-judge'
import { applyEdits } from './edits'

/** Held frames released a batch at a time (see `Release.begin`). */
const BEGIN_BATCH = 256

/**
 * What one batch lets out: the client's SSE text, or — one event released as it came, from an
 * upstream chunk that was exactly that event — the chunk itself (its bytes as they came, not encoded
 * again). Empty: nothing may leave yet.
 */
export type Released = string | Uint8Array

/** Where one channel's text of a queued frame lies, in positions from the answer's start. */
interface Span {
  name: Channel
  start: number
  end: number
}

interface Held {
  frame: Frame
  spans: Span[]
}

/**
 * The release stage: frames in (the held ones first), the client's SSE text out, batch by batch. Each
 * call returns what may leave now — possibly nothing — and rejects with the error that ends the stream.
 *
 * @example
 * const release = new Release(held, judge, { onEnd: teach })
 * send(await release.begin())
 * for (let frames = await upstream.next(); frames; frames = await upstream.next()) {
 *   send(await release.take(frames))
 * }
 * send(await release.finish())
 * release.end()
 */
export class Release {
  readonly #held: HeldFrames
  readonly #judge: StreamJudge
  /**
   * Called once the whole answer was released intact (its end seen, nothing found), with the last
   * usage the upstream reported: only such an answer may teach learned state.
   */
  readonly #onEnd: ((usage: Usage | undefined) => void) | undefined
  /** Frames not yet released, from `#head` on (released ones are dropped a batch at a time). */
  readonly #queue: Held[] = []
  #head = 0
  /** Each channel's length so far. */
  readonly #lengths = new Map<Channel, number>()
  #sawDone = false
  #usage: Usage | undefined

  constructor(
    held: HeldFrames,
    judge: StreamJudge,
    hooks: { onEnd?: (usage: Usage | undefined) => void } = {},
  ) {
    this.#held = held
    this.#judge = judge
    this.#onEnd = hooks.onEnd
  }

  /** The frames held while the answer was verified, as far as they may leave now. */
  async begin(): Promise<Released> {
    const held = this.#held
    await this.#judge.start()
    let out = ''
    // In batches, as if they came so: a head of 15,000 events queued at once kept every one of them
    // (and what the stage makes of it) alive through the young generation's collections.
    let from = 0
    do {
      const to = Math.min(held.length, from + BEGIN_BATCH)
      // Already read by the checks that judged the held head: read again for release.
      for (let i = from; i < to; i++) this.#add(held.at(i)!, false)
      await this.#judge.judge(to === held.length ? this.#sawDone : false)
      out += this.#flush(false)
      from = to
    } while (from < held.length)
    return out
  }

  /** The next frames from the upstream, and what may leave now. */
  take(frames: readonly Frame[]): Promise<Released> | Released {
    if (frames.length === 0) return ''
    for (const frame of frames) this.#add(frame, true)
    // Nothing follows [DONE], so nothing can still be completing: judge everything.
    const pending = this.#judge.judge(this.#sawDone)
    return pending === undefined ? this.#flush(true) : pending.then(() => this.#flush(true))
  }

  /** The upstream ended: the rest, judged to its last word (then call {@link end}). */
  async finish(): Promise<Released> {
    await this.#judge.judge(true)
    return this.#flush(true)
  }

  /** Queues a frame for the judge and for release. */
  #add(frame: Frame, fresh: boolean): void {
    if (frame.done) this.#sawDone = true
    if (frame.usage) this.#usage = frame.usage
    this.#judge.read(frame, fresh)
    const spans: Span[] = []
    for (const key in frame.texts) {
      const name = key as Channel
      const text = frame.texts[name]
      if (!text) continue
      const start = this.#lengths.get(name) ?? 0
      this.#lengths.set(name, start + text.length)
      spans.push({ name, start, end: start + text.length })
    }
    this.#queue.push({ frame, spans })
  }

  /** Releases queued frames, in order, as far as the judge lets every channel's text in them go. */
  #flush(whole: true): Released
  #flush(whole: false): string
  #flush(whole: boolean): Released {
    const queue = this.#queue
    const first = this.#head
    let out = ''
    let at = first
    while (at < queue.length) {
      const next = queue[at]!
      if (this.#blocked(next) && !this.#moveOn(next, at)) break
      at++
      out += this.#emit(next)
      for (const span of next.spans) this.#judge.released(span.name, span.end)
    }
    // One event released as it came, from a chunk that was all of it: the chunk goes out as it came.
    const lone = whole && at === first + 1 ? queue[first]!.frame : undefined
    const released = lone?.chunk !== undefined && out === lone.raw ? lone.chunk : out
    if (at === queue.length) {
      queue.length = 0
      this.#head = 0
    } else if (at > 64) {
      queue.splice(0, at)
      this.#head = 0
    } else this.#head = at
    return released
  }

  /** Some text of the frame lies past where its channel may be released up to. */
  #blocked(held: Held): boolean {
    for (const span of held.spans) if (span.end > this.#judge.releasableTo(span.name)) return true
    return false
  }

  /**
   * A channel holding text back while the answer has moved on to another (reasoning done, content
   * flowing) would hold every later event until the end of the stream: the judge is asked whether
   * that text may go now (its checks judge a paused channel to its end).
   */
  #moveOn(held: Held, from: number): boolean {
    if (!this.#othersFrom(held, from)) return false
    const blocked = held.spans.filter((span) => span.end > this.#judge.releasableTo(span.name))
    return this.#judge.pause(blocked.map((span) => span.name))
  }

  /** Whether a frame from `from` on carries text of a channel not blocked in `held` (a blocked one). */
  #othersFrom(held: Held, from: number): boolean {
    const spans = held.spans
    // One span (the usual event): it is the blocked one, so any other channel is another.
    const one = spans.length === 1 ? spans[0]!.name : undefined
    const names =
      one === undefined
        ? spans
            .filter((span) => span.end > this.#judge.releasableTo(span.name))
            .map((span) => span.name)
        : []
    const queue = this.#queue
    for (let k = from; k < queue.length; k++) {
      for (const { name } of queue[k]!.spans) {
        if (one === undefined ? !names.includes(name) : name !== one) return true
      }
    }
    return false
  }

  /** A released event's text: as it came unless something was cut from it. */
  #emit(held: Held): string {
    const replaced: Partial<Record<Channel, string>> = {}
    let changed = false
    for (const { name, start } of held.spans) {
      const strips = this.#judge.edits(name)
      if (strips.length === 0) continue
      const original = held.frame.texts[name] ?? ''
      const cut = applyEdits(original, start, strips)
      if (cut !== original) {
        replaced[name] = cut
        changed = true
      }
    }
    if (!changed) return held.frame.raw ?? encodeSseEvent(held.frame.event)
    const event = withTexts(held.frame, replaced)
    // An event the cut left saying nothing is not sent (its spans still advance the channel).
    return isBlankEvent(event) ? '' : encodeSseEvent(event)
  }

  /**
   * After the last bytes left: a whole answer teaches; one without its end marker throws, never whole.
   *
   * @example
   * send(await release.finish())
   * release.end()
   */
  end(): void {
    if (!this.#sawDone) {
      // Every byte released so far was verified; the client still must not take a cut answer as whole.
      throw new GuardError(
        'upstream_error',
        'The upstream stream ended before it was complete; the answer is truncated.',
      )
    }
    this.#onEnd?.(this.#usage)
  }
}
