/**
 * @module Everything decided about a request before its first upstream call, shared by its attempts.
 */
import { countTokens } from './ceiling/count'
import { type PromptPieces, promptPieces } from './ceiling/prompt'
import type { Guard } from './guard'
import type { CalibrationSnapshot, ModelProfile } from './options'
import { type Admission, admit } from './preflight'
import { type RequestFacts, readRequest } from './request'

/** A request the ceiling admitted, with the lazily computed figures its verification needs. */
export interface RequestPlan {
  requestId: string
  tenant: string
  model: string
  profile: ModelProfile
  facts: RequestFacts
  pieces: PromptPieces
  admission: Admission
  snapshot: CalibrationSnapshot
  /** The inputs to send (with `max_tokens` clamped if the overflow policy did so), before injection. */
  inputs: Record<string, unknown>
  /** Whether the prompt asks for the canary echo (policy `require`, and no tools or JSON mode). */
  echoRequested: boolean
  /** Whether answers are scanned for canaries (policy not `off`). */
  scanning: boolean
  /** Whether the prompt is long enough for the timing guard to judge. */
  timed: boolean
  /** Whether a whole answer is fetched as a stream to time its first token. */
  viaStream: boolean
  /** The exact prompt count, template overhead included (counted once, on first need). */
  exactTokens: () => Promise<number>
  /** Prompt tokens this tenant's own recent prompts suggest are cached upstream (looked up once). */
  recordedCachedTokens: () => Promise<number>
}

/**
 * Reads and admits a request: envelope checks, the model's profile, the ceiling.
 * Throws `invalid_request` or `context_length_exceeded`; never calls the upstream.
 *
 * @example
 * const plan = await planRequest(guard, requestId, 'acme', model, inputs)
 */
export async function planRequest(
  guard: Guard,
  requestId: string,
  tenant: string,
  model: string,
  inputs: Record<string, unknown>,
): Promise<RequestPlan> {
  const facts = readRequest(inputs)
  const profile = guard.profile(model)
  const pieces = promptPieces(inputs)
  const snapshot = await guard.snapshot(model)
  const admission = await admit(
    profile,
    model,
    pieces,
    facts.maxTokens,
    snapshot.drift,
    guard.options.overflow,
  )
  const sent =
    admission.clampTo === undefined
      ? inputs
      : { ...inputs, [facts.maxTokensField ?? 'max_tokens']: admission.clampTo }

  let exact: Promise<number> | undefined
  const exactTokens = (): Promise<number> => {
    exact ??= admission.exact
      ? Promise.resolve(admission.estimated + admission.overhead)
      : countTokens(pieces.texts).then((n) => n + admission.overhead)
    return exact
  }
  // Timing can only judge prompts whose honest prefill is long; only those need the exact count, the
  // prefix record and a streamed whole answer. When the ceiling decided by bytes, the bound over-counts
  // prose about 4×, so the decision takes the typical 4 bytes per token; the judgement itself then
  // uses the exact count. (Denser text near the threshold may go untimed; the canary still guards it.)
  const likelyTokens = admission.exact ? admission.estimated : admission.estimated / 4
  const timed =
    (likelyTokens / profile.maxPrefillTokensPerSecond) * 1000 >= guard.options.minTimingEvidenceMs
  let recorded: Promise<number> | undefined
  const recordedCachedTokens = (): Promise<number> => {
    recorded ??= timed
      ? guard.prefixes
          .lookupAndRemember(`${tenant}\u0000${model}`, pieces.texts.join('\n'))
          .then(async (p) =>
            p.matchedChars === 0
              ? 0
              : Math.floor((await exactTokens()) * (p.matchedChars / p.totalChars)),
          )
      : Promise.resolve(0)
    return recorded
  }
  // Hash the prompt while the upstream works, not after its first token.
  if (timed) recordedCachedTokens().catch(() => {})

  return {
    requestId,
    tenant,
    model,
    profile,
    facts,
    pieces,
    admission,
    snapshot,
    inputs: sent,
    echoRequested: profile.echo === 'require' && facts.echoSafe,
    scanning: profile.echo !== 'off',
    timed,
    // A long prompt's whole answer is fetched as a stream so its first token can be timed.
    viaStream: !facts.stream && timed && guard.options.wholeAnswers === 'via-stream',
    exactTokens,
    recordedCachedTokens,
  }
}
