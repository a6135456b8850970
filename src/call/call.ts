/**
 * @module The call stage: one upstream call under the guard's deadline, its errors made the client's
 * (`upstream_error`), and an engine's refusal that states its own count taught to the ceiling.
 */
import type { AttemptContext } from '../attempt/context'
import { teachRefusal } from '../calibration/teach'
import type { AiRunner } from './upstream'
import { statedPromptTokens, upstreamError } from './upstream-error'
import { deadline } from './watchdog'

/** What the call sends. */
interface Call {
  model: string
  inputs: Record<string, unknown>
  runOptions: Record<string, unknown> | undefined
  /** Whether a stream is expected (then the deadline is the first token's). */
  streamed: boolean
  /** The output limit the request asked for, to read an engine refusal's figures. */
  maxTokens: number | undefined
}

/**
 * Calls the upstream and returns what it answered (an object, or a stream not yet read).
 *
 * @example
 * const output = await callUpstream(ctx, env.AI, { model, inputs, runOptions, streamed: true, maxTokens })
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
    // An engine refusing the length states its own count: the best evidence for the ceiling.
    const stated = statedPromptTokens(error, call.maxTokens)
    if (stated !== undefined) teachRefusal(ctx, stated)
    throw upstreamError(error)
  }
}
