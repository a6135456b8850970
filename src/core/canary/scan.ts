/**
 * @module Classifying model output for canaries, per channel: this request's own canary (cut), any
 * other canary that verifies under our key (cut and reported: proof of a leak), look-alikes (reported),
 * and where a text could still be growing into a canary. Whole answers are cut here at once
 * ({@link scanText}); streams are held back by the release stage (src/core/release) on the same
 * classification, so no canary ever leaves in pieces.
 * Candidates are found at every `cnry_` position, overlaps included, so a look-alike cannot swallow
 * the start of a real canary. Findings never carry the token text: reports and logs must not become
 * a way to replay another tenant's canary.
 */
import type { Channel } from '../format/frames'
import { PieceCutter } from './pieces'
import { CANARY_LENGTH, CANARY_PREFIX, type CanaryKey, inspectCanary, markerBook } from './token'

/** A canary-shaped token in the output that is not this request's own canary. */
export interface Finding {
  /** `foreign`: verifies under our key but belongs to another request; `lookalike`: does not verify. */
  kind: 'foreign' | 'lookalike'
  channel: Channel
  /** The tenant tag (hex) of a foreign canary: whose prompt leaked. */
  tenantTag?: string
  /** The nonce (hex) of a foreign canary: which request leaked (re-derivable from its request id). */
  nonce?: string
  /**
   * Set when the finding is a piece of another tenant's prefix marker, not a whole canary (see
   * ./marker-book.ts): its tag is the marker's, and it has no nonce.
   */
  piece?: true
}

const START = /cnry_/gi
/** A suffix that could still become a canary (at most CANARY_LENGTH - 1 chars). */
const PARTIAL = /^c(?:n(?:r(?:y(?:_[0-9a-hjkmnp-tv-z]{0,23})?)?)?)?$/i
const EXACT = /^cnry_[0-9a-hjkmnp-tv-z]{24}$/i

/** Where canaries (and fragments of our own) sit in a text, and what may be released of it. */
export interface Classification {
  /** Half-open ranges to cut out: our own canary, fragments of it, and foreign canaries. */
  cuts: [number, number][]
  /**
   * Where each whole token of our own starts (a subset of the cuts' starts). No other tenant's prompt
   * holds it, so no other tenant's text runs across it (see `Release`'s foreign-content hold-back).
   */
  ownAt: number[]
  findings: Finding[]
  /** Where the held tail starts (the text's length when nothing is held). */
  holdAt: number
}

const BODY_RUN = /^[0-9a-hjkmnp-tv-z]*/i

/**
 * The canaries an answer may carry as its own, cut and never reported: this request's canary and,
 * under `cacheIsolation: 'prefix'`, its tenant's prefix marker. One token or a list.
 */
export type OwnTokens = string | readonly string[] | null | undefined

/**
 * Whose scan it is: the canary key, the tokens the answer may carry as its own, and (whole texts)
 * the request's tenant, whose own marker is never foreign.
 */
interface ScanOwner {
  key: CanaryKey
  own: OwnTokens
  tenant?: string
}

function ownList(own: OwnTokens): string[] {
  if (own === undefined || own === null) return []
  return (typeof own === 'string' ? [own] : own).map((token) => token.toLowerCase())
}

/**
 * Classifies every `cnry_` candidate of `buffer`. Complete ones are ours (cut), foreign (cut and
 * reported) or look-alikes (reported, kept). A shorter run that can no longer grow (a non-base32
 * character follows, or the text is final) and that begins our own canary is a fragment of it — an
 * echo cut off by `max_tokens`, or a quote that stops mid-token — and is cut too, so no piece of a
 * canary reaches the client. Unless `final`, the longest suffix that could still become a canary is
 * held.
 *
 * @example
 * const { cuts, findings, holdAt } = await classify({ key, own }, 'content', text, true)
 */
export async function classify(
  { key, own }: ScanOwner,
  channel: Channel,
  buffer: string,
  final: boolean,
): Promise<Classification> {
  const mine = ownList(own)
  const findings: Finding[] = []
  const cuts: [number, number][] = []
  const ownAt: number[] = []
  let pendingOwn = buffer.length
  const start = new RegExp(START.source, START.flags)
  for (let m = start.exec(buffer); m !== null; m = start.exec(buffer)) {
    const at = m.index
    start.lastIndex = at + 1 // overlapping candidates
    const body = BODY_RUN.exec(buffer.slice(at + CANARY_PREFIX.length, at + CANARY_LENGTH))![0]
    if (body.length < CANARY_LENGTH - CANARY_PREFIX.length) {
      const end = at + CANARY_PREFIX.length + body.length
      if (end === buffer.length && !final) break // may still grow: held below
      const fragment = buffer.slice(at, end).toLowerCase()
      if (body.length > 0 && mine.some((token) => token.startsWith(fragment))) {
        cuts.push([at, end])
      }
      continue
    }
    const token = buffer.slice(at, at + CANARY_LENGTH)
    if (mine.includes(token.toLowerCase())) {
      // One space after it goes too, so the cut leaves no double space or leading blank (the prefix
      // marker is followed by one); at the end of a growing text it is held until that is known.
      const end = at + CANARY_LENGTH
      // Whole, so ours wherever its cut ends: what lies before it need not wait for what follows.
      ownAt.push(at)
      if (end === buffer.length && !final) {
        pendingOwn = Math.min(pendingOwn, at)
        break
      }
      cuts.push([at, buffer[end] === ' ' ? end + 1 : end])
      continue
    }
    const info = await inspectCanary(key, token)
    if (info.ours) {
      findings.push({ kind: 'foreign', channel, tenantTag: info.tenantTag, nonce: info.nonce })
      cuts.push([at, at + CANARY_LENGTH])
    } else findings.push({ kind: 'lookalike', channel })
  }
  const cutEnd = cuts.reduce((end, [, to]) => Math.max(end, to), 0)
  let holdAt = pendingOwn
  if (!final && pendingOwn === buffer.length) {
    for (let i = Math.max(cutEnd, buffer.length - (CANARY_LENGTH - 1)); i < buffer.length; i++) {
      if (PARTIAL.test(buffer.slice(i))) {
        holdAt = i
        break
      }
    }
  }
  return { cuts, ownAt, findings, holdAt }
}

/**
 * The fast path of {@link classify}: for a text with no `cnry_` in it there is nothing to cut or
 * report, only possibly a tail to hold. Returns where the held tail starts, or undefined when the
 * text needs the full classification.
 *
 * @example
 * quickHold('plain text ending in cn', false) // 21
 */
export function quickHold(buffer: string, final: boolean): number | undefined {
  if (/cnry_/i.test(buffer)) return undefined
  if (final) return buffer.length
  for (let i = Math.max(0, buffer.length - (CANARY_LENGTH - 1)); i < buffer.length; i++) {
    // Only a 'c' can begin a canary.
    if ((buffer.charCodeAt(i) | 0x20) === 0x63 && PARTIAL.test(buffer.slice(i))) return i
  }
  return buffer.length
}

/**
 * `text` (which starts at `offset` in its channel) with every overlapping range removed: the one way
 * canaries are cut, for whole answers and for released stream events alike.
 *
 * @example
 * cutRanges('ab cnry_… cd', 0, [{ start: 3, end: 32 }])
 */
export function cutRanges(
  text: string,
  offset: number,
  ranges: readonly { start: number; end: number }[],
): string {
  let out = ''
  let at = 0
  for (const r of [...ranges].sort((a, b) => a.start - b.start)) {
    const s = Math.max(0, r.start - offset)
    const e = Math.min(text.length, r.end - offset)
    if (e <= 0 || s >= text.length || e <= s) continue
    if (s > at) out += text.slice(at, s)
    at = Math.max(at, e)
  }
  return out + text.slice(at)
}

/**
 * One-shot scan of a whole (non-stream) text: own canary and every piece of it (and of the prefix
 * marker) stripped, foreign canaries and pieces of other tenants' markers withheld and reported,
 * look-alikes reported and kept. `tenant` is whose request it is: its own marker is never foreign.
 *
 * @example
 * const { text, findings } = await scanText({ key, own: canary }, 'content', answer.response)
 */
export async function scanText(
  { key, own, tenant }: ScanOwner,
  channel: Channel,
  text: string,
): Promise<{ text: string; findings: Finding[] }> {
  const mine = ownList(own)
  if (!mine.every((token) => EXACT.test(token))) {
    throw new Error('own must be a canary minted by mintCanary')
  }
  const [{ cuts, findings }, book] = await Promise.all([
    classify({ key, own: mine }, channel, text, true),
    markerBook(key),
  ])
  const whole = cutRanges(
    text,
    0,
    cuts.map(([start, end]) => ({ start, end })),
  )
  // Then every piece of ours, read over what is left: text either side of a cut cannot join into one.
  const pieces = new PieceCutter(mine, book, tenant).feed(whole, 0)
  if (pieces.foreign) {
    findings.push({ kind: 'foreign', channel, tenantTag: pieces.foreign.tenantTag, piece: true })
  }
  return { text: pieces.cuts.length > 0 ? cutRanges(whole, 0, pieces.cuts) : whole, findings }
}
