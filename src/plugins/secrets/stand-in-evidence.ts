/**
 * @module Stand-in evidence of an answer: this request's stand-ins become their values again, another
 * request's are proof that the engine served that request's prompt (never restored: that would hand
 * over the other tenant's secret).
 */
import type { AnswerStandIns, Channel, StandInFinding } from '../../core'
import type { SubstitutedSecrets } from './prompt-secrets'
import { type ForeignStandIn, type Replacement, withLineBreaks } from './stand-in-book'

type Texts = Partial<Record<Channel, string>>

/**
 * Every channel read for stand-ins; values restored in place, JSON-escaped where the channel's text
 * is JSON (tool-call arguments, a JSON-mode answer).
 *
 * @example
 * const { texts, foreign } = await standInEvidence(secrets, conclusion.texts, false)
 */
export async function standInEvidence(
  secrets: SubstitutedSecrets,
  texts: Texts,
  jsonContent: boolean,
): Promise<AnswerStandIns> {
  const { book } = secrets
  const restored: Record<string, number> = {}
  const out: Texts = { ...texts }
  const foreign: StandInFinding[] = []
  for (const [channel, text] of Object.entries(texts) as [Channel, string][]) {
    if (!text) continue
    const found = await book.locate(text)
    for (const f of found.foreign) {
      if (!secrets.inPrompt(text.slice(f.start, f.end))) foreign.push(foreignFinding(channel, f))
    }
    if (found.own.length === 0) continue
    out[channel] = spliceValues(text, 0, found.own, jsonChannel(channel, jsonContent))
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
