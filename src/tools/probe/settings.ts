/**
 * @module Probe options: defaults, validation (once, naming the bad option), and the search bounds
 * they imply.
 */
import type { ProbeProgress } from './progress'
import { isSeed } from './random'
import type { ProbeTransport } from './transport'

/** Options of a probe run. Every number is in tokens unless it says otherwise. */
export interface ProbeOptions {
  /** Where the requests go. */
  transport: ProbeTransport
  /**
   * The advertised context window: what the operator was promised.
   * @default 1048576
   */
  window?: number
  /**
   * First length sent; lengths double from here.
   * @default 1024
   */
  start?: number
  /**
   * Largest length sent (capped at the window, less output and template room).
   * @default window
   */
  maxLength?: number
  /**
   * Bisection stops when the limit is pinned to within this fraction.
   * @default 0.005
   */
  tolerance?: number
  /**
   * Physical upper bound on an uncached prefill, tokens per second: a first token sooner than
   * `tokens / maxPrefill` was never prefilled (a placeholder path answers at once).
   * @default 200000
   */
  maxPrefill?: number
  /**
   * Hard cap on requests sent (retries included).
   * @default 40
   */
  maxRequests?: number
  /**
   * Hard cap on tokens: prompt tokens sent plus `maxOutput` per request.
   * @default 20000000
   */
  maxTokensTotal?: number
  /**
   * `max_tokens` of every request (room for a reasoning model to think, then name two needles).
   * @default 1024
   */
  maxOutput?: number
  /**
   * Output tokens the recommended ceiling keeps free (the guard's `defaultOutputReserve`).
   * @default 4096
   */
  outputReserve?: number
  /**
   * Safety margin taken off the largest good length for the recommended pool size.
   * @default 0.02
   */
  margin?: number
  /**
   * A reported `usage.prompt_tokens` below this fraction of the tokens sent is a cut prompt.
   * @default 0.8
   */
  usageFloor?: number
  /**
   * Extra tries, each with a fresh prompt, after a retryable error (429, 5xx, network).
   * @default 1
   */
  retries?: number
  /**
   * Seed of needles, tags and filler (uint32), for a replayable run.
   * @default a random seed from crypto.getRandomValues
   */
  seed?: number
  /** Called before each request and after each judgement (drives the CLI's progress bar). */
  onProgress?: (event: ProbeProgress) => void
}

/** Every option with its default applied (except the transport and the callback). */
export type ProbeSettings = Required<Omit<ProbeOptions, 'transport' | 'onProgress' | 'seed'>> & {
  seed: number | undefined
}

/**
 * The defaults.
 *
 * @example
 * PROBE_DEFAULTS.window // 1048576
 */
export const PROBE_DEFAULTS: Readonly<Omit<ProbeSettings, 'seed'>> = Object.freeze({
  window: 1_048_576,
  start: 1024,
  maxLength: 1_048_576,
  tolerance: 0.005,
  maxPrefill: 200_000,
  maxRequests: 40,
  maxTokensTotal: 20_000_000,
  maxOutput: 1024,
  outputReserve: 4096,
  margin: 0.02,
  usageFloor: 0.8,
  retries: 1,
})

/**
 * Room left for the chat template's own tokens (role tags, BOS) at the top length, so a healthy
 * deployment is never failed for a template the probe cannot see.
 *
 * @example
 * topLength(settings) // window − maxOutput − TEMPLATE_ROOM, at most maxLength
 */
export const TEMPLATE_ROOM = 64

/**
 * Shortest prompt the probe sends (halving after an early failure stops here).
 *
 * @example
 * settings.start >= MIN_PROBE_TOKENS // enforced
 */
export const MIN_PROBE_TOKENS = 128

/**
 * The numeric options: each one given (not undefined) replaces its default.
 *
 * @example
 * for (const name of NUMBER_OPTIONS) if (typeof parsed[name] === 'number') options[name] = parsed[name]
 */
export const NUMBER_OPTIONS = [
  'window',
  'start',
  'maxLength',
  'tolerance',
  'maxPrefill',
  'maxRequests',
  'maxTokensTotal',
  'maxOutput',
  'outputReserve',
  'margin',
  'usageFloor',
  'retries',
  'seed',
] as const satisfies readonly (keyof ProbeSettings)[]

type Numeric = Exclude<keyof ProbeSettings, 'seed'>

function check(name: string, value: number, ok: boolean, rule: string): void {
  if (typeof value !== 'number' || Number.isNaN(value) || !ok) {
    throw new Error(`${name} must be ${rule} (got ${String(value)})`)
  }
}

/**
 * Applies the defaults and validates every option once, throwing a plain `Error` that names the
 * option at fault.
 *
 * @example
 * resolveProbeSettings({ window: 131_072 }).maxLength // 131072
 */
export function resolveProbeSettings(options: Omit<ProbeOptions, 'transport'>): ProbeSettings {
  const window = options.window ?? PROBE_DEFAULTS.window
  const merged: ProbeSettings = { ...PROBE_DEFAULTS, maxLength: window, window, seed: options.seed }
  for (const name of NUMBER_OPTIONS) {
    const value = options[name]
    if (value !== undefined) merged[name] = value
  }
  checkEach(merged)
  if (merged.maxOutput + TEMPLATE_ROOM + MIN_PROBE_TOKENS > merged.window) {
    throw new Error(
      `maxOutput must leave room for a prompt in the window (got ${merged.maxOutput})`,
    )
  }
  const top = topLength(merged)
  if (merged.start > top) {
    throw new Error(
      `start must be at most the top length ${top} (window − maxOutput − ${TEMPLATE_ROOM}, capped by maxLength) (got ${merged.start})`,
    )
  }
  return merged
}

/** Each option against its own range. */
function checkEach(merged: ProbeSettings): void {
  const int = (name: Numeric, min: number): void => {
    const v = merged[name]
    check(name, v, Number.isSafeInteger(v) && v >= min, `an integer ≥ ${min}`)
  }
  const fraction = (name: Numeric, min: number, max: number): void => {
    const v = merged[name]
    check(name, v, Number.isFinite(v) && v >= min && v <= max, `a number in [${min}, ${max}]`)
  }
  int('window', MIN_PROBE_TOKENS * 4)
  int('start', MIN_PROBE_TOKENS)
  int('maxLength', MIN_PROBE_TOKENS)
  fraction('tolerance', 0.0001, 0.5)
  const rate = merged.maxPrefill
  check('maxPrefill', rate, rate > 0, 'a positive number (or Infinity: no timing check)')
  int('maxRequests', 1)
  int('maxTokensTotal', 1)
  int('maxOutput', 16)
  int('outputReserve', 0)
  fraction('margin', 0, 0.5)
  fraction('usageFloor', 0, 1)
  int('retries', 0)
  const seed = merged.seed
  if (seed !== undefined) check('seed', seed, isSeed(seed), 'an integer in [0, 4294967295]')
}

/**
 * How far apart two probe prompts' target-tokens-per-o200k-token ratios can be, as a fraction, times
 * √(o200k length of the prompt the ratio was measured on): the probe sizes prompts in o200k and learns
 * the target's ratio from `usage.prompt_tokens`, but each prompt draws fresh words, line lengths and
 * tag, so the next prompt's ratio is not the measured one. Tokenizers that split digits one by one
 * (Qwen3, Gemma 3) count each line's tag at 10 tokens against o200k's 4, so their ratio follows the
 * prompt's mix of line lengths, with a relative spread that shrinks as 1 / √length. 1.0 covers the
 * difference of two prompts at 4 standard deviations of the widest such tokenizer, and the drift of
 * the fixed head and tail between a length and its double (test/node/probe-cli.test.ts checks the
 * spread). Without it the top prompt can overshoot `window − max_tokens` and draw a refusal that a
 * healthy deployment does not deserve.
 *
 * @example
 * RATIO_NOISE / Math.sqrt(16_384) // 0.0078: the top stays 0.8% under the window at a 32k window
 */
export const RATIO_NOISE = 1

/**
 * The fraction the top keeps free for {@link RATIO_NOISE} when the ratio was measured on a prompt of
 * `measuredAt` o200k tokens (at most 25%).
 *
 * @example
 * ratioMargin(16_384) // 0.0078125
 * ratioMargin(524_288) // 0.00138
 */
export function ratioMargin(measuredAt: number): number {
  return Math.min(0.25, RATIO_NOISE / Math.sqrt(Math.max(1, measuredAt)))
}

/**
 * The largest length the search sends: the window less the output cap and template room, converted
 * to o200k tokens with the target's own tokens-per-o200k-token `ratio` once it is known, and never
 * above `maxLength`. Given `measuredAt` (the o200k length the ratio was measured on), the top also
 * keeps {@link ratioMargin} free, so the next prompt's own ratio cannot push it past the window.
 *
 * @example
 * topLength({ window: 1_048_576, maxOutput: 1024, maxLength: 1_048_576 }) // 1047488
 * topLength({ window: 32_768, maxOutput: 1024, maxLength: 32_768 }, 1.46, 16_384) // 21530
 */
export function topLength(
  settings: Pick<ProbeSettings, 'window' | 'maxOutput' | 'maxLength'>,
  ratio = 1,
  measuredAt?: number,
): number {
  const room = settings.window - settings.maxOutput - TEMPLATE_ROOM
  const margin = measuredAt === undefined ? 0 : ratioMargin(measuredAt)
  return Math.min(settings.maxLength, Math.floor(room / Math.max(ratio, 0.01) / (1 + margin)))
}
