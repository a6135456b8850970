/**
 * @module The audit on real text: a dozen tenants' honest traffic built from the
 * READMEs, docs, code and licences in node_modules and the UDHR in eleven languages, with the hard
 * cases real traffic has (stock sign-offs and code preambles one other tenant pasted, shared system
 * prompts, public texts pasted by several, chance runs in CJK), must not be accused: no honest request
 * with proof, at most 1% with indications, exit 0 on the clean set. Planted leaks must be found: every
 * prompt over the pool answered from stale pages, with a request whose prompt it quotes, and at least
 * 90% of in-pool answers quoting 30 units or more of another tenant's private text, with their source.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { AuditReport, Finding } from '../../src/tools/audit'
import {
  buildRealLogSet,
  gatewayPage,
  openAiLines,
  type RealCall,
  type RealLogSet,
} from '../audit/real-logset'
import { auditJson, promptWords, words } from '../audit/run'

const HONEST = 640
const LEAKS = 5
const QUOTES = 40
const dir = join(tmpdir(), `audit-real-${Date.now()}-${Math.floor(Math.random() * 1e6)}`)
let set: RealLogSet
const files: Record<string, string> = {}

/**
 * The audit with the background mined from the half of node_modules the traffic is never drawn from
 * (the built-in one is mined from all of it, this set's packages included: measuring with it would
 * measure on text the detector was built from).
 */
const audit = (...args: string[]): ReturnType<typeof auditJson> =>
  auditJson(...args, '--no-background', '--public-text', files['background.txt']!)

const promptOf = (call: RealCall): string => promptWords(call.inputs)

/**
 * The ground truth of an over-pool leak: the requests of other tenants, sent before it, whose prompt
 * holds one of its quotes (10 words or more) when no other tenant's prompt does (private text).
 */
function truthOf(leak: RealCall): Set<string> {
  const message = leak.output.choices[0]!.message
  const quotes = [
    ...`${message.reasoning_content ?? ''}\n${message.content}`.matchAll(/“([^”]+)”/g),
  ]
    .map((m) => words(m[1]!))
    .filter((q) => q.split(' ').length >= 10)
  const sources = new Set<string>()
  for (const quote of quotes) {
    const holders = set.calls.filter((c) => c.kind !== 'over-pool' && promptOf(c).includes(quote))
    if (new Set(holders.map((c) => c.tenant)).size !== 1) continue
    for (const c of holders)
      if (c.tenant !== leak.tenant && c.startMs < leak.startMs) sources.add(c.id)
  }
  return sources
}

/** Honest requests reported with proof, and with indications only. */
function accused(
  report: AuditReport,
  honest: readonly RealCall[],
): { proof: Finding[]; indications: Finding[] } {
  const ids = new Set(honest.map((c) => c.id))
  const mine = report.findings.filter((f) => ids.has(f.id))
  return { proof: mine.filter((f) => f.certain), indications: mine.filter((f) => !f.certain) }
}

const describeFinding = (f: Finding): string =>
  `${f.id}: ${f.signals.map((s) => `${s.check}${s.certain ? '!' : '?'} ${s.evidence}`).join('; ')} ` +
  `${JSON.stringify(f.foreign.map((s) => s.excerpt))}`

beforeAll(async () => {
  set = await buildRealLogSet({ honest: HONEST, leaks: LEAKS, quotes: QUOTES })
  await mkdir(dir, { recursive: true })
  const write = async (name: string, text: string): Promise<void> => {
    files[name] = join(dir, name)
    await writeFile(files[name], text)
  }
  await write('background.txt', set.background.join('\n\n'))
  await write('clean.jsonl', `${openAiLines(set.honest).join('\n')}\n`)
  await write('leaky.jsonl', `${openAiLines(set.calls).join('\n')}\n`)
  await write('leaky-page.json', gatewayPage(set.calls))
}, 120_000)

describe('audit of real multi-tenant text', () => {
  it('should build a dozen tenants from real text, with the hard cases in it', () => {
    expect(set.honest.length).toBe(HONEST)
    expect(set.leaks.length).toBe(LEAKS)
    expect(set.quotes.length).toBe(QUOTES)
    expect(new Set(set.calls.map((c) => c.tenant)).size).toBe(12)
    expect(set.corpus.packages).toBeGreaterThanOrEqual(90)
    const answers = set.honest.map((c) => c.output.choices[0]!.message.content).join('\n')
    expect(answers).toContain(
      'Please let me know if you have any questions or need any further assistance.',
    )
    expect(answers).toContain("const express = require('express')")
    expect(answers).toMatch(/\p{sc=Han}{10}/u)
    expect(answers).toMatch(/\p{sc=Cyrillic}+ \p{sc=Cyrillic}+/u)
    for (const quote of set.quotes) expect(quote.quote!.units).toBeGreaterThanOrEqual(30)
  })

  it('should accuse no honest request on the clean set and exit 0', async () => {
    const { code, report } = await audit(files['clean.jsonl']!)
    const { proof, indications } = accused(report, set.honest)
    const figures = `clean set: ${proof.length} with proof, ${indications.length} with indications of ${set.honest.length}`
    expect(proof.map(describeFinding).slice(0, 5), figures).toEqual([])
    expect(indications.length / set.honest.length, figures).toBeLessThanOrEqual(0.01)
    expect(code).toBe(0)
  }, 120_000)

  it('should find every leak with its source and 90% of in-pool quotes, and exit 1', async () => {
    const { code, report } = await audit(files['leaky.jsonl']!)
    expect(code).toBe(1)
    const byId = new Map(report.findings.map((f) => [f.id, f]))
    const calls = new Map(set.calls.map((c) => [c.id, c]))
    // Over the pool: proved, and named with a request whose private text it quotes, when it quotes
    // any (a stale page may hold only a shared system prompt or public text: nobody's own data).
    let sourced = 0
    for (const leak of set.leaks) {
      const finding = byId.get(leak.id)
      expect(finding?.certain, `${leak.id} proved`).toBe(true)
      const truth = truthOf(leak)
      if (truth.size === 0) continue
      const named = (finding?.foreign ?? []).flatMap((s) => s.requests.map((r) => r.id))
      expect(
        named.some((id) => truth.has(id)),
        `${leak.id} names one of ${[...truth]}`,
      ).toBe(true)
      sourced++
    }
    expect(sourced).toBeGreaterThanOrEqual(1)
    // In the pool: proved by the quote itself, naming a request of the quoted tenant that sent it
    // (the one quoted, or an earlier one of that tenant holding the same text).
    const caught = set.quotes.filter((q) => {
      const finding = byId.get(q.id)
      const quoted = words(q.quote!.text)
      return (
        finding?.certain === true &&
        finding.foreign.some((s) => {
          const first = calls.get(s.requests[0]?.id ?? '')
          return (
            s.span !== undefined &&
            s.span >= 30 &&
            first?.tenant === q.quote!.sourceTenant &&
            promptOf(first).includes(quoted)
          )
        })
      )
    })
    const missed = set.quotes.filter((q) => !caught.includes(q))
    expect(
      caught.length / set.quotes.length,
      `missed: ${missed.map((q) => `${q.quote!.units} ${q.quote!.script} ${JSON.stringify(q.quote!.text.slice(0, 60))}`).join(' | ')}`,
    ).toBeGreaterThanOrEqual(0.9)
    const { proof, indications } = accused(report, set.honest)
    expect(proof.map(describeFinding).slice(0, 5)).toEqual([])
    expect(indications.length / set.honest.length).toBeLessThanOrEqual(0.01)
  }, 120_000)

  it('should read the same traffic as an AI Gateway page alike', async () => {
    const { code, report } = await audit(files['leaky-page.json']!)
    expect(code).toBe(1)
    for (const leak of set.leaks)
      expect(report.findings.find((f) => f.id === leak.id)?.certain).toBe(true)
    expect(accused(report, set.honest).proof.length).toBe(0)
  }, 120_000)
})
