import { spawn } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { type AuditReport, renderAuditCsv, renderAuditText } from '../../src/tools/audit'
import {
  buildLogSet,
  gatewayLines,
  gatewayPage,
  guardedVerdicts,
  type LogSet,
  openAiLines,
  type SimCall,
  TENANTS,
  type TimedVerdict,
  verdictLines,
} from '../audit/logset'
import { auditJson, promptWords, runAuditCommand, words } from '../audit/run'

// The incident's traffic: four tenants' honest requests (short chats, documents, 100k–250k-token
// prompts, later turns, retries hitting the prefix cache, a shared system prompt) with five prompts
// over the published 681,280-token pool among them, unguarded in `pd-abort-leak`. Written out in every
// format the audit reads; the audit must find every leaked answer, name a request whose prompt it
// quotes (checked against the prompts themselves), and flag at most 1% of the honest traffic.
const HONEST = 220
const LEAKS = 5
const dir = join(tmpdir(), `audit-sim-${Date.now()}-${Math.floor(Math.random() * 1e6)}`)
let set: LogSet
let verdicts: TimedVerdict[]
let appReport: AuditReport
const files: Record<string, string> = {}

const audit = runAuditCommand

const promptOf = (call: SimCall): string => promptWords(call.inputs)

const answerOf = (call: SimCall): string => {
  const message = call.output.choices[0]!.message
  return `${message.reasoning_content ?? ''}\n${message.content}`
}

/**
 * The ground truth of a leak: the other tenants' requests whose prompt holds one of the answer's
 * quotes (10 words or more, the sentence-sized quotes the simulated model makes).
 */
function truthOf(leak: SimCall): Set<string> {
  const quotes = [...answerOf(leak).matchAll(/“([^”]+)”/g)]
    .map((m) => words(m[1]!))
    .filter((q) => q.split(' ').length >= 10)
  const sources = new Set<string>()
  for (const call of set.calls) {
    if (call.tenant === leak.tenant || call.startMs >= leak.startMs) continue
    const prompt = promptOf(call)
    if (quotes.some((q) => prompt.includes(q))) sources.add(call.id)
  }
  return sources
}

/** Asserts the detection figures on one report and returns them. */
function assertDetection(report: AuditReport): { fp: number; named: number } {
  const byId = new Map(report.findings.map((f) => [f.id, f]))
  let named = 0
  for (const leak of set.leaks) {
    const finding = byId.get(leak.id)
    expect(finding, `leak ${leak.id} found`).toBeDefined()
    expect(finding?.certain).toBe(true)
    const truth = truthOf(leak)
    if (truth.size === 0) continue
    // It names at least one request whose data it carried, and every request named first quotes true.
    const namedIds = (finding?.foreign ?? []).flatMap((s) => s.requests.map((r) => r.id))
    expect(
      namedIds.some((id) => truth.has(id)),
      `${leak.id} names one of ${[...truth]}`,
    ).toBe(true)
    for (const source of finding?.foreign ?? []) {
      const first = set.calls.find((c) => c.id === source.requests[0]?.id)
      expect(first, `${source.requests[0]?.id} is a logged request`).toBeDefined()
      expect(first?.tenant).not.toBe(leak.tenant)
      expect(source.span ?? 0).toBeGreaterThanOrEqual(10)
      expect(promptOf(first!)).toContain(
        words(source.excerpt ?? '')
          .split(' ')
          .slice(1, -1)
          .join(' '),
      )
    }
    named++
  }
  const leakIds = new Set(set.leaks.map((c) => c.id))
  const fp = report.findings.filter((f) => !leakIds.has(f.id)).length
  expect(fp / set.honest.length).toBeLessThanOrEqual(0.01)
  return { fp, named }
}

beforeAll(async () => {
  set = await buildLogSet({ honest: HONEST, leaks: LEAKS })
  verdicts = await guardedVerdicts({ honest: 60, leaks: 2 })
  await mkdir(dir, { recursive: true })
  const write = async (name: string, text: string): Promise<void> => {
    files[name] = join(dir, name)
    await writeFile(files[name], text)
  }
  await write('app.jsonl', `${openAiLines(set.calls).join('\n')}\n`)
  await write('gateway.jsonl', `${gatewayLines(set.calls).join('\n')}\n`)
  await write('gateway-page.json', gatewayPage(set.calls))
  await write('verdicts.jsonl', `${verdictLines(verdicts).join('\n')}\n`)
  // One file, two formats: app lines for the first half, gateway records for the rest.
  const half = Math.floor(set.calls.length / 2)
  await write(
    'mixed.jsonl',
    `${[...openAiLines(set.calls.slice(0, half)), ...gatewayLines(set.calls.slice(half))].join('\n')}\n`,
  )
}, 120_000)

describe('audit of a simulated incident', () => {
  it('should have leaks and honest traffic to audit', () => {
    expect(set.leaks.length).toBe(LEAKS)
    expect(set.honest.length).toBe(HONEST)
    for (const leak of set.leaks) expect(leak.output.usage.prompt_tokens).toBeGreaterThan(681_280)
    // Several tenants, and at least some leaks carry other tenants' data.
    expect(new Set(set.calls.map((c) => c.tenant)).size).toBe(TENANTS.length)
    expect(set.leaks.filter((l) => truthOf(l).size > 0).length).toBeGreaterThanOrEqual(3)
  })

  it('should find every leak in OpenAI-format JSONL and name its source', async () => {
    const { code, report } = await auditJson(files['app.jsonl']!)
    appReport = report
    expect(code).toBe(1)
    expect(report.verdict).toBe('signature')
    const { fp, named } = assertDetection(report)
    expect(fp).toBe(0)
    expect(named).toBeGreaterThanOrEqual(3)
    expect(report.files[0]?.formats).toEqual({ 'openai-jsonl': LEAKS + HONEST })
    expect(report.coverage.foreign_content.judged).toBe(LEAKS + HONEST)
    // Leaks are proved three ways: over the pool, impossible first token, foreign content.
    const carrier = set.leaks.find((l) => truthOf(l).size > 0)!
    const leak = report.findings.find((f) => f.id === carrier.id)!
    expect(leak.signals.map((s) => s.check)).toEqual(
      expect.arrayContaining(['over_pool', 'prefill_speed', 'foreign_content']),
    )
    expect(leak.signals.find((s) => s.check === 'prefill_speed')?.figures.measure).toBe('ttft')
    expect(report.flows.length).toBeGreaterThan(0)
    expect(report.index.sampleLevel).toBe(0)
  }, 120_000)

  it('should say it in text: windows, evidence, whose data appeared where', async () => {
    const run = { stdout: renderAuditText(appReport) }
    expect(run.stdout).toContain('workers-ai-guard audit — SIGNATURE FOUND')
    expect(run.stdout).toContain('Suspicious requests by time window (UTC)')
    expect(run.stdout).toMatch(/2026-09-01 1\d:00:00 – 1\d:00:00: \d+ suspicious/)
    for (const leak of set.leaks) expect(run.stdout).toContain(leak.id)
    expect(run.stdout).toContain('[PROOF]')
    expect(run.stdout).toMatch(/consecutive words of the prompt of request req-\d{4}-/)
    expect(run.stdout).toContain('the engine counted')
    expect(run.stdout).toContain('Whose data appeared where (prompt of → answer to)')
    expect(run.stdout).toMatch(
      /(acme|globex|initech|umbrella) → (acme|globex|initech|umbrella): \d+ answer/,
    )
    expect(run.stdout).toContain('Exit 1')
  }, 120_000)

  it('should find every leak in AI Gateway JSON lines (duration only) and name its source', async () => {
    const { code, report } = await auditJson(files['gateway.jsonl']!)
    expect(code).toBe(1)
    const { fp } = assertDetection(report)
    expect(fp).toBe(0)
    expect(report.files[0]?.formats).toEqual({ 'ai-gateway': LEAKS + HONEST })
    const leak = report.findings.find((f) => f.id === set.leaks[0]!.id)!
    expect(leak.tenant).toBe(set.leaks[0]!.tenant)
    expect(leak.metadata).toEqual({ tenant: set.leaks[0]!.tenant, app: 'logistics' })
    expect(leak.signals.find((s) => s.check === 'prefill_speed')?.figures.measure).toBe('duration')
    const text = { stdout: renderAuditText(report) }
    expect(text.stdout).toContain('Cloudflare AI Gateway logs ×225')
    expect(text.stdout).toContain('Cloudflare AI Gateway logs never carry: time to first token')
    expect(text.stdout).toContain('weaker: prefill_speed — only the total duration is logged')
  }, 120_000)

  it('should read a list API page (newest first, pretty-printed) and CSV out', async () => {
    const { code, report } = await auditJson(files['gateway-page.json']!)
    expect(code).toBe(1)
    assertDetection(report)
    expect(report.files[0]?.document).toBe(true)
    const csv = { stdout: renderAuditCsv(report) }
    const rows = csv.stdout.trim().split('\r\n')
    expect(rows[0]).toBe(
      'time,request_id,tenant,model,status,format,where,proof,withheld,checks,strongest_check,strongest_evidence,source_tenants,source_requests,excerpt',
    )
    expect(rows.length).toBe(1 + report.findings.length)
    for (const leak of set.leaks) expect(csv.stdout).toContain(`,${leak.id},${leak.tenant},`)
  }, 120_000)

  it('should report the guard’s own verdicts: withheld answers, content checks off', async () => {
    const { code, report } = await auditJson(files['verdicts.jsonl']!)
    expect(code).toBe(1)
    const quarantined = verdicts.filter((v) => v.verdict.action === 'quarantine')
    expect(quarantined.length).toBe(2)
    expect(report.findings.map((f) => f.id).sort()).toEqual(
      quarantined.map((v) => v.verdict.requestId).sort(),
    )
    for (const f of report.findings) {
      expect(f.withheld).toBe(true)
      expect(f.startMs).toBeGreaterThan(0)
    }
    expect(report.disabledByFormat).toContainEqual({
      format: 'guard-verdict',
      check: 'foreign_content',
      why: 'verdict lines carry no text',
    })
    const text = await audit(files['verdicts.jsonl']!)
    expect(text.code).toBe(1)
    expect(text.stdout).toContain('[WITHHELD BY THE GUARD]')
    expect(text.stdout).toContain(
      'off for workers-ai-guard verdict logs (ai_guard_verdict): foreign_content (verdict lines carry no text)',
    )
  }, 120_000)

  it('should read a file that mixes formats, and several files at once', async () => {
    const mixed = await auditJson(files['mixed.jsonl']!, files['verdicts.jsonl']!)
    expect(mixed.code).toBe(1)
    assertDetection(mixed.report)
    expect(Object.keys(mixed.report.files[0]!.formats).sort()).toEqual([
      'ai-gateway',
      'openai-jsonl',
    ])
    expect(mixed.report.files.map((f) => f.records)).toEqual([LEAKS + HONEST, verdicts.length])
    const text = renderAuditText(mixed.report)
    expect(text).toContain('mixed formats: each line was read by its own format')
    expect(text).toContain('[WITHHELD BY THE GUARD]')
  }, 120_000)

  it('should run as the real bin', async () => {
    const child = spawn(
      'node_modules/.bin/tsx',
      ['src/tools/cli.ts', 'audit', files['app.jsonl']!, '--csv'],
      {
        cwd: process.cwd(),
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    )
    let out = ''
    const decoder = new TextDecoder()
    child.stdout.on('data', (chunk) => {
      out += decoder.decode(chunk, { stream: true })
    })
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject)
      child.on('close', resolve)
    })
    expect(code).toBe(1)
    expect(out.split('\r\n')[0]).toMatch(/^time,request_id,tenant/)
    for (const leak of set.leaks) expect(out).toContain(leak.id)
  }, 120_000)
})
