/**
 * @module `workers-ai-guard directive [options]`: measures how a deployment's model follows the
 * guard's echo directive and prints the profile to run it with. All I/O injected (see CommandIo).
 */

import type { EchoWording } from '../../core'
import { type ArgKind, parseCommandLine, UsageError } from '../cli-args'
import type { CommandIo } from '../probe/command'
import { urlTransport } from '../probe/transport'
import { messageOf } from '../probe/transport-error'
import { renderDirectivePlan, renderDirectiveReport } from './directive-render'
import {
  type Delivery,
  DIRECTIVE_DEFAULTS,
  type DirectiveOptions,
  type RequestFormat,
  type Script,
} from './directive-settings'
import { measureDirective, planDirective } from './run'

const DEFAULT_MODEL = '@cf/zai-org/glm-5.3'
const d = DIRECTIVE_DEFAULTS

/** Usage text of `workers-ai-guard directive`. */
const DIRECTIVE_USAGE = `Usage: workers-ai-guard directive --url <base-url> [options]

Measures how the model behind an OpenAI-compatible endpoint follows the guard's echo directive, and
prints the profile to run it with (GUARD_MODELS, GUARD_STREAM_RELEASE). Sends the guard's real
directive on random filler in several scripts — short and long prompts, plain, JSON mode and tools,
streamed and whole — and reads, per kind of request: how often the content opens with the code, how
often and at which token the reasoning restates it, slips, decorations, and the delay each release
policy would give. Point it at the engine (Workers AI, or \`npm run sim\`), not at a guard Worker.
Sends no user data.

Target
  --url <url>               OpenAI-compatible base URL (POST <url>/chat/completions)
  --key <key>               bearer key (default: $PROBE_API_KEY)
  --model <id>              model id (default: ${DEFAULT_MODEL})
  --timeout <seconds>       per request (default: 600)

What is sent
  --samples <n>             answers per kind of request (default: ${d.samples})
  --lengths <t,t>           prompt lengths, o200k tokens (default: ${d.lengths.join(',')})
  --formats <f,f>           plain, json, tools (default: all)
  --deliveries <d,d>        stream, whole (default: both)
  --scripts <s,s>           latn, cyrl, hans (default: all)
  --wordings <w,w>          reply-first, note-first (default: both)
  --max-output <tokens>     max_tokens per request (default: ${d.maxOutput})
  --seed <uint32>           replay an earlier run's fillers and canaries (default: random)

Budget (hard caps)
  --max-requests <n>        (default: ${d.maxRequests})
  --max-tokens-total <n>    prompt tokens + max_tokens per request (default: ${d.maxTokensTotal})

Recommendation
  --latency-budget <ms>     first-byte delay a verified stream may add (default: ${d.latencyBudgetMs})
  --accept-async            recommend async where verified exceeds the budget
  --rate <tok/s>            give delays at this decode speed (default: measured)
  --min-echo-rate <f>       least echo rate to require the echo (default: ${d.minEchoRate})

Output
  --dry-run                 print the plan (kinds, requests, worst-case tokens); send nothing
  --json                    print one JSON report on stdout (docs/directive.md)
  --help                    this text

Exit codes: 0 measured (the echo can be required), 1 the model does not follow the directive well
enough to require the echo, 2 could not run (bad arguments, unreachable URL, fatal HTTP status).
`

function integer(name: string, raw: string): number {
  const n = Number(raw.replace(/[_,]/g, ''))
  if (!/^\d[\d_,]*$/.test(raw.trim()) || !Number.isSafeInteger(n)) {
    throw new UsageError(`--${name} must be a whole number (got ${JSON.stringify(raw)})`)
  }
  return n
}

function decimal(name: string, raw: string): number {
  const n = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(n)) {
    throw new UsageError(`--${name} must be a number (got ${JSON.stringify(raw)})`)
  }
  return n
}

const list = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)

interface Parsed {
  options: DirectiveOptions
  url?: string
  key?: string
  model: string
  timeoutMs?: number
  dryRun: boolean
  json: boolean
  help: boolean
}

type Setter = (p: Parsed, value: string, name: string) => void

/** Each option with a value, and what it sets (lists are checked by the settings, naming the option). */
const VALUES: Record<string, Setter> = {
  url: (p, v) => {
    p.url = v
  },
  key: (p, v) => {
    p.key = v
  },
  model: (p, v) => {
    p.model = v
  },
  timeout: (p, v, n) => {
    p.timeoutMs = decimal(n, v) * 1000
  },
  samples: (p, v, n) => {
    p.options.samples = integer(n, v)
  },
  lengths: (p, v, n) => {
    p.options.lengths = list(v).map((x) => integer(n, x))
  },
  formats: (p, v) => {
    p.options.formats = list(v) as RequestFormat[]
  },
  deliveries: (p, v) => {
    p.options.deliveries = list(v) as Delivery[]
  },
  scripts: (p, v) => {
    p.options.scripts = list(v) as Script[]
  },
  wordings: (p, v) => {
    p.options.wordings = list(v) as EchoWording[]
  },
  'max-output': (p, v, n) => {
    p.options.maxOutput = integer(n, v)
  },
  seed: (p, v, n) => {
    p.options.seed = integer(n, v)
  },
  'max-requests': (p, v, n) => {
    p.options.maxRequests = integer(n, v)
  },
  'max-tokens-total': (p, v, n) => {
    p.options.maxTokensTotal = integer(n, v)
  },
  'latency-budget': (p, v, n) => {
    p.options.latencyBudgetMs = integer(n, v)
  },
  rate: (p, v, n) => {
    p.options.rate = decimal(n, v)
  },
  'min-echo-rate': (p, v, n) => {
    p.options.minEchoRate = decimal(n, v)
  },
}

const FLAGS: Record<string, (p: Parsed) => void> = {
  'accept-async': (p) => {
    p.options.acceptAsync = true
  },
  'dry-run': (p) => {
    p.dryRun = true
  },
  json: (p) => {
    p.json = true
  },
  help: (p) => {
    p.help = true
  },
}

function parse(args: readonly string[]): Parsed {
  const kinds: Record<string, ArgKind> = {}
  for (const name of Object.keys(VALUES)) kinds[name] = 'string'
  for (const name of Object.keys(FLAGS)) kinds[name] = 'boolean'
  const out: Parsed = { options: {}, model: DEFAULT_MODEL, dryRun: false, json: false, help: false }
  for (const { name, value } of parseCommandLine(args, kinds, false).options) {
    if (value === undefined) FLAGS[name]?.(out)
    else VALUES[name]?.(out, value, name)
  }
  return out
}

/**
 * Runs `workers-ai-guard directive <args…>` and resolves to its exit code.
 *
 * @example
 * const code = await directiveCommand(['--url', 'http://localhost:8788/v1', '--json'], io)
 */
export async function directiveCommand(args: readonly string[], io: CommandIo): Promise<number> {
  try {
    const p = parse(args)
    if (p.help) {
      io.stdout(DIRECTIVE_USAGE)
      return 0
    }
    if (p.dryRun) {
      const plan = planDirective(p.options, { target: p.url ?? '(no --url given)', model: p.model })
      io.stdout(p.json ? `${JSON.stringify(plan, null, 2)}\n` : renderDirectivePlan(plan))
      return 0
    }
    if (p.url === undefined)
      throw new UsageError('--url is required (or --dry-run to see the plan)')
    const apiKey = p.key ?? io.env.PROBE_API_KEY
    const transport = urlTransport({
      url: p.url,
      model: p.model,
      ...(apiKey ? { apiKey } : {}),
      ...(p.timeoutMs === undefined ? {} : { timeoutMs: p.timeoutMs }),
      ...(io.fetch ? { fetch: io.fetch } : {}),
    })
    const report = await measureDirective({
      ...p.options,
      transport,
      ...(io.isTTY
        ? { onProgress: (sent, of) => io.stderr(`\r\x1b[2K${sent}/${of} requests`) }
        : {}),
    })
    if (io.isTTY) io.stderr('\r\x1b[2K')
    io.stdout(p.json ? `${JSON.stringify(report, null, 2)}\n` : renderDirectiveReport(report))
    return report.exitCode
  } catch (error) {
    io.stderr(
      `workers-ai-guard directive: ${messageOf(error)}\nRun "workers-ai-guard directive --help" for usage.\n`,
    )
    return 2
  }
}
