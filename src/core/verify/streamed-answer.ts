/**
 * @module Verifies a streamed answer before its first byte is released.
 *
 * Reasoning leaks as much as content does, so nothing is released before the verdict: the stream is
 * read (and held) until the first token has been timed and, where an echo was asked for, the start of
 * the visible reply has shown it or shown that it is missing. Only then does `run()` resolve, so a
 * withheld answer is an ordinary error response, never a 200 that breaks off. After release, the
 * stream's judge (./stream-judge.ts) keeps watching every byte the release stage lets out.
 *
 * A first token that looks too fast is not yet proof when the echo still verifies: another tenant may
 * have sent the same long prefix, which the engine serves from its cache and the guard's per-tenant
 * record cannot foresee. Such a stream is held to its end, where the upstream reports its cached tokens,
 * and judged again with them — the same evidence a whole answer gets.
 */
import {
  type AttemptContext,
  type AttemptOutcome,
  HOLDING_STEP_BYTES,
  type Lesson,
} from '../attempt/context'
import { FirstByte } from '../attempt/first-byte'
import { UpstreamEvents } from '../call/upstream-events'
import { GuardError } from '../errors'
import type { Channel, Frame, Usage } from '../format/frames'
import { cutOffError } from '../quarantine/withhold'
import type { TimingSignal } from '../timing/prefill'
import type { AnswerContent } from '../vocabulary/evidence-plugins'
import type { HeldFrames, StreamJudge } from '../vocabulary/release-judge'
import type { Observe } from '../vocabulary/verdict-types'
import { type Conclusion, conclude } from './conclude'
import { EchoWatch } from './echo-watch'
import { HeldHead } from './held-head'
import { standInEntries } from './stand-in-record'
import { AnswerJudge, type JudgeStart } from './stream-judge'
import { timingEvidence } from './timing-evidence'
import { decideReleased, type EchoOutcome } from './verdict'

/**
 * A stream verified for release: the frames held, the judge of everything after them, the rest of the
 * upstream, and what the release reports back.
 */
export interface VerifiedStream {
  held: HeldFrames
  judge: StreamJudge
  upstream: UpstreamEvents
  /** What the whole answer, left intact, teaches with the upstream's last usage report. */
  lessonAt: (usage: Usage | undefined) => Lesson
  /** Once: `true` as the first byte is handed to the client, `false` if none ever was. */
  onFirstByte: (sent: boolean) => void
}

/**
 * Reads the upstream stream up to its verdict; on release returns what the release stage needs.
 *
 * @example
 * const outcome = await verifyStreamedAnswer(ctx, await upstream.run(model, { ...inputs, stream: true }))
 */
export async function verifyStreamedAnswer(
  ctx: AttemptContext,
  output: unknown,
): Promise<AttemptOutcome<VerifiedStream>> {
  const body = output instanceof Response ? output.body : output
  if (!(body instanceof ReadableStream)) {
    throw new GuardError(
      'upstream_error',
      'The upstream did not return a stream for a streaming request.',
    )
  }
  const { timeouts } = ctx.services.options
  const upstream = new UpstreamEvents(body as ReadableStream<Uint8Array>, {
    firstByteMs: timeouts.firstTokenMs,
    idleMs: timeouts.idleMs,
  })
  const printed = await ctx.content()
  const reading = new HeldStream(ctx, upstream, await printed?.answer())
  await reading.untilVerdict()
  let conclusion: Conclusion
  try {
    conclusion = await reading.conclude()
  } catch (error) {
    // A guard that cannot conclude (its tokenizer or key failing) releases nothing and stops the upstream.
    await reading.cancel()
    throw error
  }
  if (conclusion.verdict.action !== 'release') {
    // Stop the upstream: nothing of this answer will be used.
    await reading.cancel()
    return conclusion.withheld(reading.raw)
  }
  return reading.release(conclusion)
}

/** The head of an upstream stream, read and held until its verdict. */
class HeldStream {
  readonly held: HeldHead
  readonly raw: Partial<Record<Channel, string>> = {}
  readonly #ctx: AttemptContext
  /** Held bytes the host was last told of (see RunnerHooks.holding). */
  #toldHeld = 0
  readonly #upstream: UpstreamEvents
  readonly #echo: EchoWatch
  readonly #content: AnswerContent | undefined
  #heldBytes = 0
  /** The content length the echo watch last looked at (−1: never). */
  #observed = -1
  /** Released before its proof (`stream.release: 'async'`): the release stage collects it. */
  #owed = false
  #ended = false
  #sawDone = false
  #finishReason: string | undefined
  /** The last usage report held, and the first event's format. */
  #usage: Usage | undefined
  #format: Frame['format']
  #firstTokenMs: number | undefined
  #timing: TimingSignal | undefined
  #concluded: EchoOutcome | undefined
  /** Released under observe with a finding (at its verdict or after): it teaches nothing. */
  #wouldBlock = false

  constructor(ctx: AttemptContext, upstream: UpstreamEvents, content: AnswerContent | undefined) {
    this.#ctx = ctx
    this.#upstream = upstream
    this.held = new HeldHead(upstream.frames)
    this.#echo = new EchoWatch(ctx)
    this.#content = content
  }

  /**
   * Reads until the first token is timed and the echo settled (or the stream ends). One async body
   * for every chunk, not one more per chunk: each costs its promise and frame on the heap.
   */
  async untilVerdict(): Promise<void> {
    try {
      while (true) {
        let frames: Frame[] | undefined
        try {
          frames = await this.#upstream.next()
        } catch (error) {
          throw upstreamFailure(error)
        }
        if (frames === undefined) {
          this.#ended = true
          return
        }
        for (const frame of frames) {
          if (this.#hold(frame, frame.event.data.length)) {
            this.#timing = await timingEvidence(this.#ctx, this.#firstTokenMs!, 0)
          }
        }
        if (this.#decidable()) return
      }
    } catch (error) {
      await this.#upstream.cancel(error)
      throw error
    }
  }

  /** Holds a frame; true when it brought the first token (to be timed). */
  #hold(frame: Frame, bytes: number): boolean {
    const { maxHeldBytes, now } = this.#ctx.services.options
    this.held.push(frame)
    this.#heldBytes += bytes
    if (frame.done) this.#sawDone = true
    if (frame.finishReason) this.#finishReason = frame.finishReason
    if (frame.usage?.prompt_tokens !== undefined) this.#usage = frame.usage
    this.#format ??= frame.format
    if (this.#heldBytes > maxHeldBytes) {
      throw new GuardError(
        'upstream_error',
        `The answer grew past ${maxHeldBytes} bytes before it could be verified; it was withheld.`,
      )
    }
    // The host charges what the held answer costs its memory (the Worker's admission), a step at a time.
    if (this.#ctx.holding && this.#heldBytes >= this.#toldHeld + HOLDING_STEP_BYTES) {
      this.#toldHeld = this.#heldBytes
      this.#ctx.holding(this.#heldBytes)
    }
    let hasText = false
    for (const key in frame.texts) {
      const channel = key as Channel
      const text = frame.texts[channel]
      if (!text) continue
      hasText = true
      this.raw[channel] = (this.raw[channel] ?? '') + text
      this.#content?.push(channel, text)
      if (channel === 'reasoning') this.#echo.readReasoning(text)
    }
    // The same content gives the same answer: a reasoning event (most of a held head) asks nothing new.
    const content = this.raw.content ?? ''
    if (content.length !== this.#observed) {
      this.#observed = content.length
      this.#echo.observe(content, false)
    }
    if (!hasText || this.#firstTokenMs !== undefined) return false
    // Reasoning counts: the first token of any kind is when prefill must have finished.
    this.#firstTokenMs = now() - this.#ctx.startedAt
    return true
  }

  /**
   * Timed and settled — unless the first token came too fast: then the upstream's cached-token report
   * at the end decides, so an honest cache hit the guard could not foresee (another tenant's identical
   * prefix) is not withheld, even when it coincides with a slipped echo. Nothing is released meanwhile.
   */
  #decidable(): boolean {
    if (this.#firstTokenMs === undefined || this.#timing?.impossible) return false
    // `async`: the proof is owed by the release stage instead of awaited here.
    return this.#echo.settled || this.#ctx.services.options.streamRelease === 'async'
  }

  /** The verdict on what was read, with the upstream's cache report where the stream ended. */
  async conclude(): Promise<Conclusion> {
    this.#owed = !this.#echo.settled && !this.#ended && this.#decidable()
    const echo = this.#owed
      ? 'not-requested'
      : this.#echo.conclude(this.raw.content ?? '', this.#finishReason, this.#ended)
    this.#concluded = echo
    const usage = this.#endUsage()
    if (this.#timing?.impossible && this.#ended && this.#firstTokenMs !== undefined) {
      const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0
      this.#timing = await timingEvidence(this.#ctx, this.#firstTokenMs, cached)
    }
    const reported = usage?.prompt_tokens
    if (this.#ended) this.#content?.end()
    return conclude(this.#ctx, {
      echo,
      texts: this.raw,
      ...(this.#content ? { watch: this.#content } : {}),
      ...(this.#firstTokenMs !== undefined ? { observedMs: this.#firstTokenMs } : {}),
      ...(this.#timing ? { timing: this.#timing } : {}),
      ...(reported !== undefined ? { reported } : {}),
    })
  }

  #endUsage(): Usage | undefined {
    return this.#ended ? this.#usage : undefined
  }

  cancel(): Promise<void> {
    return this.#upstream.cancel()
  }

  /** The held frames, the rest of the stream and its judge, for the release stage. */
  release(conclusion: Conclusion): AttemptOutcome<VerifiedStream> {
    if (this.#ended && !this.#sawDone) {
      throw new GuardError(
        'upstream_error',
        'The upstream stream ended before it was complete; nothing was released.',
      )
    }
    const ctx = this.#ctx
    const { verdict, figures } = conclusion
    // After an early proof the content's echo is still cut wherever it shows: perhaps already held.
    const contentEcho = this.#echo.early || this.#owed ? this.#contentEcho() : undefined
    const span = contentEcho ? contentEcho.span : this.#echo.span
    const { now } = ctx.services.options
    const firstByte = new FirstByte()
    // A stream ended before its first byte: the release's log line goes first, then the quarantine's.
    const withhold = (outcome: AttemptOutcome<unknown>) => {
      firstByte.settle(undefined)
      return ctx.services.withhold(ctx, outcome)
    }
    // A judgement found after the first byte: withheld, or under observe recorded and let go on.
    const judged = async (outcome: AttemptOutcome<unknown>) => {
      if (!outcome.verdict.observed) return withhold(outcome)
      this.#wouldBlock = true
      await ctx.services.observe(ctx, outcome)
      return undefined
    }
    if (verdict.observed) this.#wouldBlock = true
    // Content already observed at the verdict is recorded: its check has nothing left to say.
    const content =
      verdict.observed && verdict.reasons.includes('foreign_content') ? undefined : this.#content
    const judge = new AnswerJudge(ctx, {
      strips: span && span.end > span.start ? { content: [span] } : {},
      ...(contentEcho ? { contentEcho } : {}),
      ...(this.#owed ? { proofOwed: this.#proofOwed(figures, judged) } : {}),
      contentHoldBack: ctx.services.options.streamRelease !== 'async',
      ...(content ? { content } : {}),
      ...this.#streamSecrets(figures, withhold),
      ...midStreamLeaks(figures, withhold, judged, ctx.services.options.observe),
    })
    const format = this.#format
    return {
      verdict,
      released: {
        held: this.held,
        judge,
        upstream: this.#upstream,
        // Usage comes at the end of the stream: its lesson is known once the whole answer passed.
        lessonAt: (usage) => this.#lesson(usage),
        onFirstByte: (sent) => firstByte.settle(sent ? now() - ctx.startedAt : undefined),
      },
      withheld: {},
      figures,
      canaries: [],
      firstByte,
      ...(format ? { format } : {}),
      // Under observe, the record of what enforce would have withheld (the held head) goes with it.
      ...(verdict.observed ? conclusion.withheld(this.raw) : {}),
    }
  }

  /** This request's stand-ins for the release stage; another request's ends the stream as a leak. */
  #streamSecrets(
    figures: Conclusion['figures'],
    withhold: (outcome: AttemptOutcome<unknown>) => Promise<GuardError>,
  ): Pick<JudgeStart, 'standIns'> {
    const secrets = this.#ctx.request.secrets
    if (!secrets) return {}
    const jsonContent = this.#ctx.request.jsonContent
    return {
      standIns: (view) =>
        secrets.check(view, {
          jsonContent,
          onForeign: (finding, seen) =>
            // Another request's secret stand-in: a leak like a foreign canary, never restored.
            withhold({
              verdict: decideReleased({ foreignStandIns: 1 }),
              withheld: seen,
              figures,
              canaries: standInEntries([finding]),
              foreignStandIns: { [finding.kind]: 1 },
            }),
        }),
    }
  }

  /** What ends an `async` release whose proof never came: a quarantine, or the client's own limit. */
  #proofOwed(
    figures: Conclusion['figures'],
    judged: (outcome: AttemptOutcome<unknown>) => Promise<GuardError | undefined>,
  ): JudgeStart['proofOwed'] {
    return {
      // The same watch read on: a canary split across the last held and the first released event counts.
      reasoning: this.#echo,
      onFailed: async (outcome, seen) =>
        outcome === 'cut-off'
          ? cutOffError()
          : judged({
              verdict: decideReleased({ echo: 'missing' }, this.#ctx.services.options.observe),
              withheld: seen,
              figures,
              canaries: [],
            }),
    }
  }

  /** A watch for the content's echo after an early proof, fed with the content already held. */
  #contentEcho(): EchoWatch {
    const echo = new EchoWatch(this.#ctx)
    echo.observe(this.raw.content ?? '', false)
    return echo
  }

  #lesson(usage: Usage | undefined): Lesson {
    if (this.#wouldBlock) return { verified: false, observed: true }
    // An owed proof that was not paid ended the stream before this point.
    const verified = this.#concluded === 'echoed' || this.#owed
    const content = this.#content
    return {
      ...(usage?.prompt_tokens !== undefined ? { reported: usage.prompt_tokens } : {}),
      ...(usage?.prompt_tokens_details?.cached_tokens !== undefined
        ? { reportedCached: usage.prompt_tokens_details.cached_tokens }
        : {}),
      ...(this.#firstTokenMs !== undefined ? { firstTokenMs: this.#firstTokenMs } : {}),
      verified,
      ...(verified && content ? { content: () => content.learn() } : {}),
    }
  }
}

/**
 * What the release does with another tenant's text or canary found after the first byte: end the
 * stream before it and record what was seen (text under observe: record it, and go on).
 */
function midStreamLeaks(
  figures: Conclusion['figures'],
  withhold: (outcome: AttemptOutcome<unknown>) => Promise<GuardError>,
  judged: (outcome: AttemptOutcome<unknown>) => Promise<GuardError | undefined>,
  observe: Observe,
): Pick<JudgeStart, 'onForeignContent' | 'onForeign'> {
  return {
    onForeignContent: (found, seen) =>
      judged({
        verdict: decideReleased(
          { foreignContent: { source: found.source, run: found.run } },
          observe,
        ),
        withheld: seen,
        figures: { ...figures, contentRun: found.run, contentMatches: found.matches },
        canaries: [],
        contentSources: [found.source],
      }),
    onForeign: (channel, tenantTag, seen) =>
      withhold({
        verdict: decideReleased({ foreignCanaries: 1 }),
        withheld: seen,
        figures,
        canaries: [{ kind: 'foreign', channel, ...(tenantTag ? { tenantTag } : {}) }],
      }),
  }
}

/** A failed upstream read before the verdict; the watchdog's 504 and the decoder's errors as they are. */
function upstreamFailure(error: unknown): GuardError {
  if (error instanceof GuardError) return error
  return new GuardError(
    'upstream_error',
    'The upstream stream failed before it could be verified.',
    {
      cause: error,
    },
  )
}
