/**
 * @module Canary evidence of an answer: findings per channel, our own canary stripped, and the withheld
 * text made safe to store (no live canary in it).
 */
import { type AttemptContext, ownTokens } from '../attempt/context'
import { type Finding, redactTokenPieces, scanText } from '../canary'
import type { Channel } from '../format/frames'
import type { QuarantineRecord } from '../vocabulary/quarantine'

/**
 * Scans every channel for canaries; returns the texts with our own canary and every piece of our
 * secrets removed, and the findings.
 */
export async function scanChannels(
  ctx: AttemptContext,
  texts: Partial<Record<Channel, string>>,
): Promise<{ texts: Partial<Record<Channel, string>>; findings: Finding[] }> {
  const own = ownTokens(ctx)
  if (own.length === 0) return { texts, findings: [] }
  const key = await ctx.services.key()
  const out: Partial<Record<Channel, string>> = {}
  const findings: Finding[] = []
  for (const [channel, text] of Object.entries(texts) as [Channel, string][]) {
    const scanned = await scanText({ key, own, tenant: ctx.request.tenant }, channel, text)
    out[channel] = scanned.text
    findings.push(...scanned.findings)
  }
  return { texts: out, findings }
}

/** Findings as quarantine-record entries (tenant tags only, never canary text). */
export function canaryEntries(findings: Finding[]): QuarantineRecord['canaries'] {
  return findings
    .filter((f) => f.kind === 'foreign')
    .map((f) => {
      const entry: QuarantineRecord['canaries'][number] = { kind: 'foreign', channel: f.channel }
      if (f.tenantTag !== undefined) entry.tenantTag = f.tenantTag
      return entry
    })
}

/**
 * Every canary-shaped token, and every piece of one elsewhere in the texts, replaced while the tokens
 * are still in view, so withheld text can be stored without live canaries in it.
 */
export function redactCanaries(texts: Partial<Record<Channel, string>>): Record<string, string> {
  const present: Partial<Record<string, string>> = {}
  for (const [channel, text] of Object.entries(texts)) if (text) present[channel] = text
  return redactTokenPieces(present)
}
