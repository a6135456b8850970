/**
 * @module The probe's report: verdict and exit code, the bracket around the real limit, leak and
 * timing flags, a recommended ceiling and a ready profile for the guard (`--json` prints it; the
 * text form is in `render.ts`).
 *
 * It never holds answer text: an answer that leaked holds another tenant's prompt, and a report is
 * pasted into tickets and CI logs. Needles and tags are random and safe to show.
 */
import type { GuardSign } from './guard-sign'
import type { StepKind } from './judge'
import { fmt } from './numbers'
import type { ProbePlan } from './search'
import type { ProbeSettings } from './settings'
import type { ProbeStep } from './step'

/** The verdict: exit 0, 1 or 2. */
export type ProbeVerdict =
  /** The deployment served the top of its advertised window correctly, with no leak. */
  | 'safe'
  /** A real limit below the advertised window, or any leak or impossible TTFT. */
  | 'unsafe'
  /**
   * The endpoint is a workers-ai-guard Worker (or `guardAi`) that answered every prompt under its
   * ceiling correctly and refused every one over it itself, with no leak and no impossible TTFT: its
   * clients are safe (exit 0), and what was measured is the guard's ceiling, not the engine's pool.
   */
  | 'guarded'
  /** No conclusion: a fatal error, nothing answered correctly, or the budget ran out first. */
  | 'inconclusive'

/** The guard profile fields the probe measures. */
export interface ProbeProfile {
  contextWindow: number
  kvPoolTokens: number
  maxPrefillTokensPerSecond: number
}

/** What the probe saw of a workers-ai-guard endpoint between it and the engine. */
export interface ProbeGuardFinding {
  /** How the endpoint showed it is the guard. */
  signs: GuardSign[]
  /** Prompts the guard refused itself (`context_length_exceeded`), before any engine call. */
  refusals: number
  /** Answers the guard withheld (`response_quarantined`): the engine behind it failed them. */
  quarantines: number
  /** What was measured, and where to point the probe to measure the engine. */
  note: string
}

/** The whole report (`--json` prints exactly this). */
export interface ProbeReport {
  version: 1
  verdict: ProbeVerdict
  exitCode: 0 | 1 | 2
  /** One paragraph for humans. */
  summary: string
  target: string
  model: string
  /** Replays the run's needles and filler with `--seed`. */
  seed: number
  advertisedWindow: number
  /** Largest length the search aimed at (window less output and template room, in o200k). */
  top: number
  /** Largest length answered correctly. */
  largestOk: { tokens: number; reportedPromptTokens: number | null } | null
  /** Smallest length that failed, and how. */
  smallestFailure: { tokens: number; kind: StepKind; detail: string } | null
  /** Whether the limit is pinned to within the tolerance (or the whole window passed). */
  converged: boolean
  tolerance: number
  /** An answer quoted an earlier probe request: cross-request leakage, proven by content. */
  leak: boolean
  /** A first token came faster than any real prefill: the prompt was not processed. */
  impossibleTtft: boolean
  /**
   * Set when the endpoint is a workers-ai-guard Worker: the run measured the guard's ceiling, so
   * `recommendation` and `profile` are null (feeding its own ceiling back would only shrink it).
   */
  guard: ProbeGuardFinding | null
  /** Fastest prefill observed on correct answers (tokens ÷ TTFT), a lower bound of the real rate. */
  observedPrefillTokensPerSecond: number | null
  recommendation: {
    /** Largest prompt (model tokens) to allow: the pool figure less the output reserve. */
    ceiling: number
    /** The measured good length (model tokens) less the margin. */
    kvPoolTokens: number
    margin: number
    outputReserve: number
    /** Whether the figures are in the target's own tokens (`usage`) or o200k (no usage reported). */
    basis: 'reported' | 'o200k'
  } | null
  /** For the guard's `models` option (null through a guard: see `guard`). */
  profile: ProbeProfile | null
  /** `profile` as a ready TypeScript snippet. */
  profileSnippet: string | null
  budget: {
    requests: number
    maxRequests: number
    /** Prompt tokens sent. */
    promptTokens: number
    /** Prompt tokens sent plus `maxOutput` per request: what the cap counts. */
    chargedTokens: number
    maxTokensTotal: number
    /** Which cap ended the run early, if one did. */
    stoppedBy: 'max-requests' | 'max-tokens-total' | null
  }
  /** Why the run could not go on, if it could not. */
  fatal: string | null
  steps: ProbeStep[]
}

/** What {@link buildReport} needs from a run: the settings it ran with, and what it found. */
export type RunRecord = Pick<
  ProbeSettings,
  | 'window'
  | 'tolerance'
  | 'maxPrefill'
  | 'margin'
  | 'outputReserve'
  | 'maxRequests'
  | 'maxTokensTotal'
  | 'maxOutput'
> & {
  target: string
  model: string
  seed: number
  /** Largest length the search aimed at. */
  top: number
  converged: boolean
  stoppedBy: 'max-requests' | 'max-tokens-total' | null
  fatal: string | null
  steps: ProbeStep[]
}

/**
 * Where to point the probe to measure the engine instead of the guard: Workers AI's own
 * OpenAI-compatible REST endpoint, or the simulator alone (sim/wrangler.toml, `npm run sim`).
 */
export const UPSTREAM_HINT =
  'To measure the engine, point --url at the upstream instead: Workers AI’s OpenAI-compatible endpoint ' +
  'https://api.cloudflare.com/client/v4/accounts/<account-id>/ai/v1 with an API token as --key, or ' +
  'locally the simulator alone: `npm run sim`, then --url http://localhost:8787/v1 (stop `npm start` ' +
  'first: both listen on port 8787; any --key, it names the simulated account).'

function guardFinding(steps: readonly ProbeStep[]): ProbeGuardFinding | null {
  const signs = [...new Set(steps.flatMap((s) => (s.guard === undefined ? [] : [s.guard])))]
  if (signs.length === 0) return null
  const refusals = steps.filter((s) => s.guard === 'refusal').length
  const quarantines = steps.filter((s) => s.guard === 'quarantine').length
  const notes = [
    'The endpoint is a workers-ai-guard Worker, so this run measured the guard’s own ceiling (it refuses, before the engine, every prompt its profile says the engine cannot hold), not the engine’s KV pool; no profile is recommended from it.',
  ]
  if (quarantines > 0) {
    notes.push(
      `The guard withheld ${quarantines} answer(s) (response_quarantined): prompts it admitted failed in the engine behind it, so its profile allows more than the engine serves.`,
    )
  }
  notes.push(UPSTREAM_HINT)
  return { signs: signs.sort(), refusals, quarantines, note: notes.join(' ') }
}

const under = (n: number): string => fmt(n).replace(/,/g, '_')

/** The exit code of each verdict. */
const EXIT_CODES: Record<ProbeVerdict, ProbeReport['exitCode']> = {
  safe: 0,
  guarded: 0,
  unsafe: 1,
  inconclusive: 2,
}

/**
 * Turns a finished run into its report: verdict, exit code, recommendation and profile.
 *
 * @example
 * const report = buildReport(run)
 * process.exitCode = report.exitCode
 */
export function buildReport(run: RunRecord): ProbeReport {
  const steps = run.steps
  const { largestOk, smallestFailure } = limitBracket(steps)
  const leak = steps.some((s) => s.foreignFrom.length > 0)
  const impossibleTtft = steps.some((s) => s.impossibleTtft)
  const guard = guardFinding(steps)
  const verdict = verdictOf(run, { leak, impossibleTtft, guard, largestOk, smallestFailure })
  const advice = largestOk && guard === null ? recommend(run, largestOk) : NO_ADVICE
  const promptTokens = steps.reduce((n, s) => n + s.tokens, 0)
  const report: ProbeReport = {
    version: 1,
    verdict,
    exitCode: EXIT_CODES[verdict],
    summary: '',
    target: run.target,
    model: run.model,
    seed: run.seed,
    advertisedWindow: run.window,
    top: run.top,
    largestOk,
    smallestFailure,
    converged: run.converged,
    tolerance: run.tolerance,
    leak,
    impossibleTtft,
    guard,
    observedPrefillTokensPerSecond: observedPrefill(steps),
    ...advice,
    budget: {
      requests: steps.length,
      maxRequests: run.maxRequests,
      promptTokens,
      chargedTokens: promptTokens + steps.length * run.maxOutput,
      maxTokensTotal: run.maxTokensTotal,
      stoppedBy: run.stoppedBy,
    },
    fatal: run.fatal,
    steps,
  }
  report.summary = summarize(report)
  return report
}

/** The largest correct length and the smallest failed one, from the steps themselves. */
function limitBracket(
  steps: readonly ProbeStep[],
): Pick<ProbeReport, 'largestOk' | 'smallestFailure'> {
  let okStep: ProbeStep | undefined
  let failStep: ProbeStep | undefined
  for (const s of steps) {
    if (s.kind === 'ok' && (okStep === undefined || s.tokens > okStep.tokens)) okStep = s
    if (s.kind !== 'ok' && (failStep === undefined || s.tokens < failStep.tokens)) failStep = s
  }
  return {
    largestOk: okStep
      ? { tokens: okStep.tokens, reportedPromptTokens: okStep.reportedPromptTokens }
      : null,
    smallestFailure: failStep
      ? { tokens: failStep.tokens, kind: failStep.kind, detail: failStep.detail }
      : null,
  }
}

type Findings = Pick<
  ProbeReport,
  'leak' | 'impossibleTtft' | 'guard' | 'largestOk' | 'smallestFailure'
>

function verdictOf(run: RunRecord, f: Findings): ProbeVerdict {
  if (f.leak || f.impossibleTtft) return 'unsafe'
  if (run.fatal !== null) return 'inconclusive'
  if (
    f.guard !== null &&
    f.largestOk &&
    f.guard.refusals > 0 &&
    run.steps.every((s) => s.kind === 'ok' || s.guard === 'refusal')
  ) {
    // Everything over the guard's ceiling was refused by the guard itself and everything under it
    // answered correctly: a client of this endpoint cannot get a wrong or leaked answer by length.
    return 'guarded'
  }
  if (f.smallestFailure && f.largestOk) return 'unsafe'
  if (!f.smallestFailure && f.largestOk && f.largestOk.tokens >= run.top) return 'safe'
  return 'inconclusive'
}

type Advice = Pick<ProbeReport, 'recommendation' | 'profile' | 'profileSnippet'>

const NO_ADVICE: Advice = { recommendation: null, profile: null, profileSnippet: null }

/** The ceiling and profile the largest correct length supports, less the margin and reserve. */
function recommend(run: RunRecord, largestOk: NonNullable<ProbeReport['largestOk']>): Advice {
  const basis = largestOk.reportedPromptTokens === null ? 'o200k' : 'reported'
  const good = largestOk.reportedPromptTokens ?? largestOk.tokens
  const kvPoolTokens = Math.floor(good * (1 - run.margin))
  const ceiling = Math.max(0, Math.min(run.window, kvPoolTokens) - run.outputReserve)
  const profile: ProbeProfile = {
    contextWindow: run.window,
    kvPoolTokens,
    maxPrefillTokensPerSecond: run.maxPrefill,
  }
  return {
    recommendation: {
      ceiling,
      kvPoolTokens,
      margin: run.margin,
      outputReserve: run.outputReserve,
      basis,
    },
    profile,
    profileSnippet: profileSnippet(run.model, profile),
  }
}

/** The profile as the `models` entry of a guard's options. */
function profileSnippet(model: string, profile: ProbeProfile): string {
  const rate = profile.maxPrefillTokensPerSecond
  return [
    'models: {',
    `  '${model}': {`,
    `    contextWindow: ${under(profile.contextWindow)},`,
    `    kvPoolTokens: ${under(profile.kvPoolTokens)},`,
    `    maxPrefillTokensPerSecond: ${Number.isFinite(rate) ? under(rate) : 'Infinity'},`,
    '  },',
    '},',
  ].join('\n')
}

/** Fastest uncached prefill among correct answers (tokens ÷ TTFT): a lower bound of the real rate. */
function observedPrefill(steps: readonly ProbeStep[]): number | null {
  let observed: number | null = null
  for (const s of steps) {
    if (s.kind !== 'ok' || s.ttftMs === null || s.ttftMs <= 0) continue
    const rate = (s.tokens - (s.cachedTokens ?? 0)) / (s.ttftMs / 1000)
    observed = Math.max(observed ?? 0, Math.round(rate))
  }
  return observed
}

function summarize(r: ProbeReport): string {
  const window = `the advertised ${fmt(r.advertisedWindow)}-token window`
  const parts: string[] = []
  if (r.verdict === 'guarded') {
    const refused = r.smallestFailure ? ` (the smallest at ${fmt(r.smallestFailure.tokens)})` : ''
    parts.push(
      `GUARDED: answered correctly up to ${fmt(r.largestOk?.tokens ?? 0)} tokens; the guard itself refused all ${r.guard?.refusals ?? 0} longer prompts${refused} with context_length_exceeded, before the engine; no leak, no impossible TTFT. Its clients are kept under its ceiling.`,
    )
  } else if (r.verdict === 'safe') {
    parts.push(
      `SAFE: answered correctly at ${fmt(r.largestOk?.tokens ?? 0)} tokens, the top of ${window}; no leak, no impossible TTFT.`,
    )
  } else if (r.verdict === 'unsafe') {
    if (r.largestOk && r.smallestFailure) {
      parts.push(
        `UNSAFE: correct up to ${fmt(r.largestOk.tokens)} tokens, wrong at ${fmt(r.smallestFailure.tokens)} (${r.smallestFailure.kind}) — the real limit is below ${window}.`,
      )
    } else parts.push('UNSAFE:')
    if (r.leak)
      parts.push(
        'LEAK: answers quoted earlier probe requests (content from another request’s memory).',
      )
    if (r.impossibleTtft)
      parts.push('Impossible TTFT: a long prompt was answered faster than any real prefill.')
    if (!r.leak && !r.impossibleTtft && r.smallestFailure) {
      parts.push(
        r.smallestFailure.kind === 'error'
          ? 'No leak seen: longer prompts were refused with an error.'
          : `No leak seen: longer prompts failed as ${r.smallestFailure.kind}.`,
      )
    }
  } else {
    const why =
      r.fatal ??
      (r.budget.stoppedBy
        ? `the ${r.budget.stoppedBy} budget ran out before a conclusion`
        : r.largestOk === null
          ? `no prompt was answered correctly (${r.smallestFailure?.kind ?? 'nothing sent'}: ${r.smallestFailure?.detail ?? ''})`
          : 'the target answered inconsistently across lengths')
    parts.push(`INCONCLUSIVE: ${why}.`)
  }
  if (r.recommendation && r.verdict !== 'safe') {
    parts.push(`Recommended ceiling: ${fmt(r.recommendation.ceiling)} tokens.`)
  }
  return parts.join(' ')
}

/** A dry run: what the probe would send, and whether the budget covers it. */
export interface DryRunReport {
  version: 1
  dryRun: true
  target: string
  model: string
  advertisedWindow: number
  plan: ProbePlan
  tolerance: number
  maxOutput: number
  budget: { maxRequests: number; maxTokensTotal: number }
  /** Whether the worst case fits both caps (else the run may stop early with exit 2). */
  fitsBudget: boolean
}
