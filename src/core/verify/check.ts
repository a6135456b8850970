/**
 * @module What one check of a released stream is (./stream-judge.ts composes four), and what it sees of
 * the answer: types only, so the checks and their composer do not import each other.
 */
import type { Channel } from '../format/frames'
import type { Edit, StreamJudge } from '../vocabulary/release-judge'

/** How a frame is read: `fresh`: not read while held; `done`: the answer's end. */
export interface FrameReading {
  fresh: boolean
  done: boolean
}

/** One check of a streamed answer. Positions count a channel's characters from the answer's start. */
export interface Check {
  /** Loads what the check needs before it judges (once). */
  start?(): Promise<void>
  /** A channel's next text, at position `at`, in a frame that is {@link FrameReading}. */
  read(channel: Channel, text: string, at: number, frame: FrameReading): void
  /** Judges what was read; a rejected promise ends the stream (see {@link StreamJudge.judge}). */
  judge(final: boolean): Promise<void> | undefined
  /**
   * Where the check lets the channel leave up to; asked once per batch released (see
   * {@link StreamJudge.releasableTo}): `released` must not let more of the queued text go.
   */
  releasableTo(channel: Channel): number
  /** Whether a paused channel's held text may leave as far as this check goes (see `pause`). */
  canPause?(channels: readonly Channel[]): boolean
  /** Every check agreed: the paused channels' held text leaves. */
  pause?(channels: readonly Channel[]): void
  /** The channel's text left up to `to`. */
  released?(channel: Channel, to: number): void
}

/** What a check sees of the answer besides its own state, and where it says what to cut. */
export interface AnswerView {
  /** The channel of the latest text: any other with text pending has paused. */
  readonly latest: Channel | undefined
  /** The upstream's last finish reason. */
  readonly finishReason: string | null | undefined
  /** The channels read so far, in the order their first text came. */
  channels(): Iterable<Channel>
  /** What was seen so far (bounded), made safe to store: for the quarantine record. */
  seen: () => Record<string, string>
  /** A channel's text as seen (bounded), not made safe. */
  seenText(channel: Channel): string
  /** Cuts (or replaces) a span of the channel; `unique`: not when that very span is cut already. */
  cut(channel: Channel, edit: Edit, unique?: boolean): void
}
