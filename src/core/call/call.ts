/**
 * @module The call stage: one upstream call under the guard's deadline, its errors made the client's
 * (`upstream_error`) with the engine's own error kept as their `cause` (the orchestrator teaches the
 * ceiling the count a length refusal states).
 */
import type { AttemptContext } from '../attempt/context'
import type { AiRunner } from './upstream'
import { upstreamError } from './upstream-error'
import { deadline } from './watchdog'

/** What the call sends. */
interface Call {
  model: string
  inputs: Record<string, unknown>
  runOptions: Record<string, unknown> | undefined
  /** Whether a stream is expected (then the deadline is the first token's). */
  streamed: boolean
}

/**
 * Calls the upstream and returns what it answered (an object, or a stream not yet read). Not an async
 * function on purpose: it keeps nothing of `call` while the answer is awaited, so the sent inputs
 * (their canary-marked text, which the binding flattens into a copy as long as the prompt when it
 * serializes it) are garbage once sent instead of held through the engine's whole prefill.
 *
 * @example
 * const output = await callUpstream(ctx, env.AI, { model, inputs, runOptions, streamed: true })
 */
export function callUpstream(
  ctx: AttemptContext,
  upstream: AiRunner,
  call: Call,
): Promise<unknown> {
  const { timeouts } = ctx.services.options
  const streamed = call.streamed
  let answer: Promise<unknown>
  try {
    answer = upstream.run(call.model, call.inputs, call.runOptions)
  } catch (error) {
    return Promise.reject(upstreamError(error))
  }
  return deadline(
    answer,
    streamed ? timeouts.firstTokenMs : timeouts.responseMs,
    streamed ? 'a stream' : 'an answer',
    (late) => {
      if (late instanceof ReadableStream) late.cancel().catch(() => {})
    },
  ).catch((error: unknown) => {
    // The engine's own error stays its `cause`: a length refusal states its count (statedPromptTokens).
    throw upstreamError(error)
  })
}
