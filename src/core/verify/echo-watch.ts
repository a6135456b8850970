/**
 * @module Where this request's echo stands in an answer's visible content — the same question for a
 * whole answer (read once, final) and a stream (read as the content grows).
 */
import type { AttemptContext, AttemptRequest } from '../attempt/context'
import { CANARY_LENGTH, cutOff, matchEchoSpan } from '../canary'
import type { EchoOutcome } from './verdict'

/** What the watch needs of its attempt: the echo the prompt asked for, and this attempt's canary. */
type EchoAsked = { request: Pick<AttemptRequest, 'proof'> } & Pick<AttemptContext, 'canary'>

/**
 * Watches the content for the echo the prompt asked for.
 *
 * @example
 * const echo = new EchoWatch(ctx)
 * echo.observe(content, true)
 * const outcome = echo.conclude(content, finishReason, true) // 'echoed' | 'missing' | 'cut-off' | …
 */
export class EchoWatch {
  readonly #ctx: EchoAsked
  #state: EchoOutcome | 'pending'
  /** Where the echo (and its decoration) sits in the content, once it was seen. */
  span: { start: number; end: number } | undefined
  /** The proof came from the reasoning, before the content (see {@link sawInReasoning}). */
  early = false
  /** A streamed reasoning's last characters (see {@link readReasoning}). */
  #reasoningTail = ''

  constructor(ctx: EchoAsked) {
    this.#ctx = ctx
    this.#state =
      ctx.request.proof !== 'none' && ctx.canary !== undefined ? 'pending' : 'not-requested'
  }

  /** Whether the echo is known to be there, known to be missing, or was never asked for. */
  get settled(): boolean {
    return this.#state !== 'pending'
  }

  /** Looks at the content so far (`final`: nothing more will come). */
  observe(content: string, final: boolean): void {
    const { canary } = this.#ctx
    const { proof } = this.#ctx.request
    if (this.#state !== 'pending' || canary === undefined || proof === 'none') return
    const span = matchEchoSpan(proof, content, canary, final)
    if (span.status === 'echoed') {
      this.#state = 'echoed'
      this.span = { start: span.start, end: span.end }
    } else if (span.status === 'missing') this.#state = 'missing'
  }

  /**
   * Reasoning text (new text with enough of what came before to hold a canary split across events):
   * this attempt's canary anywhere in it proves the prompt's end was read as well as an echo does —
   * reasoning models restate their instructions — so a text proof is settled without waiting for the
   * content. Only for text proofs: a JSON echo member must still be found (and removed) in the object.
   */
  sawInReasoning(text: string): void {
    const { canary } = this.#ctx
    const { proof } = this.#ctx.request
    if (this.#state === 'echoed' || this.#state === 'not-requested') return
    if (proof !== 'text' || canary === undefined) return
    if (text.toLowerCase().includes(canary)) {
      this.#state = 'echoed'
      this.early = true
    }
  }

  /**
   * The next piece of a streamed reasoning: {@link sawInReasoning} over it and the end of what came
   * before, so a canary split across pieces is still found.
   *
   * @example
   * for (const delta of reasoningDeltas) echo.readReasoning(delta)
   */
  readReasoning(text: string): void {
    const window = this.#reasoningTail + text
    this.sawInReasoning(window)
    this.#reasoningTail = window.slice(-CANARY_LENGTH)
  }

  /**
   * The outcome once reading stopped: a missing echo in an answer that ended on its output limit
   * before any visible reply is `cut-off` (the client's limit, not a leak).
   */
  conclude(content: string, finishReason: string | null | undefined, ended: boolean): EchoOutcome {
    this.observe(content, true)
    const missing = this.#state === 'pending' || this.#state === 'missing'
    if (missing && ended && cutOff(finishReason, content)) return 'cut-off'
    return this.#state === 'pending' ? 'missing' : this.#state
  }
}
