/**
 * @module What the release stage of a stream asks of its verification: how far each channel may leave
 * and what to cut from it. Types only: src/core/release/ names them and src/core/verify/ implements them, so the
 * release needs nothing of the checks (canaries, stand-ins, foreign content, the owed proof).
 */
import type { Channel, Frame } from '../format/frames'

/** A span of a channel's text (positions from the answer's start) to cut, or to replace with `value`. */
export interface Edit {
  start: number
  end: number
  value?: string
}

/**
 * One channel's text in a frame and where it lies (positions from the answer's start): worked out
 * once, by the release as it queues the frame, and read by the judge as it came.
 */
export interface TextSpan {
  channel: Channel
  /** The text the frame adds to the channel (never empty). */
  text: string
  start: number
  /** `start` plus the text's length. */
  end: number
}

/** Frames read while the answer was verified, in order (an array, or a held head read back). */
export interface HeldFrames {
  readonly length: number
  at(index: number): Frame | undefined
}

/**
 * The judge of one streamed answer: it reads every frame the release queues, and answers, per channel,
 * up to where the text is judged and what of it must not leave as it came. Positions count characters
 * of a channel's text from the start of the answer, held head included.
 *
 * @example
 * judge.read(frame, [{ channel: 'content', text, start, end: start + text.length }], true)
 * await judge.judge(false) // rejects with the error that ends the stream
 * if (end <= judge.releasableTo('content')) send(applyEdits(text, start, judge.edits('content')))
 */
export interface StreamJudge {
  /** Loads what judging needs (keys, the isolate's markers), once, before the first frame is judged. */
  start(): Promise<void>
  /**
   * Reads a frame: its texts as `spans` (in the frame's order; every frame, from the answer's
   * start); `fresh`: not read already while the answer was held.
   */
  read(frame: Frame, spans: readonly TextSpan[], fresh: boolean): void
  /**
   * Judges what was read (`final`: nothing more will come). Rejects with the error that ends the
   * stream; undefined when it judged without waiting for anything (the common path: no promise).
   */
  judge(final: boolean): Promise<void> | undefined
  /**
   * Where the channel may be released up to: every check has judged the text before it. Asked once
   * per channel per batch the release lets out, and again after a `pause`: what `released` reports
   * never lets more of the text still queued go.
   */
  releasableTo(channel: Channel): number
  /** What to cut from the channel (or replace) in what has not left yet. */
  edits(channel: Channel): readonly Edit[]
  /**
   * The answer moved on to other channels while `channels` hold text back: whether that text may leave
   * now (then they are releasable to their end, with whatever must be cut from it cut).
   */
  pause(channels: readonly Channel[]): boolean
  /** The channel's text left up to `to`. */
  released(channel: Channel, to: number): void
}
