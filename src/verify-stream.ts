/**
 * @module Verifies a streamed answer before its first byte is released.
 *
 * GLM-5.3 streams reasoning before content, and reasoning leaks as much as content does, so nothing is
 * released before the verdict: the stream is read (and held) until the first token has been timed and,
 * where an echo was asked for, the start of the visible reply has shown it or shown that it is missing.
 * Only then does `run()` resolve, so a withheld answer is an ordinary error response, never a 200 that
 * breaks off. After release, {@link releaseStream} keeps watching every byte.
 *
 * A first token that looks too fast is not yet proof when the echo still verifies: another tenant may
 * have sent the same long prefix, which the engine serves from its cache and the guard's per-tenant
 * record cannot foresee. Such a stream is held to its end, where the upstream reports its cached tokens,
 * and judged again with them — the same evidence a whole answer gets.
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
import { releaseStream } from './release-stream'
import { type Channel, type Frame, parseFrame } from './stream/frames'
import { type SseEvent, sseDecoder, sseEncoder } from './stream/sse'
import { stallWatchdog } from './stream/watchdog'
import type { TimingSignal } from './timing/prefill'
import type { Usage } from './upstream'
import type { EchoOutcome } from './verdict'

/**
 * Reads the upstream stream up to its verdict; on release returns the client stream.
 *
 * @example
 * const outcome = await verifyStream(ctx, await upstream.run(model, { ...inputs, stream: true }))
 */
export async function verifyStream(
  ctx: AttemptContext,
  output: unknown,
): Promise<AttemptOutcome<ReadableStream<Uint8Array>>> {
  const body = output instanceof Response ? output.body : output
  if (!(body instanceof ReadableStream)) {
    throw new GuardError(
      'upstream_error',
      'The upstream did not return a stream for a streaming request.',
    )
  }
  const { timeouts } = ctx.services.options
  const events = (body as ReadableStream<Uint8Array>)
    .pipeThrough(stallWatchdog({ firstByteMs: timeouts.firstTokenMs, idleMs: timeouts.idleMs }))
    .pipeThrough(sseDecoder())
  const reader = events.getReader()
  const held: Frame[] = []
  const raw: Partial<Record<Channel, string>> = {}
  let heldBytes = 0
  let ended = false
  let sawDone = false
  let firstTokenMs: number | undefined
  let finishReason: string | undefined
  let timing: TimingSignal | undefined
  // Mutated by settleEcho; an object so the compiler does not narrow it at its declaration.
  const echoState: { echo: EchoOutcome | 'pending'; start: number; end: number } = {
    echo: ctx.proof !== 'none' ? 'pending' : 'not-requested',
    start: 0,
    end: 0,
  }

  const settleEcho = (final: boolean) => {
    if (echoState.echo !== 'pending' || ctx.canary === undefined || ctx.proof === 'none') return
    const span = matchEchoSpan(ctx.proof, raw.content ?? '', ctx.canary, final)
    if (span.status === 'echoed') {
      echoState.echo = 'echoed'
      echoState.start = span.start
      echoState.end = span.end
    } else if (span.status === 'missing') echoState.echo = 'missing'
  }

  try {
    while (true) {
      let next: ReadableStreamReadResult<SseEvent>
      try {
        next = await reader.read()
      } catch (error) {
        // The watchdog's 504 and the decoder's own errors keep their meaning.
        if (error instanceof GuardError) throw error
        throw new GuardError(
          'upstream_error',
          'The upstream stream failed before it could be verified.',
          { cause: error },
        )
      }
      if (next.done) {
        ended = true
        break
      }
      const frame = parseFrame(next.value)
      held.push(frame)
      heldBytes += next.value.data.length
      if (frame.done) sawDone = true
      if (frame.finishReason) finishReason = frame.finishReason
      if (heldBytes > ctx.services.options.maxHeldBytes) {
        throw new GuardError(
          'upstream_error',
          `The answer grew past ${ctx.services.options.maxHeldBytes} bytes before it could be verified; it was withheld.`,
        )
      }
      let hasText = false
      for (const [channel, text] of Object.entries(frame.texts) as [Channel, string][]) {
        if (!text) continue
        hasText = true
        raw[channel] = (raw[channel] ?? '') + text
      }
      if (hasText && firstTokenMs === undefined) {
        // Reasoning counts: the first token of any kind is when prefill must have finished.
        firstTokenMs = ctx.services.options.now() - ctx.startedAt
        timing = await timingEvidence(ctx, firstTokenMs, 0)
      }
      settleEcho(false)
      if (firstTokenMs === undefined || echoState.echo === 'pending') continue
      // Too fast: wait for the upstream's cached-token report at the end before deciding, so an
      // honest cache hit the guard could not foresee (another tenant's identical prefix) is not
      // withheld — even when it coincides with a slipped echo. Nothing is released meanwhile.
      if (timing?.impossible) continue
      break
    }
  } catch (error) {
    await reader.cancel(error).catch(() => {})
    throw error
  }

  settleEcho(true)
  const missing = echoState.echo === 'pending' || echoState.echo === 'missing'
  const echoOutcome: EchoOutcome =
    missing && ended && cutOff(finishReason, raw.content)
      ? 'cut-off'
      : echoState.echo === 'pending'
        ? 'missing'
        : echoState.echo
  const usageFrame = ended ? held.findLast((f) => f.usage?.prompt_tokens !== undefined) : undefined
  const reported = usageFrame?.usage?.prompt_tokens
  if (timing?.impossible && ended && firstTokenMs !== undefined) {
    const cached = usageFrame?.usage?.prompt_tokens_details?.cached_tokens ?? 0
    timing = await timingEvidence(ctx, firstTokenMs, cached)
  }
  const scanned = await scanChannels(ctx, raw)
  const { verdict, figures } = await judge(ctx, {
    echo: echoOutcome,
    findings: scanned.findings,
    ...(timing ? { timing } : {}),
    ...(reported !== undefined ? { reported } : {}),
  })
  if (verdict.action !== 'release') {
    // Stop the upstream: nothing of this answer will be used.
    await reader.cancel().catch(() => {})
    return {
      verdict,
      withheld: redactCanaries(raw),
      figures,
      canaries: canaryEntries(scanned.findings),
    }
  }
  if (ended && !sawDone) {
    throw new GuardError(
      'upstream_error',
      'The upstream stream ended before it was complete; nothing was released.',
    )
  }
  // Usage comes at the end of the stream: the release stage calls this once the whole answer passed.
  const lesson = (usage: Usage | undefined) =>
    teach(ctx, {
      ...(usage?.prompt_tokens !== undefined ? { reported: usage.prompt_tokens } : {}),
      ...(usage?.prompt_tokens_details?.cached_tokens !== undefined
        ? { reportedCached: usage.prompt_tokens_details.cached_tokens }
        : {}),
      ...(firstTokenMs !== undefined ? { firstTokenMs } : {}),
      verified: echoOutcome === 'echoed',
    })
  reader.releaseLock()
  const released = events
    .pipeThrough(
      releaseStream(ctx, {
        held,
        strips:
          echoState.end > echoState.start
            ? { content: [{ start: echoState.start, end: echoState.end }] }
            : {},
        onEnd: lesson,
        onForeign: (channel, tenantTag, seen) =>
          // Quarantine mid-stream: record what was seen, end the stream before the offending event.
          ctx.services.withhold(ctx, {
            verdict: { action: 'quarantine', reasons: ['foreign_canary'], score: 1 },
            withheld: seen,
            figures,
            canaries: [{ kind: 'foreign', channel, ...(tenantTag ? { tenantTag } : {}) }],
          }),
      }),
    )
    .pipeThrough(sseEncoder())
  const format = held.find((f) => f.format !== undefined)?.format
  return {
    verdict,
    released,
    withheld: {},
    figures,
    canaries: [],
    ...(format ? { format } : {}),
  }
}
