/**
 * @module What a secret detector is, the helper that turns a bounded regular expression plus a check
 * into one, and {@link findSecrets}: every detector's spans in a text, made non-overlapping.
 *
 * A detector never guesses from shape alone when a check exists: the regex only proposes candidates
 * (bounded quantifiers, a short look-behind so a candidate starts only where a token starts — see
 * {@link tokenStart} — which keeps each scan linear in the text), and the check — a checksum, a date,
 * a decoded header, a keyword nearby — decides.
 */
import type { SecretConfidence } from '../../core'

/**
 * Escapes that end in a letter or a digit yet are not part of the token after them: URL-encoding
 * (`%2C4242…`, `key%3DAIza…`) and JSON's escapes written out, as a JSON text read as it is holds them
 * (tool-call arguments, a pasted service-account file, a log line): `\n`, `\r`, `\t`, `\b`, `\f`
 * and `\u0020`.
 */
const ESCAPE_BEFORE = String.raw`%[0-9A-Fa-f]{2}|\\[nrtbf]|\\u[0-9A-Fa-f]{4}`

/** The run a token may not continue: letters and digits (never punctuation or `_`). */
export const TOKEN_RUN = 'A-Za-z0-9'

/**
 * Where the high-confidence detectors' candidates may start (a regex source, a look-behind): not
 * right after a letter or a digit — a card is not the tail of a longer number, an IBAN not the tail
 * of a word — unless that letter or digit ends an escape ({@link ESCAPE_BEFORE}). Everything else is a
 * boundary: punctuation, quotes, brackets, `_`, CSV and TSV separators, line breaks, the start of
 * the text. It is one definition for every detector so that no container (a CSV row, a `.env` name,
 * a URL query, a JSON string read raw) hides one kind and not another. `joins` adds what else must
 * not stand before (for the digit kinds, {@link DIGIT_JOIN_BEFORE}).
 *
 * @example
 * new RegExp(`${tokenStart('[0-9][.-]')}[0-9]{11}`, 'g') // finds `,01017012345`, `%2C01017012345`
 */
export function tokenStart(joins?: string): string {
  // One look-behind, the escape checked inside it and only after a letter or digit: written as a
  // group of two look-behinds (`(?:(?<!…)|(?<=…))`), V8 no longer skipped ahead to the literal
  // that follows, and every detector scanned 5–20 times slower (28 s for node_modules, not 2.3).
  const run = `[${TOKEN_RUN}](?<!${ESCAPE_BEFORE})`
  return joins === undefined ? `(?<!${run})` : `(?<!${run}|${joins})`
}

/**
 * Where they may end (a look-ahead): not before a character of `run` (the kind's own alphabet: a
 * base64url key runs on through `_` and `-`, a number does not run on into a letter), nor before
 * what `joins` names.
 *
 * @example
 * new RegExp(`[0-9]{11}${tokenEnd(TOKEN_RUN, '[.-][0-9]')}`, 'g')
 */
export function tokenEnd(run: string = TOKEN_RUN, joins?: string): string {
  return joins === undefined ? `(?![${run}])` : `(?![${run}]|${joins})`
}

/**
 * Before a number: a digit and `.` or `-` make it the fraction of a decimal (`0.4242…`) or the
 * second half of a joined number (`2024-4242…`, a range, a phone number), not a number of its own.
 * A comma does not: in a CSV row a number follows a number (`17,4242…`), and thousands separators
 * group by three, which no checked kind does.
 */
const DIGIT_JOIN_BEFORE = '[0-9][.-]'

/** After a number: `.` or `-` and a digit continue it (`4242….5`, `4242…-1`); `,` and a digit do not. */
const DIGIT_JOIN_AFTER = '[.-][0-9]'

/** Where a number kind starts: the shared boundary, digit joins refused. */
export const NUMBER_START = tokenStart(DIGIT_JOIN_BEFORE)

/** Where a number kind ends: not into a letter or digit, nor a digit join. */
export const NUMBER_END = tokenEnd(TOKEN_RUN, DIGIT_JOIN_AFTER)

/**
 * A payment card's digits as people write them, between {@link NUMBER_START} and {@link NUMBER_END}:
 * plain (13–19), in fours with a shorter last group, Amex 4-6-5 and Diners 4-6-4, and 13 digits as
 * 4-3-3-3 (how 13-digit Visa and Maestro numbers are printed), one kind of separator each. Shared
 * by the detector and the stand-in's candidates, so a stand-in keeps any layout the detector takes.
 * Capture 1 is the fours' separator.
 */
export const CARD_DIGITS =
  '[1-9](?:[0-9]{12,18}|[0-9]{3}([ -])[0-9]{4}\\1[0-9]{4}(?:\\1[0-9]{1,4}){1,2}|[0-9]{3}([ -])[0-9]{6}\\2[0-9]{4,5}|[0-9]{3}([ -])[0-9]{3}\\3[0-9]{3}\\3[0-9]{3})'

/** National numbers also refuse a `+` before them: a phone number's country code (`+4712…`). */
export const NATIONAL_START = tokenStart(`${DIGIT_JOIN_BEFORE}|\\+`)

/** The alphabet of base64url keys and tokens: they run on through `_` and `-` after their start. */
export const KEY_RUN = 'A-Za-z0-9_-'

/** How far a detector's finding can be trusted (see docs/secrets.md for the measured figures). */
export type { SecretConfidence } from '../../core'

/** One secret found in a text: its kind and its UTF-16 offsets (`text.slice(start, end)`). */
export interface SecretSpan {
  kind: string
  start: number
  end: number
}

/** A detector: deterministic, linear-ish in the text, its spans non-overlapping and in order. */
export interface SecretDetector {
  /** The kind of secret it finds, e.g. `github-token` (logged; never the value). */
  readonly kind: string
  /** `high` when a checksum or an unmistakable published format confirms each finding. */
  readonly confidence: SecretConfidence
  /** Its spans in `text`, in order, non-overlapping. */
  find(text: string): SecretSpan[]
  /** The candidate regex, when it has one (finds an operator kind's stand-ins again). */
  readonly pattern?: RegExp
  /** The longest match it can make, when known (operator patterns: a stream's hold-back). */
  readonly longest?: number
}

/**
 * A check run on each regex candidate: `true` keeps the match, a number keeps it up to that end
 * offset (a shorter span than the regex matched), anything else drops it.
 */
export type CandidateCheck = (match: RegExpExecArray, text: string) => boolean | number

/**
 * A detector from a global regex (its `lastIndex` is reset on every call) and an optional check.
 * Empty matches are skipped, so a pattern that can match nothing never loops.
 *
 * @example
 * const d = regexDetector('google-api-key', 'high', /AIza[0-9A-Za-z_-]{35}/g)
 * d.find('key=AIza…') // [{ kind: 'google-api-key', start: 4, end: 43 }]
 */
export function regexDetector(
  kind: string,
  confidence: SecretConfidence,
  pattern: RegExp,
  check?: CandidateCheck,
): SecretDetector {
  if (!pattern.global) throw new Error(`detector ${kind}: the pattern must be global`)
  const find = (text: string): SecretSpan[] => {
    const spans: SecretSpan[] = []
    const re = new RegExp(pattern.source, pattern.flags)
    let m = re.exec(text)
    while (m !== null) {
      if (m[0].length === 0) {
        re.lastIndex++
      } else {
        const verdict = check ? check(m, text) : true
        const end = typeof verdict === 'number' ? verdict : m.index + m[0].length
        if (verdict !== false && end > m.index) {
          spans.push({ kind, start: m.index, end })
          re.lastIndex = end
        } else {
          // A rejected candidate may hide a real one starting inside it.
          re.lastIndex = m.index + 1
        }
      }
      m = re.exec(text)
    }
    return spans
  }
  return { kind, confidence, pattern, find }
}

const RANK: Record<SecretConfidence, number> = { high: 0, medium: 1 }

/**
 * Every detector's spans in `text`, non-overlapping and in order. Where spans overlap, the
 * high-confidence one wins, then the longer, then the earlier detector in the list (so list the
 * more specific detectors first).
 *
 * @example
 * findSecrets('token ghp_…', builtInDetectors()) // [{ kind: 'github-token', start: 6, end: 46 }]
 */
export function findSecrets(text: string, detectors: readonly SecretDetector[]): SecretSpan[] {
  const found: Ranked[] = []
  detectors.forEach((detector, order) => {
    for (const span of detector.find(text)) {
      found.push({ span, rank: RANK[detector.confidence], order })
    }
  })
  found.sort((a, b) => a.span.start - b.span.start || a.span.end - b.span.end)
  // Overlaps are rare: resolve each cluster of overlapping spans on its own, so a text with many
  // findings costs a sort, not a quadratic number of insertions.
  const kept: SecretSpan[] = []
  let cluster: Ranked[] = []
  let clusterEnd = -1
  for (const item of found) {
    if (item.span.start >= clusterEnd && cluster.length > 0) {
      kept.push(...resolveCluster(cluster))
      cluster = []
    }
    cluster.push(item)
    clusterEnd = Math.max(clusterEnd, item.span.end)
  }
  kept.push(...resolveCluster(cluster))
  return kept
}

interface Ranked {
  span: SecretSpan
  rank: number
  order: number
}

/** The winners of one cluster of overlapping spans, by start. */
function resolveCluster(cluster: Ranked[]): SecretSpan[] {
  if (cluster.length <= 1) return cluster.map((c) => c.span)
  const byPriority = [...cluster].sort(
    (a, b) =>
      a.rank - b.rank ||
      b.span.end - b.span.start - (a.span.end - a.span.start) ||
      a.order - b.order ||
      a.span.start - b.span.start,
  )
  const kept: SecretSpan[] = [] // sorted by start
  for (const { span } of byPriority) {
    const i = firstEndingAfter(kept, span.start)
    const next = kept[i]
    if (next !== undefined && next.start < span.end) continue
    kept.splice(i, 0, span)
  }
  return kept
}

/**
 * Index of the first span in `sorted` (non-overlapping, by start) whose end is after `offset`.
 *
 * @example
 * firstEndingAfter([{ kind: 'x', start: 0, end: 4 }], 4) // 1
 */
export function firstEndingAfter(
  sorted: readonly Pick<SecretSpan, 'end'>[],
  offset: number,
): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (sorted[mid]!.end <= offset) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * Whether `token` mixes at least two of upper case, lower case and digits (all three when `all`): a
 * cheap stand-in for entropy that drops words, hex digests and numbers from keyword-only detectors.
 *
 * @example
 * mixedClasses('aB3dE5', true) // true
 */
export function mixedClasses(token: string, all = false): boolean {
  const classes =
    Number(/[A-Z]/.test(token)) + Number(/[a-z]/.test(token)) + Number(/[0-9]/.test(token))
  return all ? classes === 3 : classes >= 2
}

/** What {@link keywordDetector} looks for: a token, and the keywords it must follow. */
interface KeywordDetectorSpec {
  kind: string
  confidence: SecretConfidence
  keywords: RegExp
  token: RegExp
  /** How far after a keyword's start a token may start, characters. */
  reach: number
  /** The longest token `token` matches, characters. */
  maxToken: number
  /** A further test of a matched token. @default every match counts */
  check?: (token: string) => boolean
}

/**
 * A detector of tokens that count only after a keyword on the same line (within `reach` characters
 * of the token's start). It looks for the keywords first and for tokens only in the stretch after
 * each: scanning for a bare 40-character token everywhere cost ten times a prefixed format's scan,
 * and a keyword is rare.
 *
 * `token` must match at most `maxToken` characters: the search after a keyword reads a window of
 * `reach + maxToken + 1` characters, so a text of many keywords costs no more than one of few.
 *
 * @example
 * const d = keywordDetector({
 *   kind: 'cloudflare-api-token',
 *   confidence: 'medium',
 *   keywords: /cloudflare/gi,
 *   token: /[A-Za-z0-9_-]{40}/g,
 *   reach: 80,
 *   maxToken: 40,
 * })
 */
export function keywordDetector(spec: KeywordDetectorSpec): SecretDetector {
  const { kind, confidence, keywords, token, reach, maxToken, check = () => true } = spec
  const find = (text: string): SecretSpan[] => {
    const spans: SecretSpan[] = []
    const re = new RegExp(token.source, token.flags)
    let lastEnd = 0
    // Starts up to here were tried after an earlier keyword: each position is tried once, however
    // many keywords precede it (1 MB of `aws aws …` would otherwise try every start 30 times).
    let tried = -1
    // The next newline, searched once and reused while it lies ahead (a search per keyword would
    // read to the end of a text without newlines every time).
    let lineEnd = -1
    for (const keyword of text.matchAll(new RegExp(keywords.source, keywords.flags))) {
      const from = keyword.index + keyword[0].length
      if (lineEnd < from) {
        lineEnd = text.indexOf('\n', from)
        if (lineEnd === -1) lineEnd = text.length
      }
      const latestStart = Math.min(keyword.index + reach, lineEnd)
      const first = Math.max(from, lastEnd, tried + 1)
      if (first > latestStart) continue
      tried = latestStart
      // One character past the longest token that may start in reach: its look-ahead sees the text.
      const window = text.slice(0, latestStart + maxToken + 1)
      re.lastIndex = first
      for (let m = re.exec(window); m !== null && m.index <= latestStart; m = re.exec(window)) {
        const end = m.index + m[0].length
        if (end > lineEnd) break
        if (!check(m[0])) continue
        spans.push({ kind, start: m.index, end })
        lastEnd = end
      }
    }
    return spans
  }
  return { kind, confidence, pattern: token, find }
}
