/**
 * @module The probe's report and dry-run plan as text, for a terminal or a log.
 */
import { describeGuardSign } from './guard-sign'
import { fmt } from './numbers'
import type { DryRunReport, ProbeReport } from './report'
import type { ProbeStep } from './step'

/**
 * The report as text for a terminal or a log: the step table, the findings, the recommendation and
 * the profile snippet.
 *
 * @example
 * console.log(renderReport(report))
 */
export function renderReport(r: ProbeReport): string {
  const out: string[] = []
  out.push(`workers-ai-guard probe · ${r.target} · ${r.model} · seed ${r.seed}`, '')
  out.push(...stepTable(r.steps), '')
  out.push(...limitRows(r), ...findingRows(r))
  out.push('', r.summary)
  if (r.guard) out.push('', r.guard.note)
  if (r.profileSnippet) {
    out.push('', 'Profile for guardAi / aiGuard (`models` option):', '', r.profileSnippet)
  }
  return `${out.join('\n')}\n`
}

function stepTable(steps: readonly ProbeStep[]): string[] {
  const lines = ['    #       tokens      counted    TTFT ms   min ms  result']
  for (const s of steps) {
    const ttft = s.ttftMs === null ? '—' : s.ttftMs.toFixed(1)
    const counted = s.reportedPromptTokens === null ? '—' : fmt(s.reportedPromptTokens)
    const what = s.kind === 'ok' ? 'ok' : `${s.kind}: ${s.detail}`
    lines.push(
      `  ${String(s.index).padStart(3)}  ${fmt(s.tokens).padStart(11)}  ${counted.padStart(11)}  ${ttft.padStart(9)}  ${s.minTtftMs.toFixed(1).padStart(7)}  ${what}`,
    )
  }
  return lines
}

const row = (label: string, value: string): string => `${label.padEnd(17)}${value}`

/** What was probed, the verdict, and the bracket around the limit. */
function limitRows(r: ProbeReport): string[] {
  const rows: string[] = []
  if (r.guard) {
    rows.push(
      row(
        'endpoint',
        `a workers-ai-guard Worker (seen: ${r.guard.signs.map(describeGuardSign).join(', ')}) — this measures the guard’s ceiling, not the engine’s pool`,
      ),
    )
  }
  const ok = r.largestOk
  const failed = r.smallestFailure
  const counted =
    ok === null || ok.reportedPromptTokens === null
      ? ''
      : ` (target counted ${fmt(ok.reportedPromptTokens)})`
  rows.push(
    row('verdict', `${r.verdict.toUpperCase()} (exit ${r.exitCode})`),
    row('advertised', `${fmt(r.advertisedWindow)} tokens (probed up to ${fmt(r.top)})`),
    row('largest correct', ok ? `${fmt(ok.tokens)} tokens${counted}` : 'none'),
    row(
      'smallest failed',
      failed ? `${fmt(failed.tokens)} tokens — ${failed.kind}: ${failed.detail}` : 'none',
    ),
  )
  if (failed && ok) {
    const pinned = r.converged
      ? `to within ${r.tolerance * 100}%`
      : 'no (stopped before the tolerance)'
    rows.push(row('limit pinned', pinned))
  }
  return rows
}

/** Leak and timing flags, the budget spent, why the run stopped, and the recommendation. */
function findingRows(r: ProbeReport): string[] {
  const leakFrom = [...new Set(r.steps.flatMap((s) => s.foreignFrom))]
    .sort((a, b) => a - b)
    .map((n) => `#${n}`)
  const rows = [
    row(
      'leak',
      r.leak ? `YES — answers quoted earlier requests ${leakFrom.join(', ')}` : 'none seen',
    ),
    row('impossible TTFT', r.impossibleTtft ? 'YES' : 'none seen'),
  ]
  if (r.observedPrefillTokensPerSecond !== null) {
    const rate = fmt(r.observedPrefillTokensPerSecond)
    rows.push(row('observed prefill', `≥ ${rate} tok/s (fastest correct answer)`))
  }
  const b = r.budget
  const stopped = b.stoppedBy ? ` — stopped by ${b.stoppedBy}` : ''
  rows.push(
    row(
      'budget',
      `${b.requests}/${b.maxRequests} requests, ${fmt(b.chargedTokens)}/${fmt(b.maxTokensTotal)} tokens${stopped}`,
    ),
  )
  if (r.fatal) rows.push(row('stopped', r.fatal))
  const rec = r.recommendation
  if (rec) {
    const unit = rec.basis === 'reported' ? 'target tokens' : 'o200k tokens'
    rows.push(
      row(
        'recommended',
        `ceiling ${fmt(rec.ceiling)} ${unit} (pool ${fmt(rec.kvPoolTokens)} = largest correct − ${rec.margin * 100}%, less ${fmt(rec.outputReserve)} output reserve)`,
      ),
    )
  }
  if (r.guard && r.largestOk) {
    rows.push(
      row(
        'recommended',
        'none: this is the guard’s own ceiling (probe the upstream for a profile)',
      ),
    )
  }
  return rows
}

/**
 * The dry-run plan as text.
 *
 * @example
 * console.log(renderDryRun(planProbe({ window: 1_048_576 }, { target: 'http://localhost:8787/v1', model })))
 */
export function renderDryRun(d: DryRunReport): string {
  const p = d.plan
  return [
    `workers-ai-guard probe · dry run (nothing is sent) · ${d.target} · ${d.model}`,
    '',
    `advertised window   ${fmt(d.advertisedWindow)} tokens; probing up to ${fmt(p.top)} (window − ${fmt(d.maxOutput)} output − template room)`,
    `growth lengths      ${p.growth.map(fmt).join(', ')}`,
    `then bisection      up to ${p.maxBisectionSteps} steps between the largest success and the smallest failure (tolerance ${d.tolerance * 100}%)`,
    `worst case          ${p.worstCaseRequests} requests, ${fmt(p.worstCaseTokens)} tokens (prompts + ${fmt(d.maxOutput)} output each; retries extra)`,
    `budget              ${d.budget.maxRequests} requests, ${fmt(d.budget.maxTokensTotal)} tokens — ${d.fitsBudget ? 'covers the worst case' : 'may run out before a conclusion (exit 2): raise --max-requests / --max-tokens-total'}`,
    '',
  ].join('\n')
}
