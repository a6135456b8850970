/**
 * @module Where a verified stream meets its release: the verification's judge and held frames, the
 * release stage's queue, and the client's byte stream, composed once per released stream.
 */
import type { AttemptOutcome, Lesson } from '../attempt/context'
import { clientStream } from '../release/client-stream'
import { Release } from '../release/release-stream'
import type { VerifiedStream } from '../verify/streamed-answer'

/**
 * The outcome of a streamed attempt with its answer as the client's stream (a withheld one unchanged);
 * `learn` gets the stream's lesson once the whole answer passed.
 *
 * @example
 * const outcome = toClientStream(await verifyStreamedAnswer(ctx, output), (lesson) => learnFrom(ctx, lesson))
 */
export function toClientStream(
  outcome: AttemptOutcome<VerifiedStream>,
  learn: (lesson: Lesson) => void,
): AttemptOutcome<ReadableStream<Uint8Array>> {
  const { released: verified, ...rest } = outcome
  if (verified === undefined) return rest
  const { held, judge, upstream, lessonAt, onFirstByte } = verified
  const release = new Release(held, judge, { onEnd: (usage) => learn(lessonAt(usage)) })
  return { ...rest, released: clientStream(upstream, release, { onFirstByte }) }
}
