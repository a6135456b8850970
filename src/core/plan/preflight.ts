/**
 * @module The ceiling preflight: admit a request below the model's real pool, or refuse it with figures.
 */
import { ceilingFor, decideCeiling, finerThanEnglish, type Margins } from '../ceiling/ceiling'
import type { ClassFigures, PromptEstimate, TextTally } from '../ceiling/estimate'
import { type PromptPieces, templateOverhead } from '../ceiling/prompt'
import { SCRIPT_CLASS_NAMES, type ScriptClass } from '../ceiling/script'
import { GuardError } from '../errors'
import type { TextFacts } from '../memo/text-memo'
import type { ModelProfile, OverflowPolicy } from '../vocabulary/options'

/** What the preflight admitted. */
export interface Admission {
  /**
   * The prompt's text as charged before margins: the family bound (at least what any tokenizer of the
   * model's generation counts), or its UTF-8 bytes when the byte bound decided. Template overhead
   * excluded. NOT an o200k count: see `o200k` and `lower`.
   */
  estimated: number
  /** Whether `estimated` is the complete family estimate (the count path read every pre-token whole). */
  exact: boolean
  /** How the ceiling decided: `bytes` (nothing counted) or `count` (the family estimate). */
  method: 'bytes' | 'count'
  /**
   * The family estimate when the ceiling counted (`method: 'count'`): its `lower` never exceeds any
   * reference tokenizer's count (what timing needs), `o200k` is o200k's own count.
   */
  estimate?: PromptEstimate
  /** Chat-template overhead, tokens. */
  overhead: number
  /** Per script class present: the figures the decision used. */
  classes: Partial<Record<ScriptClass, ClassFigures>>
  /** The margin applied to each class present. */
  margins: Partial<Record<ScriptClass, number>>
  /** The largest margin applied to any class present (0 for an empty prompt). */
  drift: number
  /** Set when `overflow: 'clamp-output'` lowered the output limit to fit. */
  clampTo?: number
}

/** What the preflight judges: the request's prompt and output limit against the model's profile. */
interface AdmitRequest {
  profile: ModelProfile
  model: string
  pieces: PromptPieces
  /** The request's own output limit; undefined: the profile's `defaultOutputReserve`. */
  maxTokens: number | undefined
  /** Margins calibration learned per script class (never below the profile's floor). */
  learned: Partial<Record<ScriptClass, number>>
  overflow: OverflowPolicy
  /** This tenant's remembered facts of the prompt's long texts, read only when bytes cannot decide. */
  known?: () => Promise<TextFacts<TextTally> | undefined>
}

/** The least output a clamped request keeps: below it, refusing is more useful than a stub answer. */
const MIN_CLAMPED_OUTPUT = 256

/** A driver is explained ("splits N× finer than English") only from this factor up. */
const EXPLAIN_FROM = 1.2

/** Classes that are the spaces and signs between words, not a script a user writes in. */
const BETWEEN_WORDS: ReadonlySet<ScriptClass> = new Set(['whitespace', 'symbols', 'digits'])

/**
 * Decides whether a prompt plus its output reserve fits the model's real pool. Each script class is
 * charged the family bound plus its margin: the profile's `tokenizerDrift` (the floor), or what
 * calibration learned for that class if larger — a margin learned from one script never moves
 * another's. Refuses with `context_length_exceeded` naming the figures, the reason and the scripts
 * that drove the estimate — never truncates: truncation changes the question silently.
 *
 * @example
 * const pieces = promptPieces(inputs)
 * const admission = await admit({ profile, model, pieces, maxTokens, learned: { georgian: 0.3 }, overflow: 'reject' })
 */
export async function admit(request: AdmitRequest): Promise<Admission> {
  const { profile, pieces, maxTokens, overflow, known } = request
  const margins = marginsFor(profile, request.learned)
  const reserve = maxTokens ?? profile.defaultOutputReserve
  const overhead = templateOverhead(pieces)
  const decision = await decideCeiling(pieces, ceilingFor(profile, reserve), margins, known)
  if (decision.fits) return admission(decision, margins, overhead)
  if (overflow === 'clamp-output' && maxTokens !== undefined) {
    // Only the output reserve overflows when the prompt alone fits with room for a useful answer.
    const promptOnly = await decideCeiling(
      pieces,
      ceilingFor(profile, MIN_CLAMPED_OUTPUT),
      margins,
      known,
    )
    if (promptOnly.fits) {
      const clampTo = ceilingFor(profile, 0) - promptOnly.adjustedTokens
      return admission(promptOnly, margins, overhead, clampTo)
    }
  }
  throw await refusal(request, reserve, decision, margins)
}

/** Each class's margin: the profile's floor, or what calibration learned for that class if larger. */
function marginsFor(profile: ModelProfile, learned: Partial<Record<ScriptClass, number>>): Margins {
  return (cls) => {
    const value = learned[cls]
    return Math.max(
      profile.tokenizerDrift,
      value !== undefined && Number.isFinite(value) ? value : 0,
    )
  }
}

type Decision = Awaited<ReturnType<typeof decideCeiling>>

function admission(d: Decision, margins: Margins, overhead: number, clampTo?: number): Admission {
  const applied: Partial<Record<ScriptClass, number>> = {}
  let drift = 0
  for (const cls of Object.keys(d.classes) as ScriptClass[]) {
    applied[cls] = margins(cls)
    drift = Math.max(drift, applied[cls] ?? 0)
  }
  const estimate = d.method === 'count' ? familyEstimate(d) : undefined
  return {
    estimated: d.estimatedTokens,
    exact: d.exact,
    method: d.method === 'bytes' ? 'bytes' : 'count',
    ...(estimate === undefined ? {} : { estimate }),
    overhead,
    classes: d.classes,
    margins: applied,
    drift,
    ...(clampTo === undefined ? {} : { clampTo }),
  }
}

/** The counted decision as a family estimate (its class figures summed). */
function familyEstimate(d: Decision): PromptEstimate {
  const estimate = {
    bound: d.estimatedTokens,
    lower: 0,
    o200k: 0,
    exact: d.exact,
    classes: d.classes,
  }
  for (const figures of Object.values(d.classes)) {
    estimate.o200k += figures?.o200k ?? 0
    estimate.lower += figures?.lower ?? 0
  }
  return estimate
}

/** The `context_length_exceeded` error, with the figures, the limit and the scripts behind it. */
async function refusal(
  { profile, model, maxTokens }: AdmitRequest,
  reserve: number,
  decision: Decision,
  margins: Margins,
): Promise<GuardError> {
  const pool = Math.min(profile.contextWindow, profile.kvPoolTokens)
  if (reserve >= pool) {
    return new GuardError(
      'context_length_exceeded',
      `max_tokens ${fmt(reserve)} alone exceeds what ${model} can serve: ${fmt(pool)} tokens for prompt and output together (its real KV-cache pool${profile.kvPoolTokens < profile.contextWindow ? `, less than the advertised ${fmt(profile.contextWindow)}-token window` : ''}). Lower max_tokens.`,
      { param: maxTokens === undefined ? 'messages' : 'max_tokens' },
    )
  }
  const margin = marginText(decision.drivers.map(margins))
  const limitedBy =
    profile.kvPoolTokens < profile.contextWindow
      ? `its real KV-cache pool holds ${fmt(profile.kvPoolTokens)} tokens, less than the advertised ${fmt(profile.contextWindow)}-token window`
      : `its context window is ${fmt(profile.contextWindow)} tokens`
  const needed =
    decision.method === 'early-exit'
      ? `more than ${fmt(decision.ceiling)} tokens (estimation stopped at the ceiling; ${margin})`
      : `${fmt(decision.adjustedTokens)} tokens (${fmt(decision.estimatedTokens)} estimated for the model's tokenizer, plus ${margin}, template overhead and what the guard adds)`
  return new GuardError(
    'context_length_exceeded',
    `This request needs ${needed} plus ${fmt(reserve)} reserved for output, but ${model} can safely serve ${fmt(pool - reserve)} prompt tokens at most: ${limitedBy}.${await scriptNote(decision.drivers, decision.classes)} Shorten the prompt or lower max_tokens; the guard rejects rather than truncates, so the question is never changed silently.`,
    { param: 'messages', scripts: decision.drivers },
  )
}

function marginText(applied: readonly number[]): string {
  const low = Math.round(Math.min(...applied, Number.POSITIVE_INFINITY) * 100)
  const high = Math.round(Math.max(...applied, 0) * 100)
  if (!Number.isFinite(low) || low === high) return `a ${high}% tokenizer margin`
  return `tokenizer margins of ${low}–${high}%`
}

/**
 * Why this script fills the window sooner, for a user who wonders why a Hindi document is refused
 * where an English one of the same length is not: the scripts that drove the estimate, their share,
 * and how much finer the model's tokenizer family splits them than English.
 */
async function scriptNote(
  drivers: readonly ScriptClass[],
  classes: Partial<Record<ScriptClass, ClassFigures>>,
): Promise<string> {
  const scripts = drivers.filter((cls) => !BETWEEN_WORDS.has(cls))
  const first = scripts[0]
  if (first === undefined) return ''
  let total = 0
  for (const figures of Object.values(classes)) total += figures?.bound ?? 0
  const share = (cls: ScriptClass) =>
    `${Math.round(((classes[cls]?.bound ?? 0) / Math.max(1, total)) * 100)}%`
  const factor = await finerThanEnglish(first)
  const rest = scripts.slice(1).map((cls) => `${SCRIPT_CLASS_NAMES[cls]} (${share(cls)})`)
  const mostly = `The text is mostly ${SCRIPT_CLASS_NAMES[first]} script (${share(first)} of the estimate${rest.length ? `; then ${rest.join(', ')}` : ''})`
  if (first === 'latin' || factor < EXPLAIN_FROM) return ` ${mostly}.`
  return ` ${mostly}, which the model's tokenizer splits about ${factor.toFixed(1)}× finer than English, so it fills the window sooner than English text of the same length.`
}

function fmt(n: number): string {
  return n.toLocaleString('en-US')
}
