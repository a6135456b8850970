/**
 * @module runProbe: finds, by reading the answers, how long a prompt a deployment really serves.
 *
 * Why: the incident's pool was smaller than the advertised window, known before launch, and the
 * pre-launch tests checked status codes and speed at long contexts, never the answers. This is the
 * test that was missing: grow, then bisect, the prompt length; judge every answer on its content,
 * its timing and its token count; stop within a hard budget; recommend a ceiling below what passed.
 */

import { judgeAnswer } from './judge'
import { loadPromptBuilder } from './prompt-builder'
import { randomSeed, seededRng } from './random'
import { buildReport, type DryRunReport, type ProbeReport, type ProbeStep } from './report'
import { planSearch, type SearchBounds, type SearchPoint, searchState } from './search'
import {
  MIN_PROBE_TOKENS,
  type ProbeOptions,
  type ProbeSettings,
  resolveProbeSettings,
  topLength,
} from './settings'
import type { ProbeTransport } from './transport'
import { ProbeTransportError } from './transport-error'

/** The target's count ratio, the o200k length it was measured on, and a top that already passed. */
interface Learned {
  ratio: number
  measuredAt?: number
  passedTop?: number
}

function bounds(settings: ProbeSettings, minTokens: number, learned: Learned): SearchBounds {
  return {
    start: settings.start,
    top:
      learned.passedTop ??
      Math.max(settings.start, topLength(settings, learned.ratio, learned.measuredAt)),
    tolerance: settings.tolerance,
    minTokens,
  }
}

/**
 * The plan of a run — lengths, worst-case requests and tokens, budget fit — without sending
 * anything or loading the tokenizer (`--dry-run`).
 *
 * @example
 * const plan = planProbe({ window: 1_048_576 }, { target: 'http://localhost:8787/v1', model })
 * plan.fitsBudget // true with the defaults
 */
export function planProbe(
  options: Omit<ProbeOptions, 'transport'>,
  describe: { target: string; model: string },
): DryRunReport {
  const settings = resolveProbeSettings(options)
  const plan = planSearch(bounds(settings, MIN_PROBE_TOKENS, { ratio: 1 }), settings.maxOutput)
  return {
    version: 1,
    dryRun: true,
    target: describe.target,
    model: describe.model,
    advertisedWindow: settings.window,
    plan,
    tolerance: settings.tolerance,
    maxOutput: settings.maxOutput,
    budget: { maxRequests: settings.maxRequests, maxTokensTotal: settings.maxTokensTotal },
    fitsBudget:
      plan.worstCaseRequests <= settings.maxRequests &&
      plan.worstCaseTokens <= settings.maxTokensTotal,
  }
}

/**
 * Probes the deployment behind `options.transport` and returns the report. Rejects only on bad
 * options (a plain `Error` naming the option); every failure of the target ends up in the report.
 *
 * @example
 * const report = await runProbe({ transport: urlTransport({ url, apiKey, model }), window: 1_048_576 })
 * console.log(report.summary) // exit with report.exitCode
 */
export async function runProbe(options: ProbeOptions): Promise<ProbeReport> {
  const settings = resolveProbeSettings(options)
  const transport: ProbeTransport = options.transport
  const seed = settings.seed ?? randomSeed()
  const rng = seededRng(seed)
  const builder = await loadPromptBuilder()
  const minTokens = Math.max(builder.minTokens, MIN_PROBE_TOKENS)
  const planned = planSearch(
    bounds(settings, minTokens, { ratio: 1 }),
    settings.maxOutput,
  ).worstCaseRequests
  // Every marker ever sent → the step that sent it: found in a later answer, it is a leak.
  const earlier = new Map<string, number>()
  const steps: ProbeStep[] = []
  const points: SearchPoint[] = []
  const learned: Learned = { ratio: 1 }
  let charged = 0
  let reached = false
  let stoppedBy: 'max-requests' | 'max-tokens-total' | null = null
  let fatal: string | null = null
  let state = searchState(points, bounds(settings, minTokens, learned))

  run: while (!state.finished) {
    const tokens = state.next as number
    let step: ProbeStep | undefined
    for (let attempt = 0; ; attempt++) {
      if (steps.length >= settings.maxRequests) {
        stoppedBy = 'max-requests'
        break run
      }
      if (charged + tokens + settings.maxOutput > settings.maxTokensTotal) {
        stoppedBy = 'max-tokens-total'
        break run
      }
      const prompt = await builder.build(tokens, rng)
      const index = steps.length + 1
      options.onProgress?.({
        type: 'send',
        index,
        tokens,
        planned: Math.max(planned, index),
        largestOk: state.largestOk,
        ...(state.smallestFail === undefined ? {} : { smallestFail: state.smallestFail }),
      })
      charged += tokens + settings.maxOutput
      step = await sendAndJudge(transport, prompt, index, attempt, earlier, settings)
      for (const marker of [prompt.startNeedle, prompt.endNeedle, prompt.tag]) {
        earlier.set(marker.toUpperCase(), index)
      }
      steps.push(step)
      options.onProgress?.({
        type: 'result',
        step,
        planned: Math.max(planned, index),
        largestOk: Math.max(state.largestOk, step.kind === 'ok' ? tokens : 0),
        ...(state.smallestFail === undefined && step.kind === 'ok'
          ? {}
          : {
              smallestFail: Math.min(
                state.smallestFail ?? tokens,
                step.kind === 'ok' ? Infinity : tokens,
              ),
            }),
      })
      const error = step.error
      if (error === undefined || (error.kind !== 'network' && error.kind !== 'timeout'))
        reached = true
      if (error && isFatal(error)) {
        fatal = `${error.message} — check --url, --key and --model`
        break run
      }
      if (error?.kind === 'network' && !reached && attempt >= settings.retries) {
        fatal = `could not reach ${transport.target}: ${error.message}`
        break run
      }
      // A refused connection after the target answered is a server that went away (a crash, a dev
      // server reloading), not a length it cannot serve: judging it would "pin" a limit that is not.
      if (error?.kind === 'network' && attempt >= settings.retries && REFUSED.test(error.message)) {
        fatal = `${transport.target} stopped accepting connections (${error.message}); restart it and probe again`
        break run
      }
      if (!(error && isRetryable(error) && attempt < settings.retries)) break
    }
    if (step === undefined) break
    points.push({ tokens, ok: step.kind === 'ok' })
    // A correct answer at the top settles the top. Re-deriving it from that answer's own ratio would
    // move it by the ratio's noise and send yet another near-top prompt, each a fresh chance to
    // overshoot the window (up to six in a row were seen at a 32k window).
    if (step.kind === 'ok' && tokens >= bounds(settings, minTokens, learned).top) {
      learned.passedTop = tokens
    }
    if (step.kind === 'ok' && step.reportedPromptTokens !== null && tokens >= state.largestOk) {
      // The target's tokens per o200k token at the largest good length: the top of the window in
      // o200k terms, so a tokenizer that counts more is not failed for the window it enforces.
      learned.ratio = step.reportedPromptTokens / tokens
      learned.measuredAt = tokens
    }
    state = searchState(points, bounds(settings, minTokens, learned))
  }

  return buildReport({
    target: transport.target,
    model: transport.model,
    seed,
    window: settings.window,
    top: bounds(settings, minTokens, learned).top,
    tolerance: settings.tolerance,
    maxPrefill: settings.maxPrefill,
    margin: settings.margin,
    outputReserve: settings.outputReserve,
    maxRequests: settings.maxRequests,
    maxTokensTotal: settings.maxTokensTotal,
    maxOutput: settings.maxOutput,
    converged: state.finished && state.converged,
    stoppedBy,
    fatal,
    steps,
  })
}

/** A connection refused (Node's fetch puts the code in the cause, which the message carries). */
const REFUSED = /ECONNREFUSED|connection refused/i

/** Milliseconds to the microsecond: enough for any TTFT verdict, readable in JSON. */
function round(ms: number): number {
  return Math.round(ms * 1000) / 1000
}

function isFatal(error: NonNullable<ProbeStep['error']>): boolean {
  return new ProbeTransportError(error.kind, error.message, statusOf(error)).fatal
}

function isRetryable(error: NonNullable<ProbeStep['error']>): boolean {
  return new ProbeTransportError(error.kind, error.message, statusOf(error)).retryable
}

function statusOf(error: NonNullable<ProbeStep['error']>): { status?: number } {
  return error.status === undefined ? {} : { status: error.status }
}

async function sendAndJudge(
  transport: ProbeTransport,
  prompt: Awaited<ReturnType<Awaited<ReturnType<typeof loadPromptBuilder>>['build']>>,
  index: number,
  attempt: number,
  earlier: ReadonlyMap<string, number>,
  settings: ProbeSettings,
): Promise<ProbeStep> {
  try {
    const answer = await transport.send({ prompt: prompt.text, maxTokens: settings.maxOutput })
    const j = judgeAnswer({
      prompt,
      answer,
      earlier,
      maxPrefill: settings.maxPrefill,
      usageFloor: settings.usageFloor,
    })
    return {
      index,
      tokens: prompt.tokens,
      kind: j.kind,
      detail:
        j.kind === 'missing-needle' && answer.finishReason === 'length'
          ? `${j.detail} (cut at max_tokens ${settings.maxOutput})`
          : j.detail,
      attempt,
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
  } catch (caught) {
    const error =
      caught instanceof ProbeTransportError
        ? caught
        : new ProbeTransportError(
            'upstream',
            caught instanceof Error ? caught.message : String(caught),
          )
    return {
      index,
      tokens: prompt.tokens,
      kind: 'error',
      detail: error.message,
      attempt,
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
}
