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
 * Calls the upstream and returns what it answered (an object, or a stream not yet read).
 *
 * @example
 * const output = await callUpstream(ctx, env.AI, { model, inputs, runOptions, streamed: true })
 */
export async function callUpstream(
  ctx: AttemptContext,
  upstream: AiRunner,
  call: Call,
): Promise<unknown> {
  const { timeouts } = ctx.services.options
  try {
    return await deadline(
      upstream.run(call.model, call.inputs, call.runOptions),
      call.streamed ? timeouts.firstTokenMs : timeouts.responseMs,
      call.streamed ? 'a stream' : 'an answer',
      (late) => {
        if (late instanceof ReadableStream) late.cancel().catch(() => {})
      },
    )
  } catch (error) {
    // The engine's own error stays its `cause`: a length refusal states its count (statedPromptTokens).
    throw upstreamError(error)
  }
}
