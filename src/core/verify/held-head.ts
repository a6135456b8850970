/**
 * @module The frames of a stream held until its verdict, kept as the event text they were read from.
 *
 * Why not the frames themselves: a frame with its event, texts and their strings took more than twice
 * its text's bytes (measured over the throughput bench's reasoning events), and a held head lives
 * through every young-generation collection until the verdict, each one copying what is new of it.
 * Under `stream.maxHeldBytes` (8 MiB of event data by default) that more than doubles what a held stream
 * costs an isolate of 128 MiB. An event that came as one `data:` line is its text exactly and
 * is read again, the same way, when it is released; any other keeps its frame.
 */
import { FrameReader } from '../format/frame-reader'
import type { Frame } from '../format/frames'
import type { HeldFrames } from '../vocabulary/release-judge'

/**
 * Events joined into one string at a time. Each event's text is a slice of the chunk text it was cut
 * from (and that text holds parts of its neighbours); joined, the slices and chunk texts die young and
 * the head keeps the characters alone: 217 bytes a held event, where its text kept alone took 267.
 */
const BATCH = 64

/** Up to {@link BATCH} events, end to end. */
interface Batch {
  text: string
  /** Where each event's text ends in `text`. */
  ends: Int32Array
  /** Events without an exact text, by their place in the batch (their text is empty). */
  frames: Frame[] | undefined
}

/**
 * A held head.
 *
 * @example
 * const head = new HeldHead()
 * head.push(frame)
 * const first = head.at(0) // the same frame, read again
 */
export class HeldHead implements HeldFrames {
  readonly #batches: Batch[] = []
  /** The events since the last batch: exact texts, or frames. */
  #open: (string | Frame)[] = []
  readonly #reader: FrameReader

  /** `sharing`: the reader of the upstream these events came from, whose shapes read them again. */
  constructor(sharing?: FrameReader) {
    this.#reader = new FrameReader(sharing)
  }

  get length(): number {
    return this.#batches.length * BATCH + this.#open.length
  }

  /**
   * Holds a frame.
   *
   * @example
   * head.push(frame)
   */
  push(frame: Frame): void {
    // `raw` is one `data:` line and its blank line (./sse.ts): the event is all of it.
    this.#open.push(frame.raw === undefined ? frame : frame.raw)
    if (this.#open.length === BATCH) this.#seal()
  }

  /**
   * The frame of event `index`, as it was read.
   *
   * @example
   * for (let i = 0; i < head.length; i++) release(head.at(i)!)
   */
  at(index: number): Frame | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) return undefined
    const batch = this.#batches[Math.floor(index / BATCH)]
    if (batch === undefined) return this.#read(this.#open[index % BATCH]!)
    const k = index % BATCH
    const frame = batch.frames?.[k]
    if (frame !== undefined) return frame
    return this.#read(batch.text.slice(k === 0 ? 0 : batch.ends[k - 1]!, batch.ends[k]!))
  }

  #read(item: string | Frame): Frame {
    if (typeof item !== 'string') return item
    return this.#reader.read({ data: item.slice(6, item.length - 2) }, item)
  }

  #seal(): void {
    const open = this.#open
    const ends = new Int32Array(open.length)
    const texts: string[] = []
    let length = 0
    let frames: Frame[] | undefined
    for (let i = 0; i < open.length; i++) {
      const item = open[i]!
      if (typeof item === 'string') {
        texts.push(item)
        length += item.length
      } else {
        frames ??= []
        frames[i] = item
      }
      ends[i] = length
    }
    // One flat string (a join builds it whole): it refers to none of the pieces.
    this.#batches.push({ text: texts.join(''), ends, frames })
    this.#open = []
  }
}
