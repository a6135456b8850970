/**
 * @module Judging one probe answer: did it come from this prompt, read end to end, prefilled for real?
 *
 * A leaking or truncating deployment still answers with a 200, a normal stream and a plausible token
 * count, so status alone proves nothing; the probe reads the content (both needles, no earlier
 * request's marker), the time (a first token faster than any real prefill), and the count (a target
 * that says it read far fewer tokens than were sent truncated the prompt).
 */
import type { ProbeAnswer } from './answer'
import { fmt } from './numbers'
import { NEEDLE_PATTERN, type ProbePrompt } from './prompt-builder'

/** The outcome of one probe request, worst first when several apply. */
export type StepKind =
  /** Both needles back, nothing foreign, a plausible TTFT, a plausible count. */
  | 'ok'
  /** No answer: an HTTP error, a thrown error, an unreadable stream. */
  | 'error'
  /** The answer quotes a marker (needle or filler tag) of an EARLIER probe request: a leak. */
  | 'foreign-content'
  /** The first token came faster than a prefill of the prompt at `maxPrefill` tok/s could allow. */
  | 'impossible-ttft'
  /** The answer lacks one or both of this prompt's needles (the model did not read it all). */
  | 'missing-needle'
  /** The target counted under `usageFloor` of the tokens sent: it cut the prompt. */
  | 'usage-mismatch'

/** Everything the judgement found, for the report (no answer text: it may be another tenant's). */
export interface Judgement {
  kind: StepKind
  /** One sentence on why. */
  detail: string
  /** Which of this prompt's needles the answer lacks. */
  missing: ('start' | 'end')[]
  /** Markers of earlier probe requests found in the answer, with the request they came from. */
  foreign: { marker: string; step: number }[]
  /** Needle-shaped strings that are neither ours now nor ever sent (a model's miscopy, or another prober). */
  unknownNeedles: string[]
  /** The shortest TTFT a real prefill allows for this prompt, in ms. */
  minTtftMs: number
  impossibleTtft: boolean
  usageMismatch: boolean
}

/** Inputs of {@link judgeAnswer}. */
interface JudgeInput {
  prompt: Pick<ProbePrompt, 'tokens' | 'startNeedle' | 'endNeedle' | 'tag'>
  answer: ProbeAnswer
  /** Every marker sent by earlier requests of this run (upper case) → the step that sent it. */
  earlier: ReadonlyMap<string, number>
  /** Physical upper bound of an uncached prefill, tokens per second. */
  maxPrefill: number
  /** Reported prompt tokens below this fraction of those sent is a cut prompt. @default 0.8 */
  usageFloor?: number
}

/**
 * The shortest time to first token a real prefill of `tokens` uncached tokens can take.
 *
 * @example
 * minTtftMs(700_000, 200_000) // 3500
 */
export function minTtftMs(tokens: number, maxPrefill: number): number {
  return Number.isFinite(maxPrefill) && maxPrefill > 0
    ? (Math.max(0, tokens) / maxPrefill) * 1000
    : 0
}

/**
 * Judges one answer. Pure: the caller keeps the set of earlier markers.
 *
 * @example
 * const j = judgeAnswer({ prompt, answer, earlier, maxPrefill: 200_000 })
 * if (j.kind === 'foreign-content') console.log('leak: quotes request', j.foreign[0]?.step)
 */
export function judgeAnswer(input: JudgeInput): Judgement {
  const { prompt, answer } = input
  const floor = input.usageFloor ?? 0.8
  const { missing, foreign, unknownNeedles } = readMarkers(input)
  // Cached tokens skip prefill legitimately; a probe prompt opens with a fresh needle, so only a
  // shared template prefix can be cached, but a target that says so is taken at its word.
  const uncached = prompt.tokens - Math.min(answer.cachedTokens ?? 0, prompt.tokens)
  const minTtft = minTtftMs(uncached, input.maxPrefill)
  const impossibleTtft = answer.ttftMs !== null && answer.ttftMs < minTtft
  const usageMismatch =
    answer.promptTokens !== undefined && answer.promptTokens < floor * prompt.tokens

  const base = {
    missing,
    foreign,
    unknownNeedles,
    minTtftMs: minTtft,
    impossibleTtft,
    usageMismatch,
  }
  if (foreign.length > 0) {
    const steps = [...new Set(foreign.map((f) => `#${f.step}`))].join(', ')
    return {
      ...base,
      kind: 'foreign-content',
      detail: `the answer quotes ${foreign.length} marker(s) of earlier probe request(s) ${steps}: it was built from another request's memory`,
    }
  }
  if (impossibleTtft) {
    return {
      ...base,
      kind: 'impossible-ttft',
      detail: `first token after ${answer.ttftMs?.toFixed(1)} ms; prefilling ${fmt(uncached)} tokens at ≤ ${fmt(input.maxPrefill)} tok/s takes ≥ ${minTtft.toFixed(1)} ms`,
    }
  }
  if (missing.length > 0) {
    const which = missing.length === 2 ? 'both needles' : `the ${missing[0]} needle`
    const empty = answer.reasoning === '' && answer.content === '' ? ' (the answer was empty)' : ''
    return { ...base, kind: 'missing-needle', detail: `the answer lacks ${which}${empty}` }
  }
  if (usageMismatch) {
    return {
      ...base,
      kind: 'usage-mismatch',
      detail: `the target counted ${fmt(answer.promptTokens ?? 0)} prompt tokens for ${fmt(prompt.tokens)} sent (< ${Math.round(floor * 100)}%): the prompt was cut`,
    }
  }
  return { ...base, kind: 'ok', detail: 'both needles back, nothing foreign' }
}

/** Which of this prompt's needles the answer names, and which markers it quotes that are not its own. */
function readMarkers(
  input: Pick<JudgeInput, 'prompt' | 'answer' | 'earlier'>,
): Pick<Judgement, 'missing' | 'foreign' | 'unknownNeedles'> {
  const { prompt, answer, earlier } = input
  const text = `${answer.reasoning}\n${answer.content}`.toUpperCase()
  const missing: ('start' | 'end')[] = []
  if (!text.includes(prompt.startNeedle.toUpperCase())) missing.push('start')
  if (!text.includes(prompt.endNeedle.toUpperCase())) missing.push('end')
  const foreign: { marker: string; step: number }[] = []
  for (const [marker, step] of earlier) if (text.includes(marker)) foreign.push({ marker, step })
  const own = new Set([prompt.startNeedle.toUpperCase(), prompt.endNeedle.toUpperCase()])
  const unknownNeedles = [
    ...new Set([...text.matchAll(NEEDLE_PATTERN)].map((m) => m[0].toUpperCase())),
  ].filter((n) => !own.has(n) && !earlier.has(n))
  return { missing, foreign, unknownNeedles }
}
