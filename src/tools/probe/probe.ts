/**
 * @module runProbe: finds, by reading the answers, how long a prompt a deployment really serves.
 *
 * Why: a deployment can serve less than its advertised window and still answer every request with a
 * 200 at normal speed; only the answers show it. So: grow, then bisect, the prompt length; judge
 * every answer on its content, its timing and its token count; stop within a hard budget; recommend
 * a ceiling below what passed.
 */
import type { ProbeProgress } from './progress'
import { loadPromptBuilder, type PromptBuilder } from './prompt-builder'
import { type Rng, randomSeed, seededRng } from './random'
import { buildReport, type DryRunReport, type ProbeReport, type RunRecord } from './report'
import {
  bracket,
  planSearch,
  type SearchBounds,
  type SearchPoint,
  type SearchState,
  searchState,
} from './search'
import {
  MIN_PROBE_TOKENS,
  type ProbeOptions,
  type ProbeSettings,
  resolveProbeSettings,
  topLength,
} from './settings'
import { type ProbeStep, sendStep } from './step'
import type { ProbeTransport } from './transport'
import { isFatal, isRetryable } from './transport-error'

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
  const seed = settings.seed ?? randomSeed()
  const rng = seededRng(seed)
  const builder = await loadPromptBuilder()
  const { transport, onProgress } = options
  const run = new ProbeRun({ settings, transport, builder, rng, onProgress })
  await run.search()
  return buildReport({ ...settings, ...run.record(), seed })
}

/** What a {@link ProbeRun} works with. */
interface RunSetup {
  settings: ProbeSettings
  transport: ProbeTransport
  builder: PromptBuilder
  rng: Rng
  onProgress?: (event: ProbeProgress) => void
}

/** A connection refused (Node's fetch puts the code in the cause, which the message carries). */
const REFUSED = /ECONNREFUSED|connection refused/i

/** One run's state: the steps sent, what the search and the judge learned, and why it stopped. */
class ProbeRun {
  readonly #setup: RunSetup
  readonly #minTokens: number
  /** Worst-case requests of the plan, for the progress bar. */
  readonly #planned: number
  readonly #steps: ProbeStep[] = []
  readonly #points: SearchPoint[] = []
  // Every marker ever sent → the step that sent it: found in a later answer, it is a leak.
  readonly #earlier = new Map<string, number>()
  readonly #learned: Learned = { ratio: 1 }
  #state: SearchState
  /** Prompt tokens sent plus `maxOutput` per request: what the `maxTokensTotal` cap counts. */
  #charged = 0
  /** Whether the target ever answered (anything but a network error or a timeout). */
  #reached = false
  #stoppedBy: RunRecord['stoppedBy'] = null
  #fatal: string | null = null

  constructor(setup: RunSetup) {
    this.#setup = setup
    this.#minTokens = Math.max(setup.builder.minTokens, MIN_PROBE_TOKENS)
    const first = bounds(setup.settings, this.#minTokens, { ratio: 1 })
    this.#planned = planSearch(first, setup.settings.maxOutput).worstCaseRequests
    this.#state = searchState(this.#points, this.#bounds())
  }

  /** Sends lengths until the search finishes, a budget cap is hit, or the run cannot go on. */
  async search(): Promise<void> {
    while (!this.#state.finished) {
      const tokens = this.#state.next
      const step = await this.#measure(tokens)
      if (step === undefined) return
      this.#points.push({ tokens, ok: step.kind === 'ok' })
      this.#learn(tokens, step)
      this.#state = searchState(this.#points, this.#bounds())
    }
  }

  /** The run as the report needs it (the settings aside). */
  record(): Omit<RunRecord, keyof ProbeSettings> {
    return {
      target: this.#setup.transport.target,
      model: this.#setup.transport.model,
      top: this.#bounds().top,
      converged: this.#state.finished && this.#state.converged,
      stoppedBy: this.#stoppedBy,
      fatal: this.#fatal,
      steps: this.#steps,
    }
  }

  #bounds(): SearchBounds {
    return bounds(this.#setup.settings, this.#minTokens, this.#learned)
  }

  /** One length, retried while its error says the length was not what failed. Undefined: stop. */
  async #measure(tokens: number): Promise<ProbeStep | undefined> {
    const { retries } = this.#setup.settings
    for (let attempt = 0; ; attempt++) {
      this.#stoppedBy = this.#budgetCap(tokens)
      if (this.#stoppedBy !== null) return undefined
      const step = await this.#send(tokens, attempt)
      const error = step.error
      if (error === undefined || (error.kind !== 'network' && error.kind !== 'timeout')) {
        this.#reached = true
      }
      if (error === undefined) return step
      this.#fatal = this.#fatalOf(error, attempt)
      if (this.#fatal !== null) return undefined
      if (!(isRetryable(error.kind, error.status) && attempt < retries)) return step
    }
  }

  #budgetCap(tokens: number): RunRecord['stoppedBy'] {
    const { maxRequests, maxOutput, maxTokensTotal } = this.#setup.settings
    if (this.#steps.length >= maxRequests) return 'max-requests'
    if (this.#charged + tokens + maxOutput > maxTokensTotal) return 'max-tokens-total'
    return null
  }

  /** Why this error ends the run, or null when the run goes on. */
  #fatalOf(error: NonNullable<ProbeStep['error']>, attempt: number): string | null {
    const { target } = this.#setup.transport
    const lastTry = attempt >= this.#setup.settings.retries
    if (isFatal(error.kind, error.status)) {
      return `${error.message} — check --url, --key and --model`
    }
    if (error.kind === 'network' && !this.#reached && lastTry) {
      return `could not reach ${target}: ${error.message}`
    }
    // A refused connection after the target answered is a server that went away (a crash, a dev
    // server reloading), not a length it cannot serve: judging it would "pin" a limit that is not.
    if (error.kind === 'network' && lastTry && REFUSED.test(error.message)) {
      return `${target} stopped accepting connections (${error.message}); restart it and probe again`
    }
    return null
  }

  /** Builds, sends and judges one prompt, recording its markers and its step. */
  async #send(tokens: number, attempt: number): Promise<ProbeStep> {
    const { settings, transport, builder, rng } = this.#setup
    const prompt = await builder.build(tokens, rng)
    const index = this.#steps.length + 1
    const planned = Math.max(this.#planned, index)
    this.#progress({ type: 'send', index, tokens, planned, ...this.#bracket() })
    this.#charged += tokens + settings.maxOutput
    const earlier = this.#earlier
    const step = await sendStep(prompt, { transport, index, attempt, earlier, limits: settings })
    for (const marker of [prompt.startNeedle, prompt.endNeedle, prompt.tag]) {
      this.#earlier.set(marker.toUpperCase(), index)
    }
    this.#steps.push(step)
    const point = { tokens, ok: step.kind === 'ok' }
    this.#progress({ type: 'result', step, planned, ...this.#bracket(point) })
    return step
  }

  /** The bracket so far (with `extra` counted), as the progress events carry it. */
  #bracket(extra?: SearchPoint): { largestOk: number; smallestFail?: number } {
    const { largestOk, smallestFail } = bracket(
      extra === undefined ? this.#points : [...this.#points, extra],
    )
    return smallestFail === undefined ? { largestOk } : { largestOk, smallestFail }
  }

  #progress(event: ProbeProgress): void {
    this.#setup.onProgress?.(event)
  }

  /** What a judged length teaches the next bounds. */
  #learn(tokens: number, step: ProbeStep): void {
    if (step.kind !== 'ok') return
    // A correct answer at the top settles the top. Re-deriving it from that answer's own ratio would
    // move it by the ratio's noise and send yet another near-top prompt, each a fresh chance to
    // overshoot the window.
    if (tokens >= this.#bounds().top) this.#learned.passedTop = tokens
    if (step.reportedPromptTokens !== null && tokens >= this.#state.largestOk) {
      // The target's tokens per o200k token at the largest good length: the top of the window in
      // o200k terms, so a tokenizer that counts more is not failed for the window it enforces.
      this.#learned.ratio = step.reportedPromptTokens / tokens
      this.#learned.measuredAt = tokens
    }
  }
}
