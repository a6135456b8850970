/**
 * @module Verifies a whole (non-stream) answer: echo, canaries, timing, usage → one verdict.
 */

import type { AttemptContext, AttemptOutcome } from './attempt'
import { cutOff, matchEchoSpan } from './canary'
import { GuardError } from './errors'
import {
  canaryEntries,
  judge,
  redactCanaries,
  scanChannels,
  teach,
  timingEvidence,
} from './evidence'
import { readTexts, replaceTexts } from './stream/frames'
import type { EchoOutcome } from './verdict'

/**
 * Checks one complete answer and, when it may be released, returns it with canaries removed.
 *
 * @example
 * const outcome = await verifyOutput(ctx, await upstream.run(model, inputs))
 */
export async function verifyOutput(
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
  let echo: EchoOutcome = 'not-requested'
  if (ctx.proof !== 'none' && ctx.canary !== undefined) {
    const content = texts.content ?? ''
    const span = matchEchoSpan(ctx.proof, content, ctx.canary, true)
    echo =
      span.status === 'echoed'
        ? 'echoed'
        : cutOff(read.finishReason, texts.content)
          ? 'cut-off'
          : 'missing'
    if (span.status === 'echoed') {
      texts.content = content.slice(0, span.start) + content.slice(span.end)
    }
  }
  const scanned = await scanChannels(ctx, texts)
  const cached = read.usage?.prompt_tokens_details?.cached_tokens ?? 0
  const timing = await timingEvidence(ctx, observedMs, cached)
  const reported = read.usage?.prompt_tokens
  const { verdict, figures } = await judge(ctx, {
    echo,
    findings: scanned.findings,
    ...(timing ? { timing } : {}),
    ...(typeof reported === 'number' ? { reported } : {}),
  })
  if (verdict.action === 'release') {
    // A whole answer's latency includes decode, so it teaches tokens only, never the TTFT baseline.
    teach(ctx, {
      ...(typeof reported === 'number' ? { reported } : {}),
      verified: echo === 'echoed',
    })
    return {
      verdict,
      released: replaceTexts(output, scanned.texts),
      withheld: {},
      figures,
      canaries: [],
    }
  }
  return {
    verdict,
    withheld: redactCanaries(read.texts),
    figures,
    canaries: canaryEntries(scanned.findings),
  }
}
