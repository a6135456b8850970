/**
 * @module The probe's report: verdict and exit code, the bracket around the real limit, leak and
 * timing flags, a recommended ceiling and a ready profile for the guard — as an object (`--json`)
 * and as text.
 *
 * It never holds answer text: an answer that leaked holds another tenant's prompt, and a report is
 * pasted into tickets and CI logs. Needles and tags are random and safe to show.
 */

import { describeGuardSign, type GuardSign } from './guard-sign'
import type { StepKind } from './judge'
import type { ProbePlan } from './search'
import type { ProbeErrorKind } from './transport-error'

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

/** What {@link buildReport} needs from a run. */
export interface RunRecord {
  target: string
  model: string
  seed: number
  window: number
  top: number
  tolerance: number
  maxPrefill: number
  margin: number
  outputReserve: number
  maxRequests: number
  maxTokensTotal: number
  maxOutput: number
  converged: boolean
  stoppedBy: 'max-requests' | 'max-tokens-total' | null
  fatal: string | null
  steps: ProbeStep[]
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')

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

/**
 * Turns a finished run into its report: verdict, exit code, recommendation and profile.
 *
 * @example
 * const report = buildReport(run)
 * process.exitCode = report.exitCode
 */
export function buildReport(run: RunRecord): ProbeReport {
  const judged = run.steps
  let okStep: ProbeStep | undefined
  let failStep: ProbeStep | undefined
  for (const s of judged) {
    if (s.kind === 'ok' && (okStep === undefined || s.tokens > okStep.tokens)) okStep = s
    if (s.kind !== 'ok' && (failStep === undefined || s.tokens < failStep.tokens)) failStep = s
  }
  const leak = judged.some((s) => s.foreignFrom.length > 0)
  const impossibleTtft = judged.some((s) => s.impossibleTtft)
  const guard = guardFinding(judged)
  const largestOk = okStep
    ? { tokens: okStep.tokens, reportedPromptTokens: okStep.reportedPromptTokens }
    : null
  const smallestFailure = failStep
    ? { tokens: failStep.tokens, kind: failStep.kind, detail: failStep.detail }
    : null

  let verdict: ProbeVerdict
  if (leak || impossibleTtft) verdict = 'unsafe'
  else if (run.fatal !== null) verdict = 'inconclusive'
  else if (
    guard !== null &&
    largestOk &&
    guard.refusals > 0 &&
    judged.every((s) => s.kind === 'ok' || s.guard === 'refusal')
  ) {
    // Everything over the guard's ceiling was refused by the guard itself and everything under it
    // answered correctly: a client of this endpoint cannot get a wrong or leaked answer by length.
    verdict = 'guarded'
  } else if (smallestFailure && largestOk) verdict = 'unsafe'
  else if (!smallestFailure && largestOk && largestOk.tokens >= run.top) verdict = 'safe'
  else verdict = 'inconclusive'
  const exitCode = verdict === 'safe' || verdict === 'guarded' ? 0 : verdict === 'unsafe' ? 1 : 2

  let recommendation: ProbeReport['recommendation'] = null
  let profile: ProbeProfile | null = null
  let profileSnippet: string | null = null
  if (largestOk && guard === null) {
    const basis = largestOk.reportedPromptTokens === null ? 'o200k' : 'reported'
    const good = largestOk.reportedPromptTokens ?? largestOk.tokens
    const kvPoolTokens = Math.floor(good * (1 - run.margin))
    const ceiling = Math.max(0, Math.min(run.window, kvPoolTokens) - run.outputReserve)
    recommendation = {
      ceiling,
      kvPoolTokens,
      margin: run.margin,
      outputReserve: run.outputReserve,
      basis,
    }
    profile = {
      contextWindow: run.window,
      kvPoolTokens,
      maxPrefillTokensPerSecond: run.maxPrefill,
    }
    profileSnippet = [
      'models: {',
      `  '${run.model}': {`,
      `    contextWindow: ${under(profile.contextWindow)},`,
      `    kvPoolTokens: ${under(profile.kvPoolTokens)},`,
      `    maxPrefillTokensPerSecond: ${Number.isFinite(run.maxPrefill) ? under(run.maxPrefill) : 'Infinity'},`,
      '  },',
      '},',
    ].join('\n')
  }

  let observed: number | null = null
  for (const s of judged) {
    if (s.kind !== 'ok' || s.ttftMs === null || s.ttftMs <= 0) continue
    const rate = (s.tokens - (s.cachedTokens ?? 0)) / (s.ttftMs / 1000)
    observed = Math.max(observed ?? 0, Math.round(rate))
  }

  const promptTokens = judged.reduce((n, s) => n + s.tokens, 0)
  const report: ProbeReport = {
    version: 1,
    verdict,
    exitCode,
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
    observedPrefillTokensPerSecond: observed,
    recommendation,
    profile,
    profileSnippet,
    budget: {
      requests: judged.length,
      maxRequests: run.maxRequests,
      promptTokens,
      chargedTokens: promptTokens + judged.length * run.maxOutput,
      maxTokensTotal: run.maxTokensTotal,
      stoppedBy: run.stoppedBy,
    },
    fatal: run.fatal,
    steps: judged,
  }
  report.summary = summarize(report)
  return report
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

/**
 * The report as text for a terminal or a log: the step table, the findings, the recommendation and
 * the profile snippet.
 *
 * @example
 * console.log(renderReport(report))
 */
export function renderReport(r: ProbeReport): string {
  const out: string[] = []
  out.push(`workers-ai-guard probe · ${r.target} · ${r.model} · seed ${r.seed}`, '')
  out.push('    #       tokens      counted    TTFT ms   min ms  result')
  for (const s of r.steps) {
    const ttft = s.ttftMs === null ? '—' : s.ttftMs.toFixed(1)
    const counted = s.reportedPromptTokens === null ? '—' : fmt(s.reportedPromptTokens)
    const what = s.kind === 'ok' ? 'ok' : `${s.kind}: ${s.detail}`
    out.push(
      `  ${String(s.index).padStart(3)}  ${fmt(s.tokens).padStart(11)}  ${counted.padStart(11)}  ${ttft.padStart(9)}  ${s.minTtftMs.toFixed(1).padStart(7)}  ${what}`,
    )
  }
  out.push('')
  const row = (label: string, value: string): void => {
    out.push(`${label.padEnd(17)}${value}`)
  }
  if (r.guard) {
    row(
      'endpoint',
      `a workers-ai-guard Worker (seen: ${r.guard.signs.map(describeGuardSign).join(', ')}) — this measures the guard’s ceiling, not the engine’s pool`,
    )
  }
  row('verdict', `${r.verdict.toUpperCase()} (exit ${r.exitCode})`)
  row('advertised', `${fmt(r.advertisedWindow)} tokens (probed up to ${fmt(r.top)})`)
  row(
    'largest correct',
    r.largestOk
      ? `${fmt(r.largestOk.tokens)} tokens${r.largestOk.reportedPromptTokens === null ? '' : ` (target counted ${fmt(r.largestOk.reportedPromptTokens)})`}`
      : 'none',
  )
  row(
    'smallest failed',
    r.smallestFailure
      ? `${fmt(r.smallestFailure.tokens)} tokens — ${r.smallestFailure.kind}: ${r.smallestFailure.detail}`
      : 'none',
  )
  if (r.smallestFailure && r.largestOk) {
    row(
      'limit pinned',
      r.converged ? `to within ${r.tolerance * 100}%` : 'no (stopped before the tolerance)',
    )
  }
  const leakFrom = [...new Set(r.steps.flatMap((s) => s.foreignFrom))]
    .sort((a, b) => a - b)
    .map((n) => `#${n}`)
  row('leak', r.leak ? `YES — answers quoted earlier requests ${leakFrom.join(', ')}` : 'none seen')
  row('impossible TTFT', r.impossibleTtft ? 'YES' : 'none seen')
  if (r.observedPrefillTokensPerSecond !== null) {
    row(
      'observed prefill',
      `≥ ${fmt(r.observedPrefillTokensPerSecond)} tok/s (fastest correct answer)`,
    )
  }
  row(
    'budget',
    `${r.budget.requests}/${r.budget.maxRequests} requests, ${fmt(r.budget.chargedTokens)}/${fmt(r.budget.maxTokensTotal)} tokens${r.budget.stoppedBy ? ` — stopped by ${r.budget.stoppedBy}` : ''}`,
  )
  if (r.fatal) row('stopped', r.fatal)
  if (r.recommendation) {
    const rec = r.recommendation
    const unit = rec.basis === 'reported' ? 'target tokens' : 'o200k tokens'
    row(
      'recommended',
      `ceiling ${fmt(rec.ceiling)} ${unit} (pool ${fmt(rec.kvPoolTokens)} = largest correct − ${rec.margin * 100}%, less ${fmt(rec.outputReserve)} output reserve)`,
    )
  }
  if (r.guard && r.largestOk) {
    row('recommended', 'none: this is the guard’s own ceiling (probe the upstream for a profile)')
  }
  out.push('', r.summary)
  if (r.guard) out.push('', r.guard.note)
  if (r.profileSnippet) {
    out.push('', 'Profile for guardAi / aiGuard (`models` option):', '', r.profileSnippet)
  }
  return `${out.join('\n')}\n`
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

/**
 * The dry-run plan as text.
 *
 * @example
 * console.log(renderDryRun(planProbe({ window: 1_048_576 }, 'http://localhost:8787/v1', model)))
 */
export function renderDryRun(d: DryRunReport): string {
  const p = d.plan
  return [
    `workers-ai-guard probe · dry run (nothing is sent) · ${d.target} · ${d.model}`,
    '',
    `advertised window   ${fmt(d.advertisedWindow)} tokens; probing up to ${fmt(p.top)} (window − ${fmt(d.maxOutput)} output − template room)`,
    `growth lengths      ${p.growth.map(fmt).join(', ')}`,
    `then bisection      up to ${p.maxBisectionSteps} steps between the largest success and the smallest failure (tolerance ${d.tolerance * 100}%)`,
    `worst case          ${p.worstCaseRequests} requests, ${fmt(p.worstCaseTokens)} tokens (prompts + ${fmt(d.maxOutput)} output each; retries extra)`,
    `budget              ${d.budget.maxRequests} requests, ${fmt(d.budget.maxTokensTotal)} tokens — ${d.fitsBudget ? 'covers the worst case' : 'may run out before a conclusion (exit 2): raise --max-requests / --max-tokens-total'}`,
    '',
  ].join('\n')
}
