/**
 * @module Stand-in evidence of an answer: this request's stand-ins become their values again, another
 * request's are proof that the engine served that request's prompt (never restored: that would hand
 * over the other tenant's secret).
 */
import type { AttemptContext } from '../attempt/context'
import type { Channel } from '../format/frames'
import { type ForeignStandIn, type Replacement, withLineBreaks } from '../secrets'
import type { QuarantineRecord } from '../vocabulary/quarantine'

type Texts = Partial<Record<Channel, string>>

/** Another request's stand-in found in a channel (its kind and, full layout, the minting tenant's tag). */
export interface StandInFinding {
  channel: Channel
  kind: string
  tenantTag?: string
}

/** What the stand-ins of an answer came to. */
interface StandInEvidence {
  /** The texts with this request's values back (the same object when there were none). */
  texts: Texts
  foreign: StandInFinding[]
  /** Values restored, per kind. */
  restored: Record<string, number>
}

/**
 * Every channel read for stand-ins; values restored in place, JSON-escaped where the channel's text
 * is JSON (tool-call arguments, a JSON-mode answer). No book: nothing to do.
 *
 * @example
 * const { texts, foreign } = await standInEvidence(ctx, conclusion.texts)
 */
export async function standInEvidence(ctx: AttemptContext, texts: Texts): Promise<StandInEvidence> {
  const book = ctx.request.secrets?.book
  const restored: Record<string, number> = {}
  if (!book) return { texts, foreign: [], restored }
  const out: Texts = { ...texts }
  const foreign: StandInFinding[] = []
  for (const [channel, text] of Object.entries(texts) as [Channel, string][]) {
    if (!text) continue
    const found = await book.locate(text)
    for (const f of found.foreign) {
      if (!ctx.request.secrets?.inPrompt(text.slice(f.start, f.end)))
        foreign.push(foreignFinding(channel, f))
    }
    if (found.own.length === 0) continue
    out[channel] = spliceValues(text, 0, found.own, jsonChannel(channel, ctx.request.jsonContent))
    for (const r of found.own) restored[r.kind] = (restored[r.kind] ?? 0) + 1
  }
  return { texts: out, foreign, restored }
}

/** A foreign stand-in as a finding (the payload's tenant tag is the canary's: attribution reads both). */
export function foreignFinding(channel: Channel, found: ForeignStandIn): StandInFinding {
  const { payload } = found
  return {
    channel,
    kind: found.kind,
    ...(payload.layout === 'full' ? { tenantTag: payload.tenantTag } : {}),
  }
}

/** Findings as quarantine-record entries: tenant tags and kinds, never a value or a stand-in. */
export function standInEntries(found: readonly StandInFinding[]): QuarantineRecord['canaries'] {
  return found.map((f) => ({
    kind: 'foreign',
    channel: f.channel,
    standIn: f.kind,
    ...(f.tenantTag !== undefined ? { tenantTag: f.tenantTag } : {}),
  }))
}

/** Kinds with counts of findings. */
export function kindCounts(found: readonly { kind: string }[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const f of found) counts[f.kind] = (counts[f.kind] ?? 0) + 1
  return counts
}

/**
 * Whether a channel's text is JSON, so a value goes back escaped: tool-call arguments always, the
 * content when the request asked for JSON.
 *
 * @example
 * jsonChannel('tool:0', false) // true
 */
export function jsonChannel(channel: Channel, jsonContent: boolean): boolean {
  return channel.startsWith('tool:') || (jsonContent && channel === 'content')
}

/**
 * `text` (its first character at `offset` of the channel) with each replacement's span holding its
 * value instead — escaped as the inside of a JSON string when `json`.
 *
 * @example
 * spliceValues('key sk-…', 0, [{ start: 4, end: 60, kind: 'openai-key', value }], false)
 */
function spliceValues(
  text: string,
  offset: number,
  replacements: readonly Replacement[],
  json: boolean,
): string {
  let out = ''
  let at = 0
  for (const r of replacements) {
    const s = r.start - offset
    if (s < at || r.end - offset > text.length) continue
    out += text.slice(at, s) + restoredValue(r, json)
    at = r.end - offset
  }
  return out + text.slice(at)
}

/**
 * What a stand-in's span becomes: its value, with a PEM key's line breaks as the model wrote the
 * stand-in's (a `.env` line with `\n`, JSON inside a JSON string with `\\n`) — read through one level
 * of JSON in a JSON channel — and escaped as the inside of a JSON string in a JSON channel.
 *
 * @example
 * restoredValue({ start, end, kind: 'private-key', value: pem, lineBreak: '\\n' }, false) // one line
 */
export function restoredValue(r: Replacement, json: boolean): string {
  const lineBreak = r.lineBreak !== undefined && json ? jsonDecodedBreak(r.lineBreak) : r.lineBreak
  const value = withLineBreaks(r.value, lineBreak)
  return json ? escapeJson(value) : value
}

/** A line break as written inside a JSON string, decoded once. */
function jsonDecodedBreak(raw: string): string {
  if (raw === '\\\\n') return '\\n'
  if (raw === '\\n') return '\n'
  return raw
}

/** A value as the inside of a JSON string. */
function escapeJson(value: string): string {
  return JSON.stringify(value).slice(1, -1)
}
