/**
 * @module The proof check of a streamed answer released before its content's echo was read: after an
 * early proof (this attempt's canary in the reasoning) the content is held until its echo is found or
 * known to be absent, and the echo's span (decoration included) is cut; under `async` the proof itself
 * is still owed, and a content without it, or an answer that ends without it, ends the stream.
 */
import { cutOff } from '../canary'
import type { GuardError } from '../errors'
import type { Channel } from '../format/frames'
import type { AnswerView, Check, FrameReading } from './check'
import type { EchoWatch } from './echo-watch'

/** A proof still owed by a stream released before it (`stream.release: 'async'`). */
export interface OwedProof {
  /** Reads the reasoning for this attempt's canary (text proofs only; see `EchoWatch.early`). */
  reasoning: EchoWatch
  /** The error that ends the stream; none: recorded under observe, and the stream goes on. */
  onFailed: (
    outcome: 'missing' | 'cut-off',
    seen: Record<string, string>,
  ) => Promise<GuardError | undefined>
}

/**
 * The proof check.
 *
 * @example
 * const check = new ProofCheck(view, contentEcho, owed)
 */
export class ProofCheck implements Check {
  readonly #view: AnswerView
  readonly #echo: EchoWatch | undefined
  #owed: OwedProof | undefined
  /** The content from its start, while its echo is looked for. */
  #content = ''
  /** Where the content has left up to (the echo is looked for at its start only). */
  #contentBase = 0

  constructor(view: AnswerView, echo: EchoWatch | undefined, owed: OwedProof | undefined) {
    this.#view = view
    this.#echo = echo
    this.#owed = owed
  }

  read(name: Channel, text: string, _at: number, { done }: FrameReading): void {
    if (name === 'content') {
      if (!this.#watching()) return
      this.#content += text
      this.#observe(done)
    } else if (name === 'reasoning') this.#owed?.reasoning.readReasoning(text)
  }

  /** Whether the content's echo is still looked for. */
  #watching(): boolean {
    return this.#echo !== undefined && !this.#echo.settled && this.#contentBase === 0
  }

  /** While the content's echo is still open, the content is held; once it is found, it is cut. */
  #observe(final: boolean): void {
    const echo = this.#echo!
    echo.observe(this.#content, final)
    if (echo.settled) this.#content = ''
    if (echo.span && echo.span.end > echo.span.start) this.#view.cut('content', { ...echo.span })
  }

  judge(final: boolean): Promise<void> | undefined {
    if (final && this.#watching()) this.#observe(true)
    const owed = this.#owed
    if (!owed) return undefined
    // Paid as before release: this canary restated in the reasoning, or the content's echo.
    const echo = this.#echo
    if (owed.reasoning.early || echo?.span) {
      this.#owed = undefined
      return undefined
    }
    if (!final && !echo?.settled) return undefined
    this.#owed = undefined
    const content = this.#view.seenText('content')
    const outcome = final && cutOff(this.#view.finishReason, content) ? 'cut-off' : 'missing'
    return owed.onFailed(outcome, this.#view.seen()).then((error) => {
      if (error) throw error
    })
  }

  releasableTo(name: Channel): number {
    // While the echo is open, where the next queued content starts: what `released` moves it to
    // lets none of that content go, so the release may ask once per batch.
    const open = name === 'content' && this.#echo !== undefined && !this.#echo.settled
    return open ? this.#contentBase : Number.POSITIVE_INFINITY
  }

  released(name: Channel, to: number): void {
    if (name === 'content') this.#contentBase = to
  }
}
