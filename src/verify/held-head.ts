/**
 * @module The frames of a stream held until its verdict, kept as the event text they were read from.
 *
 * Why not the frames themselves: a frame with its event, texts and their strings takes about twice its
 * text (measured: 490 bytes a reasoning event of ~200 characters, the text alone 250), and a held head
 * lives through every young-generation collection until the verdict, so each one copies it again. Under
 * `maxHeldBytes` (8 MiB of event data by default) that is the difference between ~10 and ~20 MiB a
 * stream in an isolate of 128 MiB. An event that came as one `data:` line is its text exactly and is
 * read again, the same way, when it is released; any other keeps its frame.
 */
import { FrameReader } from '../format/frame-reader'
import type { Frame } from '../format/frames'
import type { HeldFrames } from '../release/release-stream'

/**
 * A held head.
 *
 * @example
 * const head = new HeldHead()
 * head.push(frame)
 * const first = head.at(0) // the same frame, read again
 */
export class HeldHead implements HeldFrames {
  /** Per event: its exact text, or the frame where it has none. */
  readonly #items: (string | Frame)[] = []
  readonly #reader = new FrameReader()

  get length(): number {
    return this.#items.length
  }

  /**
   * Holds a frame.
   *
   * @example
   * head.push(frame)
   */
  push(frame: Frame): void {
    // `raw` is one `data:` line and its blank line (./sse.ts): the event is all of it.
    this.#items.push(frame.raw === undefined ? frame : frame.raw)
  }

  /**
   * The frame of event `index`, as it was read.
   *
   * @example
   * for (let i = 0; i < head.length; i++) release(head.at(i)!)
   */
  at(index: number): Frame | undefined {
    const item = this.#items[index]
    if (typeof item !== 'string') return item
    return this.#reader.read({ data: item.slice(6, item.length - 2) }, item)
  }
}
