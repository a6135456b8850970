/**
 * @module One probe request, sent and judged: the prompt goes out, and the answer (or the error) comes
 * back as a {@link ProbeStep}, the row the search, the progress bar and the report read.
 *
 * A step never holds answer text: an answer that leaked holds another tenant's prompt.
 */
import type { ProbeAnswer } from './answer'
import type { GuardSign } from './guard-sign'
import { judgeAnswer, type StepKind } from './judge'
import type { ProbePrompt } from './prompt-builder'
import type { ProbeTransport } from './transport'
import { messageOf, type ProbeErrorKind, ProbeTransportError } from './transport-error'

/** One request of the run, as judged. */
export interface ProbeStep {
  /** 1-based. */
  index: number
  /** o200k tokens sent. */
  tokens: number
  kind: StepKind
  /** Why, in one sentence. */
  detail: string
  /** 0 for a first try, 1 for the first retry of the same length… */
  attempt: number
  /** `usage.prompt_tokens` as the target reported it, or null. */
  reportedPromptTokens: number | null
  /** `usage.prompt_tokens_details.cached_tokens`, or null. */
  cachedTokens: number | null
  /** Time to the first model-written text (whole answer when not streamed), or null. */
  ttftMs: number | null
  /** The shortest TTFT a real prefill allows. */
  minTtftMs: number
  /** Time to the end of the answer, or null on error. */
  totalMs: number | null
  /** Needles of this prompt the answer lacks. */
  missing: ('start' | 'end')[]
  /** Earlier steps whose markers the answer quoted (a leak). */
  foreignFrom: number[]
  impossibleTtft: boolean
  /** Set when the request got no judgeable answer. */
  error?: { kind: ProbeErrorKind; status?: number; message: string }
  /** Set when the answer or error came from a workers-ai-guard endpoint, and how it showed. */
  guard?: GuardSign
}

/** Everything {@link sendStep} needs besides the prompt. */
interface StepContext {
  transport: ProbeTransport
  /** 1-based index of the step. */
  index: number
  /** 0 for a first try, 1 for the first retry of the same length… */
  attempt: number
  /** Every marker sent by earlier steps (upper case) → the step that sent it. */
  earlier: ReadonlyMap<string, number>
  /** The run's `max_tokens`, prefill bound and usage floor. */
  limits: { maxOutput: number; maxPrefill: number; usageFloor: number }
}

/**
 * Sends one prompt and judges the answer. Never rejects: a failed request is a step of kind
 * `'error'` carrying the transport's error.
 *
 * @example
 * const step = await sendStep(prompt, { transport, index: 1, attempt: 0, earlier, limits })
 */
export async function sendStep(prompt: ProbePrompt, ctx: StepContext): Promise<ProbeStep> {
  try {
    const answer = await ctx.transport.send({
      prompt: prompt.text,
      maxTokens: ctx.limits.maxOutput,
    })
    return judgedStep(prompt, ctx, answer)
  } catch (caught) {
    const error =
      caught instanceof ProbeTransportError
        ? caught
        : new ProbeTransportError('upstream', messageOf(caught))
    return errorStep(prompt, ctx, error)
  }
}

function judgedStep(prompt: ProbePrompt, ctx: StepContext, answer: ProbeAnswer): ProbeStep {
  const { maxOutput, maxPrefill, usageFloor } = ctx.limits
  const j = judgeAnswer({ prompt, answer, earlier: ctx.earlier, maxPrefill, usageFloor })
  return {
    index: ctx.index,
    tokens: prompt.tokens,
    kind: j.kind,
    detail:
      j.kind === 'missing-needle' && answer.finishReason === 'length'
        ? `${j.detail} (cut at max_tokens ${maxOutput})`
        : j.detail,
    attempt: ctx.attempt,
    reportedPromptTokens: answer.promptTokens ?? null,
    cachedTokens: answer.cachedTokens ?? null,
    ttftMs: answer.ttftMs === null ? null : round(answer.ttftMs),
    minTtftMs: round(j.minTtftMs),
    totalMs: round(answer.totalMs),
    missing: j.missing,
    foreignFrom: [...new Set(j.foreign.map((f) => f.step))].sort((a, b) => a - b),
    impossibleTtft: j.impossibleTtft,
    ...(answer.guard === undefined ? {} : { guard: answer.guard }),
  }
}

function errorStep(prompt: ProbePrompt, ctx: StepContext, error: ProbeTransportError): ProbeStep {
  return {
    index: ctx.index,
    tokens: prompt.tokens,
    kind: 'error',
    detail: error.message,
    attempt: ctx.attempt,
    reportedPromptTokens: null,
    cachedTokens: null,
    ttftMs: null,
    minTtftMs: 0,
    totalMs: null,
    missing: [],
    foreignFrom: [],
    impossibleTtft: false,
    error: {
      kind: error.kind,
      ...(error.status === undefined ? {} : { status: error.status }),
      message: error.message,
    },
    ...(error.guard === undefined ? {} : { guard: error.guard }),
  }
}

/** Milliseconds to the microsecond: enough for any TTFT verdict, readable in JSON. */
function round(ms: number): number {
  return Math.round(ms * 1000) / 1000
}
