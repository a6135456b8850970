/**
 * @module The directive measurement's text output: the recommendation first, then the figures.
 */
import type { DirectivePlan, DirectiveReport } from './run'

const pct = (n: number | null): string => (n === null ? '—' : `${Math.round(n * 100)}%`)
const num = (n: number | null): string => (n === null ? '—' : String(Math.round(n)))
const ms = (n: number | null): string => (n === null ? '—' : `+${(n / 1000).toFixed(2)} s`)

/**
 * A report as text.
 *
 * @example
 * io.stdout(renderDirectiveReport(report))
 */
export function renderDirectiveReport(r: DirectiveReport): string {
  const rec = r.recommendation
  const lines = [
    `Directive measurement of ${r.model} at ${r.target} (seed ${r.seed})`,
    `${r.requests} requests, ${r.tokens.toLocaleString('en-US')} tokens${r.stopped === 'budget' ? ' — stopped by a budget before every sample was sent' : ''}`,
    '',
    'Recommended',
    `  GUARD_MODELS='${rec.env.GUARD_MODELS}'`,
    `  GUARD_STREAM_RELEASE=${rec.env.GUARD_STREAM_RELEASE}`,
    ...(rec.env.GUARD_HEARTBEAT_MS ? [`  GUARD_HEARTBEAT_MS=${rec.env.GUARD_HEARTBEAT_MS}`] : []),
    ...rec.reasons.map((reason) => `  - ${reason}`),
    '',
    `Wordings (plain requests; delays at ${num(r.rate.tokensPerSecond)} tokens/s, ${r.rate.source})`,
    '  wording       echo  restated  no proof  to proof  reasoning  first byte verified  first content',
  ]
  for (const w of r.wordings) {
    lines.push(
      `  ${w.wording.padEnd(12)} ${pct(w.echoRate).padStart(5)} ${pct(w.restateRate).padStart(9)} ${pct(w.noProofRate).padStart(9)} ${num(w.tokensToProof).padStart(9)} ${num(w.reasoningTokens).padStart(10)} ${ms(w.firstByteMs.verified).padStart(20)} ${`≥ ${ms(w.firstContentMs)}`.padStart(14)}`,
    )
  }
  if (r.json) {
    lines.push(
      '',
      `JSON mode: ${r.json.answers} answers, "guard_echo" first in ${pct(r.json.echoRate)}, elsewhere in ${pct(r.json.lateRate)}`,
    )
  }
  lines.push(
    '',
    'Kinds of request',
    '  kind                                   answers  echo  late  tools  restated  at token  decorations',
  )
  for (const c of r.cells) {
    const decorations = Object.entries(c.decorations)
      .map(([shape, n]) => `${shape} ×${n}`)
      .join(', ')
    lines.push(
      `  ${c.name.padEnd(38)} ${String(c.answers).padStart(7)} ${pct(c.echoRate).padStart(5)} ${pct(c.lateRate).padStart(5)} ${pct(c.toolCallRate).padStart(6)} ${pct(c.restateRate).padStart(9)} ${num(c.restateToken).padStart(9)}  ${decorations}${c.errors ? `  (${c.errors} errors: ${c.firstError ?? ''})` : ''}`,
    )
  }
  return `${lines.join('\n')}\n`
}

/**
 * A plan as text (`--dry-run`).
 *
 * @example
 * io.stdout(renderDirectivePlan(plan))
 */
export function renderDirectivePlan(p: DirectivePlan): string {
  return [
    `Directive measurement plan for ${p.model} at ${p.target} (seed ${p.seed})`,
    `${p.cells.length} kinds of request × ${p.settings.samples} samples = ${p.requests} requests, at most ${p.tokens.toLocaleString('en-US')} tokens`,
    `Budgets: ${p.settings.maxRequests} requests, ${p.settings.maxTokensTotal.toLocaleString('en-US')} tokens — ${p.withinBudget ? 'the whole plan fits' : 'the run will stop at the first cap it meets'}`,
    'Nothing of yours is sent: fillers are random words, questions and directives are the guard’s.',
    ...p.cells.map((c) => `  ${c}`),
    '',
  ].join('\n')
}
