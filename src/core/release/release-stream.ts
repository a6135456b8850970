/**
 * @module The release stage of a verified stream: whole upstream events, held back just long enough
 * that the stream's judge (src/core/vocabulary/release-judge.ts) has judged every character in them.
 *
 * Events are released whole and unchanged unless the judge cuts something from them (our own canary,
 * a stand-in restored to its value), so an answer with nothing to cut reaches the client byte for byte
 * as the upstream sent it. An event is held while any channel's text in it lies past where the judge
 * lets that channel go; what the judge finds ends the stream before that event (or anything after it)
 * is released.
 */

import { GuardError } from '../errors'
import type { Usage } from '../format/frames'
import { type Channel, cutEvent, type Frame } from '../format/frames'
import { encodeSseEvent } from '../format/sse'
import type { HeldFrames, StreamJudge, TextSpan } from '../vocabulary/release-judge'
import { applyEdits } from './edits'

/** Held frames released a batch at a time (see `Release.begin`). */
const BEGIN_BATCH = 256

/**
 * What one batch lets out: the client's SSE text, or — one event released as it came, from an
 * upstream chunk that was exactly that event — the chunk itself (its bytes as they came, not encoded
 * again). Empty: nothing may leave yet.
 */
export type Released = string | Uint8Array

interface Held {
  frame: Frame
  /** Where each channel's text of the frame lies: the judge reads these very spans. */
  spans: TextSpan[]
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
  /**
   * Where each channel may be released up to, as the judge answered during this flush: asked once
   * per channel for every frame the flush walks (and a blocked one's pause), again after a pause.
   */
  readonly #reach = new Map<Channel, number>()
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

  /**
   * The frames held while the answer was verified, as far as they may leave now: a piece of text per
   * batch, each its own chunk. Why not one string: a head of 12,000 events joined is megabytes that V8
   * copies flat and that a chunk of its own takes in fresh pages of memory (Node profile of a
   * 24k-token stream: writing the client's chunks 8.9% of its CPU as one string, 2.5% in pieces).
   */
  async begin(): Promise<string[]> {
    const held = this.#held
    await this.#judge.start()
    const out: string[] = []
    // In batches, as if they came so: a head of 15,000 events queued at once kept every one of them
    // (and what the stage makes of it) alive through the young generation's collections.
    let from = 0
    do {
      const to = Math.min(held.length, from + BEGIN_BATCH)
      // Already read by the checks that judged the held head: read again for release.
      for (let i = from; i < to; i++) this.#add(held.at(i)!, false)
      await this.#judge.judge(to === held.length ? this.#sawDone : false)
      const piece = this.#flush(false)
      if (piece !== '') out.push(piece)
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

  /** Queues a frame for the judge and for release, its spans worked out here for both. */
  #add(frame: Frame, fresh: boolean): void {
    if (frame.done) this.#sawDone = true
    if (frame.usage) this.#usage = frame.usage
    const spans: TextSpan[] = []
    for (const key in frame.texts) {
      const channel = key as Channel
      const text = frame.texts[channel]
      if (!text) continue
      const start = this.#lengths.get(channel) ?? 0
      const end = start + text.length
      this.#lengths.set(channel, end)
      spans.push({ channel, text, start, end })
    }
    this.#judge.read(frame, spans, fresh)
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
    this.#reach.clear()
    while (at < queue.length) {
      const next = queue[at]!
      const blocked = this.#blocked(next)
      if (blocked !== undefined && !this.#moveOn(blocked, at)) break
      at++
      out += this.#emit(next)
      for (const span of next.spans) this.#judge.released(span.channel, span.end)
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

  /** The channels whose text in the frame lies past where they may go (none: undefined). */
  #blocked(held: Held): Channel[] | undefined {
    let blocked: Channel[] | undefined
    for (const { channel, end } of held.spans) {
      if (end <= this.#releasableTo(channel)) continue
      if (blocked === undefined) blocked = [channel]
      else blocked.push(channel)
    }
    return blocked
  }

  /** Where the channel may be released up to, asked of the judge once per flush (see `#reach`). */
  #releasableTo(channel: Channel): number {
    let to = this.#reach.get(channel)
    if (to === undefined) {
      to = this.#judge.releasableTo(channel)
      this.#reach.set(channel, to)
    }
    return to
  }

  /**
   * A channel holding text back while the answer has moved on to another (reasoning done, content
   * flowing) would hold every later event until the end of the stream: the judge is asked whether
   * that text may go now (its checks judge a paused channel to its end).
   */
  #moveOn(blocked: readonly Channel[], from: number): boolean {
    if (!this.#othersFrom(blocked, from)) return false
    const paused = this.#judge.pause(blocked)
    // Asked or granted, a pause moves where channels may go (a check may close a piece either way).
    this.#reach.clear()
    return paused
  }

  /** Whether a frame from `from` on carries text of a channel other than the `blocked` ones. */
  #othersFrom(blocked: readonly Channel[], from: number): boolean {
    // One blocked channel (the usual event): compared as it is, not searched for.
    const one = blocked.length === 1 ? blocked[0] : undefined
    const queue = this.#queue
    for (let k = from; k < queue.length; k++) {
      for (const { channel } of queue[k]!.spans) {
        if (one === undefined ? !blocked.includes(channel) : channel !== one) return true
      }
    }
    return false
  }

  /** A released event's text: as it came unless something was cut from it. */
  #emit(held: Held): string {
    // Made only for an event something is cut from: one object per released event was garbage.
    let replaced: Partial<Record<Channel, string>> | undefined
    for (const { channel, text, start } of held.spans) {
      const strips = this.#judge.edits(channel)
      if (strips.length === 0) continue
      const cut = applyEdits(text, start, strips)
      if (cut !== text) {
        replaced ??= {}
        replaced[channel] = cut
      }
    }
    if (replaced === undefined) return held.frame.raw ?? encodeSseEvent(held.frame.event)
    const event = cutEvent(held.frame, replaced)
    // An event the cut left saying nothing is not sent (its spans still advance the channel).
    return event === undefined ? '' : encodeSseEvent(event)
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
