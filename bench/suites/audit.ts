/**
 * @module Benchmark: `workers-ai-guard audit` throughput in MB/s per log format, side by side in one
 * run, on a simulated incident's log set (test/audit/logset.ts: four tenants' honest traffic around
 * prompts over the 681,280-token pool) written to disk and read back through the CLI's own file
 * adapter — both passes, the exact pass, the estimator and the fingerprints included — plus the
 * content index's memory.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AuditReport, nodeLogSource, runAudit } from '../../src/tools/audit'
import {
  buildLogSet,
  gatewayLines,
  gatewayPage,
  guardedVerdicts,
  openAiLines,
  verdictLines,
} from '../../test/audit/logset'
import { machineInfo, median, type Suite, type SuiteOptions, sideBySide, writeResult } from '../lib'

interface Row {
  format: string
  file: string
  megabytes: number
  records: number
  medianSeconds: number
  runs: number
  mbPerSecond: number
  findings: number
  indexFingerprints: number
  indexMegabytes: number
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const started = performance.now()
  const size = quick ? { honest: 120, leaks: 2 } : { honest: 400, leaks: 6 }
  const set = await buildLogSet(size)
  // Verdict lines carry no text: many of them, from repeated guarded runs' lines.
  const verdicts = await guardedVerdicts({ honest: 40, leaks: 1 })
  const dir = join(tmpdir(), `audit-bench-${Date.now()}`)
  await mkdir(dir, { recursive: true })
  const texts: Record<string, { file: string; text: string }> = {
    'openai-jsonl': { file: 'app.jsonl', text: `${openAiLines(set.calls).join('\n')}\n` },
    'openai-jsonl (honest part only)': {
      file: 'honest.jsonl',
      text: `${openAiLines(set.honest).join('\n')}\n`,
    },
    'ai-gateway (JSON lines)': {
      file: 'gateway.jsonl',
      text: `${gatewayLines(set.calls).join('\n')}\n`,
    },
    'ai-gateway (list API page)': { file: 'page.json', text: gatewayPage(set.calls) },
    'guard-verdict': {
      file: 'verdicts.jsonl',
      text: `${Array.from({ length: quick ? 200 : 1000 }, () => verdictLines(verdicts).join('\n')).join('\n')}\n`,
    },
  }
  const paths: Record<string, string> = {}
  for (const [format, { file, text }] of Object.entries(texts)) {
    paths[format] = join(dir, file)
    await writeFile(paths[format], text)
  }
  const reports: Record<string, AuditReport> = {}
  const contenders: Record<string, () => Promise<void>> = {}
  for (const [format, path] of Object.entries(paths)) {
    contenders[format] = async () => {
      reports[format] = await runAudit([await nodeLogSource(path)])
    }
  }
  const runs = quick ? 1 : 3
  const samples = await sideBySide(contenders, runs, 0)
  const rows: Row[] = []
  for (const [format, { file, text }] of Object.entries(texts)) {
    const report = reports[format]!
    const seconds = median(samples[format] ?? []) / 1000
    const megabytes = new TextEncoder().encode(text).length / 1e6
    rows.push({
      format,
      file,
      megabytes: Number(megabytes.toFixed(2)),
      records: report.records,
      medianSeconds: Number(seconds.toFixed(2)),
      runs,
      mbPerSecond: Number((megabytes / seconds).toFixed(2)),
      findings: report.findings.length,
      indexFingerprints: report.index.fingerprints,
      indexMegabytes: Number((report.index.bytes / 1024 / 1024).toFixed(1)),
    })
  }
  const result = {
    suite: 'audit',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    logSet: { ...size, leaks: set.leaks.length, calls: set.calls.length },
    note: 'MB/s of the file as written (UTF-8), both passes and the exact pass included; median of the runs, formats alternating. The incident set is dominated by its prompts over the pool (~3.4 MB each): the estimator and the fingerprints, not JSON, set the pace.',
    rows,
    seconds: Math.round((performance.now() - started) / 1000),
  }
  const path = await writeResult(quick ? 'audit-quick' : 'audit', result)
  console.log(`  ${path}`)
  for (const r of rows) {
    console.log(
      `  ${r.format.padEnd(28)} ${String(r.megabytes).padStart(7)} MB  ${String(r.records).padStart(7)} records  ${String(r.mbPerSecond).padStart(6)} MB/s  findings ${r.findings}  index ${r.indexMegabytes} MiB`,
    )
  }
}

const suite: Suite = { name: 'audit', run }
export default suite
