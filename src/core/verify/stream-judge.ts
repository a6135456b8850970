/**
 * @module The judge of a streamed answer after its first byte: four checks behind one interface — the
 * owed proof and the content's echo (./proof-check.ts), another tenant's prompt text and stand-ins
 * (the evidence plug-ins' checks, when registered), canaries ours and others' (./canary-check.ts)
 * — and the release stage asks it how far each channel may go and what to cut. A channel leaves up to
 * where every check has judged it; what any check finds ends the stream before the event carrying it.
 */
import { type AttemptContext, ownTokens } from '../attempt/context'
import type { GuardError } from '../errors'
import type { Channel, Frame } from '../format/frames'
import type { AnswerContent, ContentFinding } from '../vocabulary/evidence-plugins'
import type { Edit, StreamJudge, TextSpan } from '../vocabulary/release-judge'
import { CanaryCheck } from './canary-check'
import { redactCanaries } from './canary-evidence'
import type { AnswerView, Check, FrameReading } from './check'
import type { EchoWatch } from './echo-watch'
import { type OwedProof, ProofCheck } from './proof-check'

/** What the verification hands the judge of a released stream. */
export interface JudgeStart {
  /** Ranges of our own canary (the echo and its decoration) to remove, per channel. */
  strips: Partial<Record<Channel, Edit[]>>
  /**
   * Released on an early proof (the canary in the reasoning), before the content began: the content's
   * echo, if it comes, is still looked for at its start, and its span (decoration included) cut.
   */
  contentEcho?: EchoWatch
  /**
   * Released before any proof (`stream.release: 'async'`): the proof is still owed — this attempt's
   * canary in the reasoning, or the content's echo (`contentEcho`, required then).
   */
  proofOwed?: OwedProof
  /**
   * Whether each channel's last words are held until the foreign-content check has judged them (off
   * under `async`: evidence then ends the stream after the words left). @default true
   */
  contentHoldBack?: boolean
  /** The answer's foreign-content watch, fed with the held frames already. */
  content?: AnswerContent
  /** This request's stand-in check: its stand-ins leave as their values, another's ends the stream. */
  standIns?: (view: AnswerView) => Check
  /**
   * Called when another tenant's prompt text appears after release; returns the ending error, or
   * none when it was recorded under observe (the check then steps aside: nothing more held or ended).
   */
  onForeignContent?: (
    found: ContentFinding,
    seen: Record<string, string>,
  ) => Promise<GuardError | undefined>
  /** Called when a foreign canary appears after release; returns the error that ends the stream. */
  onForeign: (
    channel: Channel,
    tenantTag: string | undefined,
    seen: Record<string, string>,
  ) => Promise<GuardError>
}

/** How much of each channel is kept for the quarantine record. */
const SEEN_LIMIT = 65_536

/** The four readings of a frame, made once: a fresh object per frame read was garbage. */
const READINGS: readonly FrameReading[] = [false, true].flatMap((fresh) =>
  [false, true].map((done) => Object.freeze({ fresh, done })),
)

/**
 * The judge of one released stream.
 *
 * @example
 * const release = new Release(held, new AnswerJudge(ctx, { strips: {}, onForeign }))
 */
export class AnswerJudge implements StreamJudge, AnswerView {
  readonly #proof: ProofCheck
  #content: Check | undefined
  readonly #standIns: Check | undefined
  readonly #canaries: CanaryCheck | undefined
  /** Every check, in the order their verdicts go first. */
  #checks: Check[]
  readonly #edits = new Map<Channel, Edit[]>()
  /** The channels read so far, in the order their first text came. */
  readonly #channels: Channel[] = []
  /** A bounded copy of everything seen, for the quarantine record should the stream end. */
  readonly #seen: Partial<Record<Channel, string>> = {}
  latest: Channel | undefined
  finishReason: string | null | undefined

  constructor(ctx: AttemptContext, start: JudgeStart) {
    for (const name in start.strips)
      this.#edits.set(name as Channel, [...start.strips[name as Channel]!])
    const own = ownTokens(ctx)
    // What a check found ends the stream with the error its report returns.
    const onForeign = start.onForeign
    const foreignCanary = async (channel: Channel, tag: string | undefined): Promise<never> => {
      throw await onForeign(channel, tag, this.seen())
    }
    this.#proof = new ProofCheck(this, start.contentEcho, start.proofOwed)
    this.#canaries = own.length > 0 ? new CanaryCheck(ctx, own, this, foreignCanary) : undefined
    const { content, onForeignContent } = start
    this.#content =
      content && onForeignContent
        ? content.check({
            holdBack: start.contentHoldBack !== false,
            barrier: (channel) => this.#canaries?.barrier(channel) ?? 0,
            recall: ctx.recall,
            onEvidence: async (found) => {
              const ending = await onForeignContent(found, this.seen())
              if (ending) throw ending
              this.#stepAside(this.#content)
            },
          })
        : undefined
    this.#standIns = start.standIns?.(this)
    this.#checks = [this.#proof, this.#content, this.#standIns, this.#canaries].filter(
      (check): check is NonNullable<typeof check> => check !== undefined,
    )
  }

  /** A check whose finding was recorded under observe: it neither holds nor ends the stream again. */
  #stepAside(check: Check | undefined): void {
    this.#checks = this.#checks.filter((c) => c !== check)
    if (check === this.#content) this.#content = undefined
  }

  async start(): Promise<void> {
    for (const check of this.#checks) await check.start?.()
  }

  read(frame: Frame, spans: readonly TextSpan[], fresh: boolean): void {
    if (frame.finishReason !== undefined) this.finishReason = frame.finishReason
    const reading = READINGS[(fresh ? 2 : 0) + (frame.done === true ? 1 : 0)]!
    for (const { channel, text, start } of spans) {
      // Spans carry text only, every frame's from the answer's start: a channel's first is at 0.
      if (start === 0) this.#channels.push(channel)
      for (const check of this.#checks) check.read(channel, text, start, reading)
      this.latest = channel
      const prior = this.#seen[channel] ?? ''
      if (prior.length < SEEN_LIMIT) this.#seen[channel] = prior + text
    }
  }

  /** The proof and foreign content first: either ends the stream before the others judge. */
  judge(final: boolean): Promise<void> | undefined {
    const ending = this.#proof.judge(final) ?? this.#content?.judge(final)
    if (ending) return ending
    const standIns = this.#standIns?.judge(final)
    const canaries = this.#canaries?.judge(final)
    if (!standIns) return canaries
    return canaries ? Promise.all([standIns, canaries]).then(() => undefined) : standIns
  }

  releasableTo(channel: Channel): number {
    let to = Number.POSITIVE_INFINITY
    for (const check of this.#checks) to = Math.min(to, check.releasableTo(channel))
    return to
  }

  edits(channel: Channel): readonly Edit[] {
    return this.#edits.get(channel) ?? []
  }

  pause(channels: readonly Channel[]): boolean {
    for (const check of this.#checks) if (check.canPause?.(channels) === false) return false
    for (const check of this.#checks) check.pause?.(channels)
    return true
  }

  released(channel: Channel, to: number): void {
    for (const check of this.#checks) check.released?.(channel, to)
    const edits = this.#edits.get(channel)
    if (edits?.some((edit) => edit.end <= to)) {
      this.#edits.set(
        channel,
        edits.filter((edit) => edit.end > to),
      )
    }
  }

  channels(): Iterable<Channel> {
    return this.#channels
  }

  readonly seen = (): Record<string, string> => redactCanaries(this.#seen)

  seenText(channel: Channel): string {
    return this.#seen[channel] ?? ''
  }

  cut(channel: Channel, edit: Edit, unique = false): void {
    let edits = this.#edits.get(channel)
    if (!edits) {
      edits = []
      this.#edits.set(channel, edits)
    }
    if (unique && edits.some((e) => e.start === edit.start && e.end === edit.end)) return
    edits.push(edit)
  }
}
