/**
 * @module Everything decided about a request before its first upstream call, shared by its attempts.
 */

import type { CalibrationSnapshot } from '../calibration/learned'
import { type PromptPieces, promptPieces } from '../ceiling/prompt'
import type { RequestMemo, TextMemo } from '../memo/text-memo'
import type { PrefixRecord } from '../timing/prefix-record'
import type { PromptSecrets, SecretsHook } from '../vocabulary/evidence-plugins'
import type { ModelProfile, ResolvedOptions } from '../vocabulary/options'
import type { ProofKind } from '../vocabulary/request-facts'
import { guardAdditionTokens } from './guard-additions'
import { type Admission, admit } from './preflight'
import { PromptFigures, PromptMemory } from './prompt-figures'
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
  /**
   * The inputs to send (empty opt-outs removed, secrets replaced by stand-ins, `max_tokens` clamped if
   * asked), before injection.
   */
  inputs: Record<string, unknown>
  /** The prompt's secrets and the checks of its answers; undefined when the guard substitutes none. */
  secrets: PromptSecrets | undefined
  /** Whether the answer's content is JSON (JSON mode, a schema): values are restored escaped in it. */
  jsonContent: boolean
  /** The proof asked of the answer: the profile's echo policy, then what the format can carry. */
  proof: ProofKind
  /** Whether answers are scanned for canaries (policy not `off`). */
  scanning: boolean
  /** Whether the prompt is long enough for the timing guard to judge. */
  timed: boolean
  /** Whether a whole answer is fetched as a stream to time its first token. */
  viaStream: boolean
  /** Whether the prompt is (or is being) counted: only counted prompts teach calibration. */
  counted: boolean
  /**
   * This tenant's remembered facts of the prompt's long texts (src/core/memo); undefined when the guard
   * remembers nothing. Read after `figures.remembered()`.
   */
  memo: RequestMemo | undefined
  /**
   * What verification may need of the prompt, computed once on first need (see ./prompt-figures.ts):
   * the memo's digests, the family estimate, the tenant's prefix record (only for timed prompts).
   */
  figures: PromptFigures
  /**
   * Whether verification will read the count and the prefix record: the prompt is counted, or its
   * byte bound is long enough for the timing evidence to weigh (src/core/verify/timing-evidence.ts).
   * Such a prompt is counted and hashed right after its call is sent, while the engine prefills.
   */
  needsEstimate: boolean
  /**
   * Whether the timing evidence will read the prefix record (the prompt's byte bound is long enough for
   * it to weigh). Hashing a prompt nobody reads costs a digest per 64 K characters and keeps the
   * prompt alive until it is done — after the answer, for a prompt of a million tokens.
   */
  needsPrefix: boolean
}

/** Which request is planned: its id, its tenant and the model it asks for. */
interface RequestCall {
  requestId: string
  tenant: string
  model: string
}

/** What planning needs of the guard: its options, profiles, calibration snapshot and prefix records. */
export interface PlanServices {
  /** The secrets plug-in's prompt hook (undefined: no secret is looked for). */
  readonly secrets: SecretsHook | undefined
  readonly options: Pick<ResolvedOptions, 'overflow' | 'minTimingEvidenceMs' | 'wholeAnswers'>
  readonly prefixes: PrefixRecord
  /** Facts of each tenant's long texts, kept between its requests (undefined: off). */
  readonly memo: TextMemo | undefined
  profile(model: string): ModelProfile
  snapshot(model: string): Promise<CalibrationSnapshot>
}

/**
 * Reads and admits a request: envelope checks, the model's profile, the ceiling.
 * Throws `invalid_request` or `context_length_exceeded`; never calls the upstream.
 *
 * @example
 * const plan = await planRequest(guard, { requestId, tenant: 'acme', model }, inputs)
 */
export async function planRequest(
  guard: PlanServices,
  call: RequestCall,
  raw: Record<string, unknown>,
): Promise<RequestPlan> {
  const { requestId, tenant, model } = call
  const facts = readRequest(raw)
  const profile = guard.profile(model)
  // What this tenant's earlier requests computed of the same texts (src/core/memo).
  const memo = guard.memo?.forRequest(tenant)
  // Before the ceiling counts: what is counted is what is sent (the guard's directive and marker too).
  const { inputs, secrets } = guard.secrets
    ? await guard.secrets.substitute(call, facts.inputs, memo)
    : { inputs: facts.inputs, secrets: undefined }
  const proof = profile.echo === 'require' ? facts.proof : 'none'
  const pieces = { ...promptPieces(inputs), guardTokens: guardAdditionTokens(profile, proof) }
  const snapshot = await guard.snapshot(model)
  // The ceiling's count reads the memo only when bytes cannot decide (a prompt of ~660 KB or more,
  // where digesting costs a fraction of a count); the count for timing and the print after the call.
  const memory = new PromptMemory(memo, pieces)
  const admission = await admit({
    profile,
    model,
    pieces,
    maxTokens: facts.maxTokens,
    learned: snapshot.drift,
    overflow: guard.options.overflow,
    known: memory.known,
  })
  const sent = clamped(inputs, facts, admission)
  const figures = new PromptFigures(
    { admission, pieces, memory },
    { prefixes: guard.prefixes, key: prefixKey(tenant, model) },
  )
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
    secrets,
    jsonContent: jsonContent(inputs),
    proof,
    scanning: profile.echo !== 'off',
    ...timingPlan(admission, profile, facts, guard.options),
    memo,
    figures,
  }
}

/** Whether the first token is timed, how the answer is fetched, and what the verdict will read. */
function timingPlan(
  admission: RequestPlan['admission'],
  profile: RequestPlan['profile'],
  facts: RequestPlan['facts'],
  options: PlanServices['options'],
): Pick<RequestPlan, 'timed' | 'viaStream' | 'counted' | 'needsEstimate' | 'needsPrefix'> {
  const timed = isTimed(admission, profile, options.minTimingEvidenceMs)
  const judged = weighsTiming(timed, admission, profile, options.minTimingEvidenceMs)
  return {
    timed,
    // A long prompt's whole answer is fetched as a stream so its first token can be timed.
    viaStream: !facts.stream && timed && options.wholeAnswers === 'via-stream',
    counted: timed || admission.estimate !== undefined,
    needsEstimate: judged || admission.estimate !== undefined,
    needsPrefix: judged,
  }
}

/** The inputs sent: `max_tokens` (or the request's own field) lowered where the ceiling clamps it. */
function clamped(
  inputs: Record<string, unknown>,
  facts: RequestPlan['facts'],
  admission: RequestPlan['admission'],
): Record<string, unknown> {
  if (admission.clampTo === undefined) return inputs
  return { ...inputs, [facts.maxTokensField ?? 'max_tokens']: admission.clampTo }
}

/**
 * Whether the timing evidence weighs this prompt (src/core/verify/timing-evidence.ts reads its count and
 * prefix): it is timed, or its estimated prefill is long enough to be evidence.
 */
function weighsTiming(
  timed: boolean,
  admission: RequestPlan['admission'],
  profile: RequestPlan['profile'],
  minTimingEvidenceMs: number,
): boolean {
  return (
    timed || (admission.estimated / profile.maxPrefillTokensPerSecond) * 1000 >= minTimingEvidenceMs
  )
}

/** Whether the request asks for a JSON answer (JSON mode, a JSON schema, guided decoding). */
function jsonContent(inputs: Record<string, unknown>): boolean {
  if (inputs.guided_json !== undefined) return true
  const format = inputs.response_format as { type?: unknown } | undefined
  return format?.type === 'json_object' || format?.type === 'json_schema'
}

/**
 * The key of a tenant's prefix record for one model.
 *
 * @example
 * guard.prefixes.remember(prefixKey('acme', model), digest)
 */
export function prefixKey(tenant: string, model: string): string {
  return `${tenant}\u0000${model}`
}

/**
 * Timing can only judge prompts whose honest prefill is long; only those need the count, the prefix
 * record and a streamed whole answer. When the ceiling decided by bytes, the bound over-counts prose
 * about 4×, so the decision takes the typical 4 bytes per token; the judgement itself then uses the
 * lower estimate (denser text near the threshold may go untimed; the canary still guards it).
 */
function isTimed(admission: Admission, profile: ModelProfile, minEvidenceMs: number): boolean {
  const likelyTokens = admission.estimate ? admission.estimate.lower : admission.estimated / 4
  return (likelyTokens / profile.maxPrefillTokensPerSecond) * 1000 >= minEvidenceMs
}
