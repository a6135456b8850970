/**
 * @module Verifies a whole (non-stream) answer: echo, canaries, timing, usage → one verdict.
 */
import type { AttemptContext, AttemptOutcome } from '../attempt/context'
import { GuardError } from '../errors'
import { readTexts, replaceTexts } from '../format/frames'
import { conclude } from './conclude'
import { EchoWatch } from './echo-watch'
import { timingEvidence } from './timing-evidence'

/**
 * Checks one complete answer and, when it may be released, returns it with canaries removed.
 *
 * @example
 * const outcome = await verifyWholeAnswer(ctx, await upstream.run(model, inputs))
 */
export async function verifyWholeAnswer(
  ctx: AttemptContext,
  output: unknown,
): Promise<AttemptOutcome<unknown>> {
  // A whole answer's latency includes its decode, so it can only exceed the prefill bound: judging it
  // against the bound alone never accuses an honest answer.
  const observedMs = ctx.services.options.now() - ctx.startedAt
  if (output instanceof ReadableStream) {
    // A stream nobody asked for: stop it rather than leave it running, and refuse it.
    await output.cancel().catch(() => {})
    throw new GuardError('upstream_error', 'The upstream returned a stream for a whole request.')
  }
  const read = readTexts(output)
  const texts = { ...read.texts }
  const content = texts.content ?? ''
  const watch = new EchoWatch(ctx)
  watch.observe(content, true)
  // A slip at the start of the content is proven anyway when the reasoning restated the canary.
  if (!watch.span) watch.sawInReasoning(texts.reasoning ?? '')
  const echo = watch.conclude(content, read.finishReason, true)
  if (echo === 'echoed' && watch.span) {
    texts.content = content.slice(0, watch.span.start) + content.slice(watch.span.end)
  }
  const cached = read.usage?.prompt_tokens_details?.cached_tokens ?? 0
  const timing = await timingEvidence(ctx, observedMs, cached)
  const reported = read.usage?.prompt_tokens
  const conclusion = await conclude(ctx, {
    echo,
    texts,
    observedMs,
    ...(timing ? { timing } : {}),
    ...(typeof reported === 'number' ? { reported } : {}),
  })
  if (conclusion.verdict.action !== 'release') return conclusion.withheld(read.texts)
  const released = replaceTexts(output, conclusion.texts)
  if (conclusion.verdict.observed) {
    // Released under observe: the record of what enforce would have withheld goes with it, and no
    // lesson (an answer the guard doubts must not teach what an honest one looks like).
    return { ...conclusion.withheld(read.texts), released, restored: conclusion.restored }
  }
  return {
    verdict: conclusion.verdict,
    released,
    withheld: {},
    figures: conclusion.figures,
    canaries: [],
    restored: conclusion.restored,
    // A whole answer's latency includes decode, so it teaches tokens only, never the TTFT baseline.
    lesson: {
      ...(typeof reported === 'number' ? { reported } : {}),
      verified: echo === 'echoed',
      ...(echo === 'echoed' ? { content: () => conclusion.learn() } : {}),
    },
  }
}
