/**
 * @module Directive-measurement options: defaults, validation (once, naming the bad option), and the
 * cells a run sends — every kind of request crossed with every wording, each `samples` times.
 */
import type { EchoWording } from '../../core'

/** The output format a request asks for. */
export type RequestFormat = 'plain' | 'json' | 'tools'
/** Whether the answer is streamed or arrives whole. */
export type Delivery = 'stream' | 'whole'
/** The script of a prompt's filler and question. */
export type Script = 'latn' | 'cyrl' | 'hans'

/** The measurement's options. Every number is in tokens unless it says otherwise. */
export interface DirectiveOptions {
  /** Answers per cell. @default 4 */
  samples?: number
  /** Prompt lengths in o200k tokens (filler before the question). @default [200, 8000] */
  lengths?: number[]
  /** @default ['plain', 'json', 'tools'] */
  formats?: RequestFormat[]
  /** @default ['stream', 'whole'] */
  deliveries?: Delivery[]
  /** @default ['latn', 'cyrl', 'hans'] */
  scripts?: Script[]
  /** The built-in wordings compared (a JSON-mode request has one directive whatever the wording). */
  wordings?: EchoWording[]
  /** `max_tokens` of every request: room to think, then answer. @default 4096 */
  maxOutput?: number
  /** Hard cap on requests sent. @default 300 */
  maxRequests?: number
  /** Hard cap on prompt tokens sent plus `maxOutput` per request. @default 5000000 */
  maxTokensTotal?: number
  /**
   * The first-byte delay over an unguarded stream a deployment accepts, ms: a wording and policy
   * that keep `verified` under it are recommended as is. @default 2000
   */
  latencyBudgetMs?: number
  /**
   * Whether `async` may be recommended where `verified` exceeds the budget (it releases bytes before
   * their proof: docs/streaming.md). @default false
   */
  acceptAsync?: boolean
  /** Decode speed the delays are given at, tokens/s. @default the rate measured on streamed answers */
  rate?: number
  /** The least echo rate at the content's start for which the echo can be required. @default 0.9 */
  minEchoRate?: number
  /** Seed of fillers and canaries' order (uint32): a replayable plan. @default random */
  seed?: number
}

/** Every option with its default applied. */
export type DirectiveSettings = Required<Omit<DirectiveOptions, 'rate' | 'seed'>> & {
  rate: number | undefined
  seed: number
}

/**
 * The defaults.
 *
 * @example
 * DIRECTIVE_DEFAULTS.samples // 4
 */
export const DIRECTIVE_DEFAULTS: Readonly<Omit<DirectiveSettings, 'rate' | 'seed'>> = Object.freeze<
  Omit<DirectiveSettings, 'rate' | 'seed'>
>({
  samples: 4,
  lengths: [200, 8_000],
  formats: ['plain', 'json', 'tools'],
  deliveries: ['stream', 'whole'],
  scripts: ['latn', 'cyrl', 'hans'],
  wordings: ['reply-first', 'note-first'],
  maxOutput: 4_096,
  maxRequests: 300,
  maxTokensTotal: 5_000_000,
  latencyBudgetMs: 2_000,
  acceptAsync: false,
  minEchoRate: 0.9,
})

/** One kind of request: what is sent `samples` times. */
export interface Cell {
  length: number
  format: RequestFormat
  delivery: Delivery
  script: Script
  /** `null` for JSON mode, whose directive is one. */
  wording: EchoWording | null
}

const FORMATS: readonly RequestFormat[] = ['plain', 'json', 'tools']
const DELIVERIES: readonly Delivery[] = ['stream', 'whole']
const SCRIPTS: readonly Script[] = ['latn', 'cyrl', 'hans']
const WORDINGS: readonly EchoWording[] = ['reply-first', 'note-first']

/**
 * Applies the defaults and validates every option once, throwing a plain `Error` naming the option.
 *
 * @example
 * resolveDirectiveSettings({ samples: 2 }, 7).samples // 2
 */
export function resolveDirectiveSettings(
  options: DirectiveOptions,
  seed: number,
): DirectiveSettings {
  const s: DirectiveSettings = { ...DIRECTIVE_DEFAULTS, ...options, rate: options.rate, seed }
  const int = (name: keyof DirectiveSettings, value: number, min: number, max: number) => {
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw new Error(`${name} must be an integer in [${min}, ${max}] (got ${String(value)})`)
    }
  }
  int('samples', s.samples, 1, 1_000)
  int('maxOutput', s.maxOutput, 64, 131_072)
  int('maxRequests', s.maxRequests, 1, 100_000)
  int('maxTokensTotal', s.maxTokensTotal, 1, 2 ** 40)
  int('latencyBudgetMs', s.latencyBudgetMs, 0, 3_600_000)
  if (s.lengths.length === 0) throw new Error('lengths must name at least one length')
  for (const length of s.lengths) int('lengths', length, 16, 1_048_576)
  listOf('formats', s.formats, FORMATS)
  listOf('deliveries', s.deliveries, DELIVERIES)
  listOf('scripts', s.scripts, SCRIPTS)
  listOf('wordings', s.wordings, WORDINGS)
  if (!(s.minEchoRate >= 0 && s.minEchoRate <= 1)) {
    throw new Error(`minEchoRate must be a number in [0, 1] (got ${String(s.minEchoRate)})`)
  }
  if (s.rate !== undefined && !(s.rate > 0 && Number.isFinite(s.rate))) {
    throw new Error(`rate must be a positive number of tokens/s (got ${String(s.rate)})`)
  }
  return s
}

function listOf<T extends string>(name: string, list: readonly T[], allowed: readonly T[]): void {
  if (list.length === 0) throw new Error(`${name} must name at least one of ${allowed.join(', ')}`)
  for (const item of list) {
    if (!allowed.includes(item)) {
      throw new Error(`${name} must be among ${allowed.join(', ')} (got ${JSON.stringify(item)})`)
    }
  }
}

/**
 * Every cell of a run, in a fixed order: lengths × formats × deliveries × scripts × wordings (one
 * JSON-mode cell per length, delivery and script).
 *
 * @example
 * cellsOf(resolveDirectiveSettings({ formats: ['plain'] }, 1)).length // 2 × 2 × 3 × 2 = 24
 */
export function cellsOf(s: DirectiveSettings): Cell[] {
  const cells: Cell[] = []
  for (const length of s.lengths) {
    for (const format of s.formats) {
      for (const delivery of s.deliveries) {
        for (const script of s.scripts) {
          const wordings = format === 'json' ? [null] : s.wordings
          for (const wording of wordings) cells.push({ length, format, delivery, script, wording })
        }
      }
    }
  }
  return cells
}

/**
 * A cell's name in the report: `plain stream latn 200 reply-first`.
 *
 * @example
 * cellName({ length: 200, format: 'json', delivery: 'whole', script: 'hans', wording: null })
 * // 'json whole hans 200'
 */
export function cellName(cell: Cell): string {
  const parts = [cell.format, cell.delivery, cell.script, String(cell.length)]
  if (cell.wording !== null) parts.push(cell.wording)
  return parts.join(' ')
}
