/**
 * @module `workers-ai-guard probe [options]`: argument parsing, output and exit code, with all I/O
 * injected so the command runs (and is tested) anywhere; `src/tools/cli.ts` is its thin Node adapter.
 */

import { type ArgKind, parseCommandLine, UsageError } from '../cli-args'
import { planProbe, runProbe } from './probe'
import { type ProbeProgress, progressLine } from './progress'
import { renderDryRun, renderReport } from './render'
import { NUMBER_OPTIONS, PROBE_DEFAULTS, type ProbeOptions } from './settings'
import { urlTransport } from './transport'
import { messageOf } from './transport-error'

/** What the command may touch. */
export interface CommandIo {
  /** Environment (for `PROBE_API_KEY`). */
  env: Record<string, string | undefined>
  /** Writes to standard output (reports). */
  stdout(text: string): void
  /** Writes to standard error (errors, progress). */
  stderr(text: string): void
  /** Whether standard error is a terminal: the progress bar is drawn only then. */
  isTTY: boolean
  /** Terminal width, for the progress bar. */
  columns?: number
  /** The fetch to use. @default globalThis.fetch */
  fetch?: typeof fetch
}

/** The model probed when `--model` is not given. */
const DEFAULT_PROBE_MODEL = '@cf/zai-org/glm-5.3'

/**
 * Usage text of `workers-ai-guard probe`.
 *
 * @example
 * io.stdout(PROBE_USAGE)
 */
const PROBE_USAGE = `Usage: workers-ai-guard probe --url <base-url> [options]

Finds how long a prompt a deployment really serves, by reading its answers: prompts of growing, then
bisected, length with random needles at the very start and end; each answer must name both needles,
quote nothing of an earlier probe request, arrive no faster than a real prefill, and be counted in full.
Sends no user data: needles and filler are random.

Target
  --url <url>               OpenAI-compatible base URL (POST <url>/chat/completions), e.g. http://localhost:8787/v1
  --key <key>               bearer key (default: $PROBE_API_KEY)
  --model <id>              model id (default: ${DEFAULT_PROBE_MODEL})
  --timeout <seconds>       per request (default: 600)

Search
  --window <tokens>         advertised context window (default: ${PROBE_DEFAULTS.window})
  --start <tokens>          first length; doubles from here (default: ${PROBE_DEFAULTS.start})
  --max-length <tokens>     largest length (default: the window, less output and template room)
  --tolerance <fraction>    pin the limit to within this, e.g. 0.005 or 0.5% (default: 0.5%)
  --max-prefill <tok/s>     physical prefill bound for the TTFT check, or "off" (default: ${PROBE_DEFAULTS.maxPrefill})
  --max-output <tokens>     max_tokens per request (default: ${PROBE_DEFAULTS.maxOutput})
  --retries <n>             extra tries after 429/5xx/network errors (default: ${PROBE_DEFAULTS.retries})
  --seed <uint32>           replay needles and filler of an earlier run (default: random)

Budget (hard caps)
  --max-requests <n>        (default: ${PROBE_DEFAULTS.maxRequests})
  --max-tokens-total <n>    prompt tokens + max_tokens per request (default: ${PROBE_DEFAULTS.maxTokensTotal})

Recommendation
  --margin <fraction>       taken off the largest correct length (default: 2%)
  --output-reserve <tokens> kept free under the ceiling (default: ${PROBE_DEFAULTS.outputReserve})

Output
  --dry-run                 print the plan (lengths, worst-case requests and tokens); send nothing
  --json                    print one JSON report on stdout
  --help                    this text

Exit codes: 0 safe (the advertised window is served correctly) or guarded (a workers-ai-guard Worker
answered correctly under its ceiling and refused everything over it), 1 unsafe (a lower real limit, a
leak, or an impossible TTFT), 2 could not run (bad arguments, unreachable URL, budget exhausted first).
Pointed at a workers-ai-guard Worker, the probe measures the guard's ceiling, not the engine's pool:
to measure the engine, point --url at the upstream (Workers AI's
https://api.cloudflare.com/client/v4/accounts/<account-id>/ai/v1, or \`npm run sim\` locally).
`

type Kind = 'string' | 'int' | 'fraction' | 'rate' | 'seconds' | 'flag'

const SPEC: Record<string, { kind: Kind; key: string }> = {
  url: { kind: 'string', key: 'url' },
  key: { kind: 'string', key: 'key' },
  model: { kind: 'string', key: 'model' },
  timeout: { kind: 'seconds', key: 'timeoutMs' },
  window: { kind: 'int', key: 'window' },
  start: { kind: 'int', key: 'start' },
  'max-length': { kind: 'int', key: 'maxLength' },
  tolerance: { kind: 'fraction', key: 'tolerance' },
  'max-prefill': { kind: 'rate', key: 'maxPrefill' },
  'max-output': { kind: 'int', key: 'maxOutput' },
  retries: { kind: 'int', key: 'retries' },
  seed: { kind: 'int', key: 'seed' },
  'max-requests': { kind: 'int', key: 'maxRequests' },
  'max-tokens-total': { kind: 'int', key: 'maxTokensTotal' },
  margin: { kind: 'fraction', key: 'margin' },
  'output-reserve': { kind: 'int', key: 'outputReserve' },
  'dry-run': { kind: 'flag', key: 'dryRun' },
  json: { kind: 'flag', key: 'json' },
  help: { kind: 'flag', key: 'help' },
}

type Parsed = Record<string, string | number | boolean>

function parseValue(name: string, kind: Kind, raw: string): string | number {
  if (kind === 'string') {
    if (raw === '') throw new UsageError(`--${name} needs a value`)
    return raw
  }
  const text = raw.trim()
  if (kind === 'rate' && /^(off|infinity)$/i.test(text)) return Number.POSITIVE_INFINITY
  if (kind === 'fraction' && text.endsWith('%')) {
    const n = Number(text.slice(0, -1))
    if (text.length > 1 && Number.isFinite(n)) return n / 100
  } else if (/^\d[\d_,]*(\.\d+)?$/.test(text)) {
    const n = Number(text.replace(/[_,]/g, ''))
    if (kind === 'int' && !Number.isSafeInteger(n)) {
      throw new UsageError(`--${name} must be a whole number (got ${raw})`)
    }
    return kind === 'seconds' ? n * 1000 : n
  }
  throw new UsageError(`--${name} must be a number (got ${JSON.stringify(raw)})`)
}

function parseArgs(args: readonly string[]): Parsed {
  const kinds = Object.fromEntries(
    Object.entries(SPEC).map(([name, spec]) => [name, spec.kind === 'flag' ? 'boolean' : 'string']),
  ) as Record<string, ArgKind>
  const out: Parsed = {}
  for (const { name, value } of parseCommandLine(args, kinds, false).options) {
    const spec = SPEC[name]!
    out[spec.key] = value === undefined ? true : parseValue(name, spec.kind, value)
  }
  return out
}

/**
 * Runs `workers-ai-guard <argv…>` and resolves to the exit code: 0 safe or guarded, 1 unsafe, 2 could
 * not run.
 *
 * @example
 * const code = await probeCommand(['probe', '--url', 'http://localhost:8787/v1', '--json'], io)
 */
export async function probeCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const [command, ...rest] = argv
  if (command === '--help' || command === 'help' || command === '-h') {
    io.stdout(PROBE_USAGE)
    return 0
  }
  if (command !== 'probe') {
    io.stderr(
      `workers-ai-guard: ${command === undefined ? 'no command given' : `unknown command ${JSON.stringify(command)}`}\n${PROBE_USAGE}`,
    )
    return 2
  }
  try {
    const parsed = parseArgs(rest)
    if (parsed.help === true) {
      io.stdout(PROBE_USAGE)
      return 0
    }
    return parsed.dryRun === true ? dryRun(parsed, io) : await probe(parsed, io)
  } catch (error) {
    return usageFailure(io, error)
  }
}

/** The settings the command line gave (the rest keep their defaults). */
function settingsOf(parsed: Parsed): Omit<ProbeOptions, 'transport'> {
  const options: Omit<ProbeOptions, 'transport'> = {}
  for (const name of NUMBER_OPTIONS) {
    const value = parsed[name]
    if (typeof value === 'number') options[name] = value
  }
  return options
}

const modelOf = (parsed: Parsed): string =>
  typeof parsed.model === 'string' ? parsed.model : DEFAULT_PROBE_MODEL

/** `--dry-run`: the plan, as text or JSON; nothing is sent. */
function dryRun(parsed: Parsed, io: CommandIo): number {
  const target = typeof parsed.url === 'string' ? parsed.url : '(no --url given)'
  const plan = planProbe(settingsOf(parsed), { target, model: modelOf(parsed) })
  io.stdout(parsed.json === true ? `${JSON.stringify(plan, jsonNumbers, 2)}\n` : renderDryRun(plan))
  return 0
}

/** The run itself: progress on a terminal, the report on stdout, its exit code. */
async function probe(parsed: Parsed, io: CommandIo): Promise<number> {
  if (typeof parsed.url !== 'string') {
    throw new UsageError('--url is required (or --dry-run to see the plan)')
  }
  const apiKey = typeof parsed.key === 'string' ? parsed.key : io.env.PROBE_API_KEY
  const transport = urlTransport({
    url: parsed.url,
    model: modelOf(parsed),
    ...(apiKey ? { apiKey } : {}),
    ...(typeof parsed.timeoutMs === 'number' ? { timeoutMs: parsed.timeoutMs } : {}),
    ...(io.fetch ? { fetch: io.fetch } : {}),
  })
  const bar = progressBar(io)
  const report = await runProbe({ ...settingsOf(parsed), transport, onProgress: bar.draw })
  bar.clear()
  io.stdout(
    parsed.json === true ? `${JSON.stringify(report, jsonNumbers, 2)}\n` : renderReport(report),
  )
  if (report.verdict === 'inconclusive') io.stderr(`workers-ai-guard probe: ${report.summary}\n`)
  return report.exitCode
}

/** The one-line progress bar on stderr, drawn only on a terminal and cleared before the report. */
function progressBar(io: CommandIo): {
  draw: ((event: ProbeProgress) => void) | undefined
  clear(): void
} {
  let drawn = false
  return {
    draw: io.isTTY
      ? (event) => {
          drawn = true
          io.stderr(`\r\x1b[2K${progressLine(event, io.columns ?? 80)}`)
        }
      : undefined,
    clear() {
      if (drawn) io.stderr('\r\x1b[2K')
    },
  }
}

function usageFailure(io: CommandIo, error: unknown): number {
  io.stderr(
    `workers-ai-guard probe: ${messageOf(error)}\nRun "workers-ai-guard probe --help" for usage.\n`,
  )
  return 2
}

/** JSON has no Infinity: an unbounded rate is written as the string "Infinity". */
function jsonNumbers(_key: string, value: unknown): unknown {
  return value === Number.POSITIVE_INFINITY ? 'Infinity' : value
}
