/**
 * @module Running a directive measurement: every cell `samples` times, interleaved so drift in the
 * deployment falls on all cells alike, within hard budgets; then the report.
 */
import { randomSeed, seededRng } from '../probe/random'
import type { ProbeTransport } from '../probe/transport'
import { messageOf, ProbeTransportError } from '../probe/transport-error'
import {
  type Cell,
  cellName,
  cellsOf,
  type DirectiveOptions,
  type DirectiveSettings,
  resolveDirectiveSettings,
} from './directive-settings'
import { type Observation, observe } from './observe'
import {
  type CellSummary,
  median,
  type Recommendation,
  recommend,
  summarizeCell,
  summarizeWording,
  type WordingSummary,
} from './recommendation'
import { buildRequest } from './sample-request'

/** Statuses after which no further request can succeed: the run stops and says why. */
const FATAL = new Set([401, 403, 404, 405])

/** The guard's directive and the question add this much to a cell's filler, at most (o200k). */
const PROMPT_ROOM = 160

/** What a measurement found. Never holds an answer's text, only its shape. */
export interface DirectiveReport {
  target: string
  model: string
  seed: number
  /** Requests sent and tokens spent (prompt tokens plus `max_tokens` each). */
  requests: number
  tokens: number
  /** `budget`: a cap stopped the run before every sample was sent. */
  stopped: 'done' | 'budget'
  /** Decode speed the delays are given at (tokens/s), and whether it was measured or given. */
  rate: { tokensPerSecond: number | null; source: 'measured' | 'given' }
  cells: CellSummary[]
  wordings: WordingSummary[]
  /** JSON mode: the share of answers opening with the `guard_echo` member, and with it elsewhere. */
  json: { answers: number; echoRate: number | null; lateRate: number | null } | null
  recommendation: Recommendation
  /** 0: the echo can be required; 1: it cannot (no wording reached `minEchoRate`). */
  exitCode: 0 | 1
}

/** What `--dry-run` prints: the cells and the worst case, nothing sent. */
export interface DirectivePlan {
  target: string
  model: string
  seed: number
  cells: string[]
  requests: number
  /** Worst-case tokens: every prompt at its length plus room, plus `max_tokens` each. */
  tokens: number
  /** Whether the budgets allow every request; a run stops at the first cap it meets. */
  withinBudget: boolean
  settings: Omit<DirectiveSettings, 'seed'>
}

/**
 * The plan of a run, without sending anything.
 *
 * @example
 * planDirective({ samples: 2 }, { target: 'http://localhost:8787/v1', model }).requests
 */
export function planDirective(
  options: DirectiveOptions,
  where: { target: string; model: string },
): DirectivePlan {
  const { seed, ...settings } = resolveDirectiveSettings(options, options.seed ?? randomSeed())
  const cells = cellsOf({ ...settings, seed })
  const requests = cells.length * settings.samples
  const tokens = cells.reduce(
    (sum, cell) => sum + (cell.length + PROMPT_ROOM + settings.maxOutput) * settings.samples,
    0,
  )
  return {
    ...where,
    seed,
    cells: cells.map(cellName),
    requests,
    tokens,
    withinBudget: requests <= settings.maxRequests && tokens <= settings.maxTokensTotal,
    settings,
  }
}

/**
 * Measures how the model behind `transport` follows the guard's directive, and recommends its profile.
 *
 * @example
 * const report = await measureDirective({ transport: runnerTransport(env.AI, { model }), samples: 4 })
 * report.recommendation.env.GUARD_MODELS
 */
export async function measureDirective(
  options: DirectiveOptions & {
    transport: ProbeTransport
    onProgress?: (sent: number, of: number) => void
  },
): Promise<DirectiveReport> {
  const { transport, onProgress, ...rest } = options
  const settings = resolveDirectiveSettings(rest, rest.seed ?? randomSeed())
  const cells = cellsOf(settings)
  const sent = await sendAll(settings, cells, transport, onProgress)
  const all = [...sent.seen.values()].flat()
  const measured = median(all.map((o) => o.rate).filter((r): r is number => r !== null))
  const rate = settings.rate ?? measured
  const wordings = settings.formats.includes('plain')
    ? settings.wordings.map((w) => summarizeWording(w, all, rate))
    : []
  const json = all.filter((o) => o.cell.format === 'json')
  const share = (test: (o: Observation) => boolean) =>
    json.length ? json.filter(test).length / json.length : null
  const recommendation = recommend(wordings, settings, transport.model)
  return {
    target: transport.target,
    model: transport.model,
    seed: settings.seed,
    requests: sent.requests,
    tokens: sent.tokens,
    stopped: sent.stopped,
    rate: { tokensPerSecond: rate, source: settings.rate === undefined ? 'measured' : 'given' },
    cells: cells.map((c) => summarizeCell(c, sent.seen.get(c)!, sent.failed.get(c)!)),
    wordings,
    json: settings.formats.includes('json')
      ? {
          answers: json.length,
          echoRate: share((o) => o.echoAtStart),
          lateRate: share((o) => o.echoLate),
        }
      : null,
    recommendation,
    exitCode: recommendation.fit ? 0 : 1,
  }
}

/** What the requests of a run found, cell by cell, and what they cost. */
interface Sent {
  seen: Map<Cell, Observation[]>
  failed: Map<Cell, { errors: number; firstError?: string }>
  requests: number
  tokens: number
  stopped: DirectiveReport['stopped']
}

/**
 * Every cell `samples` times, each round starting one cell further on (no cell always meets the
 * deployment first), until done or a budget would be passed. A fatal status ends the run; any other
 * error is counted against its cell.
 */
async function sendAll(
  settings: DirectiveSettings,
  cells: readonly Cell[],
  transport: ProbeTransport,
  onProgress: ((sent: number, of: number) => void) | undefined,
): Promise<Sent> {
  const rng = seededRng(settings.seed)
  const sent: Sent = {
    seen: new Map(cells.map((c) => [c, []])),
    failed: new Map(cells.map((c) => [c, { errors: 0 }])),
    requests: 0,
    tokens: 0,
    stopped: 'done',
  }
  for (let round = 0; round < settings.samples; round++) {
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[(i + round) % cells.length]!
      const request = await buildRequest(cell, rng)
      const cost = request.promptTokens + settings.maxOutput
      if (sent.requests >= settings.maxRequests || sent.tokens + cost > settings.maxTokensTotal) {
        sent.stopped = 'budget'
        return sent
      }
      sent.requests++
      sent.tokens += cost
      onProgress?.(sent.requests, cells.length * settings.samples)
      try {
        const answer = await transport.send({
          prompt: request.prompt,
          maxTokens: settings.maxOutput,
          stream: request.stream,
          extra: request.extra,
        })
        sent.seen.get(cell)!.push(observe(cell, request, answer))
      } catch (error) {
        if (error instanceof ProbeTransportError && FATAL.has(error.status ?? 0)) throw error
        const f = sent.failed.get(cell)!
        f.errors++
        f.firstError ??= messageOf(error)
      }
    }
  }
  return sent
}
