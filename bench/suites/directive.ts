/**
 * @module Benchmark: the directive measurement (`workers-ai-guard directive`) run against the
 * simulator configured as each model of the streaming bench, at the bench's 30 tokens/s on a virtual
 * clock. Each row sets what the configuration put there (the token the restated code begins at)
 * beside what the measurement found, and the first-byte delay the measurement predicts for `verified`
 * beside the one the streaming bench measured through the guard (bench/results/streaming.json).
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { VirtualClock } from '../../sim/clock'
import { type SimConfig, SimEngine } from '../../sim/engine'
import { loadTokenizer } from '../../sim/tokenizer'
import { median } from '../../src/tools/directive/recommendation'
import { type DirectiveReport, measureDirective } from '../../src/tools/directive/run'
import { runnerTransport } from '../../src/tools/probe'
import { BENCH_DIR, machineInfo, type Suite, type SuiteOptions, writeResult } from '../lib'

const MODEL = '@cf/zai-org/glm-5.3'
const RATE = 30

interface BenchModel {
  /** The streaming bench's row this configuration reproduces (undefined: not one of its rows). */
  row?: string
  label: string
  config: Partial<SimConfig>
  /** The qwen3 text before the code when restated or noted (the code then begins at its length). */
  lead?: string
}

const MODELS: BenchModel[] = [
  { row: 'simulator model', label: 'neither restates nor notes', config: {} },
  {
    row: 'simulator, restating',
    label: 'restates first thing',
    config: { directiveQuoteRate: 1 },
    lead: 'The instruction at the end: begin with ',
  },
  {
    label: 'restates at token 120',
    config: { directiveQuoteRate: 1, restateAtToken: 120 },
  },
  {
    row: 'simulator, note-first',
    label: 'follows note-first',
    config: { thinkingNoteRate: 1 },
    lead: 'Noting the code first: ',
  },
  {
    row: '1,000-token reasoning',
    label: '1,000-token thinker',
    config: { extraReasoningTokens: 1_000 },
  },
  {
    row: '1,000-token reasoning, note-first',
    label: '1,000-token thinker, follows note-first',
    config: { extraReasoningTokens: 1_000, thinkingNoteRate: 1 },
    lead: 'Noting the code first: ',
  },
  { label: 'ignores the directive', config: { echoIgnoreRate: 1 } },
  { label: 'JSON mode: echo member late half the time', config: { jsonEchoLateRate: 0.5 } },
]

async function measure(model: BenchModel, samples: number): Promise<DirectiveReport> {
  const clock = new VirtualClock()
  const engine = new SimEngine(
    { mode: 'fixed', decodeTokensPerSecond: RATE, prefillTokensPerSecond: 50_000, ...model.config },
    { clock },
  )
  return await measureDirective({
    transport: runnerTransport(engine.binding('directive'), {
      model: MODEL,
      now: () => clock.now(),
      target: 'simulator',
    }),
    formats: ['plain', 'json'],
    deliveries: ['stream'],
    lengths: [200, 8_000],
    samples,
    seed: 1,
  })
}

/** The streaming bench's `verified` first byte over unguarded at 30 tok/s, by its row name. */
async function streamingBench(): Promise<Record<string, number>> {
  try {
    const json = JSON.parse(await readFile(join(BENCH_DIR, 'results', 'streaming.json'), 'utf8'))
    const rows = json.holdBack as {
      source: string
      policy: string
      rate: number
      extraFirstByteMs: number
    }[]
    return Object.fromEntries(
      rows
        .filter((r) => r.policy === 'verified' && r.rate === RATE)
        .map((r) => [r.source, r.extraFirstByteMs]),
    )
  } catch {
    return {}
  }
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const samples = quick ? 2 : 4
  const qwen3 = await loadTokenizer('qwen3')
  const measuredByBench = await streamingBench()
  const rows = []
  for (const model of MODELS) {
    const report = await measure(model, samples)
    const configured =
      model.config.restateAtToken ??
      (model.lead === undefined ? null : qwen3.encode(model.lead).length)
    const best = report.recommendation.profile.directive
    const restateTokens = report.cells
      .filter(
        (c) =>
          c.cell.format === 'plain' &&
          c.cell.wording === (model.config.thinkingNoteRate ? 'note-first' : 'reply-first'),
      )
      .map((c) => c.restateToken)
      .filter((t): t is number => t !== null)
    const chosen = report.wordings.find((w) => w.wording === best)
    rows.push({
      label: model.label,
      config: model.config,
      configuredRestateToken: configured,
      measuredRestateToken: median(restateTokens),
      wordings: report.wordings,
      json: report.json,
      predictedVerifiedMs: chosen?.firstByteMs.verified ?? null,
      streamingBenchVerifiedMs:
        model.row === undefined ? null : (measuredByBench[model.row] ?? null),
      recommendation: report.recommendation,
      requests: report.requests,
    })
    console.log(
      `  ${model.label.padEnd(42)} restate at ${configured ?? '—'} → ${median(restateTokens) ?? '—'}; ${best}, ${report.recommendation.streamRelease}${report.recommendation.heartbeatMs ? ' + heartbeat' : ''}; verified +${chosen?.firstByteMs.verified ?? '—'} ms`,
    )
  }
  const path = await writeResult(quick ? 'directive-quick' : 'directive', {
    suite: 'directive',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    note: 'workers-ai-guard directive against the simulator (virtual clock, 30 tok/s), per model: plain and JSON mode, streamed, latn/cyrl/hans, 200 and 8,000 tokens.',
    rows,
  })
  const pct = (n: number | null | undefined) =>
    n === null || n === undefined ? '—' : `${Math.round(n * 100)}%`
  const sec = (n: number | null) => (n === null ? '—' : `+${(n / 1000).toFixed(2)} s`)
  const table = [
    '| simulator model | restated code begins at (configured → measured) | restated, reply-first / note-first | JSON echo first | recommended | `verified` first byte: predicted / streaming bench |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => {
      const [reply, note] = ['reply-first', 'note-first'].map((w) =>
        r.wordings.find((x) => x.wording === w),
      )
      const rec = r.recommendation
      return `| ${r.label} | ${r.configuredRestateToken ?? '—'} → ${r.measuredRestateToken ?? '—'} | ${pct(reply?.restateRate)} / ${pct(note?.restateRate)} | ${pct(r.json?.echoRate)} | \`${rec.profile.echo}\`, \`${rec.profile.directive}\`, \`${rec.streamRelease}\`${rec.heartbeatMs ? ' + heartbeat' : ''} | ${sec(r.predictedVerifiedMs)} / ${sec(r.streamingBenchVerifiedMs)} |`
    }),
  ].join('\n')
  console.log(table)
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'directive', run }
export default suite
