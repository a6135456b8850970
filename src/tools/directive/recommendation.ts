/**
 * @module From observations to figures: rates per kind of request, the proof's position per wording,
 * the delay each release policy would give, and the profile to run the model with.
 */
import type { EchoPolicy, EchoWording } from '../../core'
import { type Cell, cellName, type DirectiveSettings } from './directive-settings'
import type { Observation } from './observe'

/** One kind of request's figures. */
export interface CellSummary {
  name: string
  cell: Cell
  answers: number
  /** Requests that got no answer (an HTTP error, a timeout), with the first error's message. */
  errors: number
  firstError?: string
  /** Share of text answers (tool calls excluded) that opened with the echo. */
  echoRate: number | null
  /** Share of text answers with the code (or JSON member) elsewhere than the start. */
  lateRate: number | null
  /** Share of answers that called a tool. */
  toolCallRate: number
  /** Share of answers whose reasoning restated the code. */
  restateRate: number
  /** Streamed: median token at which the restated code began. */
  restateToken: number | null
  /** Streamed: median tokens read when the proof was complete (answers with a proof). */
  proofToken: number | null
  /** Streamed: median reasoning tokens before the content. */
  reasoningTokens: number | null
  /** Echo lines by shape (`plain`, `**…**`, `Code: …`), counts. */
  decorations: Record<string, number>
}

/** One wording on plain streamed requests: the figures a release policy hangs on. */
export interface WordingSummary {
  wording: EchoWording
  answers: number
  /** Share opening the content with the echo (plain requests, streamed and whole). */
  echoRate: number | null
  /** Share restating the code in the reasoning (streamed plain). */
  restateRate: number | null
  /** Share with no proof at all (neither): the guard retries these, then quarantines. */
  noProofRate: number | null
  /** Median tokens to the proof (restated code's end, or else the echo's end). */
  tokensToProof: number | null
  /** Median reasoning tokens before the content. */
  reasoningTokens: number | null
  /** Median tokens of the echo the guard cuts from the content's start. */
  echoTokens: number | null
  /** First byte over unguarded, ms, at the report's rate: `verified` waits for the proof; `async` does not. */
  firstByteMs: { verified: number | null; async: number }
  /** First content over unguarded, at least, ms: the echo is read and cut under either policy. */
  firstContentMs: number | null
}

/** What to run the model with, and why. */
export interface Recommendation {
  /** The model's profile entry. */
  profile: { echo: EchoPolicy; directive: EchoWording }
  streamRelease: 'verified' | 'async'
  /** Set when `verified` holds streams past the latency budget: keep idle connections open. */
  heartbeatMs?: number
  /** `GUARD_MODELS` and `GUARD_STREAM_RELEASE` as the Worker reads them. */
  env: {
    GUARD_MODELS: string
    GUARD_STREAM_RELEASE: 'verified' | 'async'
    GUARD_HEARTBEAT_MS?: string
  }
  /** Whether the echo can be required: false when no wording reaches `minEchoRate`. */
  fit: boolean
  reasons: string[]
}

/**
 * The heartbeat when a verified stream is held past the budget: the deployed Worker's own default
 * (wrangler.toml), a quarter of the shortest idle limit measured or documented (docs/streaming.md).
 */
const HEARTBEAT_MS = 15_000

/**
 * The median, or null for no values.
 *
 * @example
 * median([3, 1, 2]) // 2
 */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

function share(list: readonly Observation[], test: (o: Observation) => boolean): number | null {
  return list.length === 0 ? null : list.filter(test).length / list.length
}

function numbers(list: readonly Observation[], pick: (o: Observation) => number | null): number[] {
  return list.map(pick).filter((n): n is number => n !== null)
}

/**
 * A cell's figures from its observations and error count.
 *
 * @example
 * const row = summarizeCell(cell, observations, { errors: 0 })
 */
export function summarizeCell(
  cell: Cell,
  seen: readonly Observation[],
  failed: { errors: number; firstError?: string },
): CellSummary {
  const text = seen.filter((o) => !o.toolCalled)
  const decorations: Record<string, number> = {}
  for (const o of seen) {
    if (o.decoration !== null) decorations[o.decoration] = (decorations[o.decoration] ?? 0) + 1
  }
  return {
    name: cellName(cell),
    cell,
    answers: seen.length,
    ...failed,
    echoRate: share(text, (o) => o.echoAtStart),
    lateRate: share(text, (o) => o.echoLate),
    toolCallRate: share(seen, (o) => o.toolCalled) ?? 0,
    restateRate: share(seen, (o) => o.restated) ?? 0,
    restateToken: median(numbers(seen, (o) => o.restateToken)),
    proofToken: median(numbers(seen, (o) => o.proofToken)),
    reasoningTokens: median(numbers(seen, (o) => o.reasoningTokens)),
    decorations,
  }
}

/**
 * A wording's figures on plain requests; delays at `rate` tokens/s (none without a rate).
 *
 * @example
 * const w = summarizeWording('note-first', observations, 30)
 * w.firstByteMs.verified // ms a verified stream waits for its proof
 */
export function summarizeWording(
  wording: EchoWording,
  seen: readonly Observation[],
  rate: number | null,
): WordingSummary {
  const plain = seen.filter((o) => o.cell.format === 'plain' && o.cell.wording === wording)
  const streamed = plain.filter((o) => o.cell.delivery === 'stream')
  // An answer without a proof is retried: its delay is unbounded, and counts as such in the median.
  const proofs = streamed.map((o) => o.proofToken ?? Number.POSITIVE_INFINITY)
  const tokensToProof = median(proofs)
  const echoTokens = median(numbers(streamed, (o) => o.echoTokens))
  const ms = (tokens: number | null) =>
    tokens === null || rate === null || !Number.isFinite(tokens)
      ? null
      : Math.round((Math.max(0, tokens - 1) / rate) * 1000)
  return {
    wording,
    answers: plain.length,
    echoRate: share(plain, (o) => o.echoAtStart),
    restateRate: share(streamed, (o) => o.restated),
    noProofRate: share(streamed, (o) => o.proofToken === null),
    tokensToProof: tokensToProof !== null && Number.isFinite(tokensToProof) ? tokensToProof : null,
    reasoningTokens: median(numbers(streamed, (o) => o.reasoningTokens)),
    echoTokens,
    firstByteMs: { verified: ms(tokensToProof), async: 0 },
    firstContentMs:
      echoTokens === null || rate === null ? null : Math.round((echoTokens / rate) * 1000),
  }
}

/**
 * The profile and policy for the model: the wording (see chooseWording); `verified` when its wait is
 * within the latency budget, else `async` only where the operator accepts it, and otherwise `verified`
 * with a heartbeat. No wording reaching the echo rate: the echo cannot be required.
 *
 * @example
 * const r = recommend(wordings, settings, '@cf/zai-org/glm-5.3')
 * r.env.GUARD_MODELS // '{"@cf/zai-org/glm-5.3":{"echo":"require","directive":"note-first"}}'
 */
export function recommend(
  wordings: readonly WordingSummary[],
  settings: Pick<DirectiveSettings, 'minEchoRate' | 'latencyBudgetMs' | 'acceptAsync'>,
  model: string,
): Recommendation {
  const best = chooseWording(wordings, settings.minEchoRate)
  const reasons: string[] = []
  let release: Pick<Recommendation, 'streamRelease' | 'heartbeatMs'> = { streamRelease: 'verified' }
  if (best === undefined) {
    const top = Math.max(...wordings.map((w) => w.echoRate ?? 0))
    reasons.push(
      `No wording opened ${pct(settings.minEchoRate)} of answers with the code (best ${pct(top)}): requiring the echo would retry and quarantine healthy answers; scan-only still catches other requests' canaries but proves no read.`,
    )
  } else {
    reasons.push(
      `${best.wording}: the content opened with the code in ${pct(best.echoRate)} of answers; the reasoning restated it in ${pct(best.restateRate)} of streams; the proof is complete at token ${best.tokensToProof ?? '—'} (median).`,
    )
    release = releaseFor(best.firstByteMs.verified, settings, reasons)
  }
  const profile = {
    echo: best === undefined ? ('scan-only' as const) : ('require' as const),
    directive: best?.wording ?? 'reply-first',
  }
  const heartbeat = release.heartbeatMs
  return {
    profile,
    ...release,
    env: {
      GUARD_MODELS: JSON.stringify({ [model]: profile }),
      GUARD_STREAM_RELEASE: release.streamRelease,
      ...(heartbeat === undefined ? {} : { GUARD_HEARTBEAT_MS: String(heartbeat) }),
    },
    fit: best !== undefined,
    reasons,
  }
}

const pct = (n: number | null): string => (n === null ? '—' : `${Math.round(n * 100)}%`)

/**
 * The wait for a wording's proof, in tokens: the rate is the same for every wording, and the
 * milliseconds are rounded (at a fast rate 26 and 30 tokens round to 0 ms and 1 ms, which would
 * read as one wording halving the other's wait).
 */
const wait = (w: WordingSummary): number => w.tokensToProof ?? Number.POSITIVE_INFINITY

/**
 * Among the wordings whose echo reaches `minEchoRate`: `reply-first`, the shorter directive, unless
 * another at least halves the wait for the proof (sampling noise moves a median by far less).
 */
function chooseWording(
  wordings: readonly WordingSummary[],
  minEchoRate: number,
): WordingSummary | undefined {
  const able = wordings.filter((w) => (w.echoRate ?? 0) >= minEchoRate)
  const fallback = able.find((w) => w.wording === 'reply-first')
  const fastest = [...able].sort((a, b) => wait(a) - wait(b))[0]
  if (fallback !== undefined && fastest !== undefined && wait(fastest) > wait(fallback) / 2) {
    return fallback
  }
  return fastest
}

/** `verified` within the budget; past it `async` where accepted, else `verified` with a heartbeat. */
function releaseFor(
  verified: number | null,
  settings: Pick<DirectiveSettings, 'latencyBudgetMs' | 'acceptAsync'>,
  reasons: string[],
): Pick<Recommendation, 'streamRelease' | 'heartbeatMs'> {
  if (verified === null || verified <= settings.latencyBudgetMs) {
    reasons.push(
      verified === null
        ? 'verified: no streamed answer measured its wait; it is the safe default.'
        : `verified: the first byte waits +${verified} ms for the proof, within the ${settings.latencyBudgetMs} ms budget.`,
    )
    return { streamRelease: 'verified' }
  }
  if (settings.acceptAsync) {
    reasons.push(
      `async: verified would hold the first byte +${verified} ms, over the ${settings.latencyBudgetMs} ms budget, and you accepted async (bytes leave before their proof; a missing proof ends the stream).`,
    )
    return { streamRelease: 'async' }
  }
  reasons.push(
    `verified with a heartbeat: the first byte waits +${verified} ms for the proof, over the ${settings.latencyBudgetMs} ms budget; async would release it at once but sends bytes before their proof (--accept-async to recommend it).`,
  )
  return { streamRelease: 'verified', heartbeatMs: HEARTBEAT_MS }
}
