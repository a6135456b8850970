/**
 * @module Deciding, from the first characters of a visible reply, whether the model echoed this
 * request's canary — the first-token provenance check.
 *
 * Why: the echo directive is the last text of the prompt (see inject.ts). A model that answers from a
 * placeholder or a truncated prompt, or from another request's KV pages, never saw it, so its reply
 * does not open with this canary. Real models decorate what they echo (quotes, backticks, fences,
 * bold, a short "Code:" label, other case), so those are tolerated; an echo that arrives late (after
 * `maxLeadChars`) or not at all is `missing`, and the caller quarantines.
 */

/** Options of {@link matchEcho}. */
export interface EchoOptions {
  /**
   * The canary must end within this many characters from the start of the reply; once this many
   * characters are seen without it, the echo is `missing`.
   * @default 64
   */
  maxLeadChars?: number
}

/** The verdict of {@link matchEcho}. */
export type EchoMatch =
  /** The reply opens with the canary; `rest` is the reply after it, its decoration and line break. */
  | { status: 'echoed'; rest: string }
  /** Not decidable yet: wait for more text. */
  | { status: 'pending' }
  /** The reply does not open with this request's canary. */
  | { status: 'missing' }

/**
 * Default of {@link EchoOptions.maxLeadChars}.
 *
 * @example
 * matchEcho(text, canary, false, { maxLeadChars: DEFAULT_MAX_LEAD_CHARS * 2 })
 */
const DEFAULT_MAX_LEAD_CHARS = 64

/** Decoration models put around an echoed code: markdown emphasis, quotes, brackets. */
const OPEN = String.raw`\s>*_"'\x60“”‘’«(\[`
/**
 * What may precede the canary: decoration, an optional opening ``` fence with a language tag, and an
 * optional short single-line label ending in a separator or a space ("Code:", "**Canary -**").
 */
const PREFIX = new RegExp(
  String.raw`^[${OPEN}]*(?:\x60\x60\x60[\w+.-]*[ \t]*\r?\n[${OPEN}]*)?(?:[^\n\x60]{0,40}?(?:[:\-–—=]|[ \t])[${OPEN}]*)?$`,
)
/** What could still grow into a {@link PREFIX}: same shape, the label not yet ended. */
const PARTIAL_PREFIX = new RegExp(
  String.raw`^[${OPEN}]*(?:\x60\x60\x60[\w+.-]*[ \t]*(?:\r?\n[${OPEN}]*)?)?(?:[^\n\x60]{0,41}(?:(?:[:\-–—=]|[ \t])[${OPEN}]*)?)?$`,
)
/** What may follow the canary on its line. */
const TRAIL = /^[*_"'`“”‘’»)\].,;!]*[ \t]*/
/** Longer trailing decoration than this is not waited for. */
const MAX_TRAIL = 16
/** A closing fence on the line after the echo. */
const CLOSE_FENCE = /^[ \t]*```[ \t]*(\r\n|\r|\n|$)/
/** What could still grow into a closing fence. */
const PARTIAL_FENCE = /^[ \t]*`{0,3}[ \t]*\r?$/

const PENDING: EchoMatch = { status: 'pending' }
const MISSING: EchoMatch = { status: 'missing' }

/**
 * Whether more text could still turn `leading` into a valid echo: some split into a prefix that is
 * (or, before the canary starts, may become) valid decoration, and a started canary that still ends
 * within `max` characters. Deciding `missing` this early quarantines on the first tokens instead of
 * after `max` characters, and gives the same verdict whatever the chunking.
 */
function couldStillEcho(leading: string, canary: string, max: number): boolean {
  const lower = leading.toLowerCase()
  const first = Math.max(0, leading.length - canary.length + 1)
  for (let k = leading.length; k >= first; k--) {
    if (k + canary.length > max) continue
    if (!canary.startsWith(lower.slice(k))) continue
    const prefix = leading.slice(0, k)
    if (k === leading.length ? PARTIAL_PREFIX.test(prefix) : PREFIX.test(prefix)) return true
  }
  return false
}

/**
 * Whether `leading` — the visible reply text so far, from its start — opens with `canary`.
 * `final` says no more text will come. Case-insensitive. `missing` is decided as soon as no
 * continuation could make a valid echo (e.g. the reply already opens with answer text), and at the
 * latest once `maxLeadChars` characters are seen without one.
 *
 * @example
 * matchEcho('**Code:** `CNRY_…`\n\nParis is', canary, false) // { status: 'echoed', rest: '\nParis is' }
 * matchEcho('Paris is the capital of', canary, false)         // { status: 'pending' }
 * matchEcho('Paris is the capital of France.', canary, true)  // { status: 'missing' }
 */
export function matchEcho(
  leading: string,
  canary: string,
  final: boolean,
  options: EchoOptions = {},
): EchoMatch {
  const max = options.maxLeadChars ?? DEFAULT_MAX_LEAD_CHARS
  const index = leading.toLowerCase().indexOf(canary.toLowerCase())
  if (index === -1) {
    return final || !couldStillEcho(leading, canary.toLowerCase(), max) ? MISSING : PENDING
  }
  // Found, but too late: a model that read the prompt's end would have opened with it.
  if (index + canary.length > max) return MISSING
  const prefix = leading.slice(0, index)
  if (!PREFIX.test(prefix)) return MISSING
  const fenceOpen = (prefix.match(/```/g)?.length ?? 0) % 2 === 1

  let pos = index + canary.length
  const trail = TRAIL.exec(leading.slice(pos))?.[0] ?? ''
  pos += trail.length
  if (pos === leading.length) {
    return final || trail.length > MAX_TRAIL ? { status: 'echoed', rest: '' } : PENDING
  }
  const next = leading[pos]
  if (next === '\r') {
    if (pos + 1 === leading.length && !final) return PENDING // maybe CRLF
    pos += leading[pos + 1] === '\n' ? 2 : 1
  } else if (next === '\n') pos += 1
  // Anything else: the reply continues on the echo's line; it is all `rest`.
  else return { status: 'echoed', rest: leading.slice(pos) }

  if (fenceOpen) {
    const after = leading.slice(pos)
    const close = CLOSE_FENCE.exec(after)
    if (close !== null) {
      if (close[1] === '' && !final) return PENDING // the fence line may still end
      if (close[1] === '\r' && pos + close[0].length === leading.length && !final) return PENDING
      pos += close[0].length
    } else if (!final && PARTIAL_FENCE.test(after)) return PENDING
  }
  return { status: 'echoed', rest: leading.slice(pos) }
}

/**
 * Whether an answer without the echo simply ran out of output budget before its visible reply could
 * carry one: it stopped at the length limit with less visible text than the echo window.
 *
 * @example
 * cutOff('length', '') // true: all tokens went to reasoning
 */
export function cutOff(
  finishReason: string | null | undefined,
  content: string | undefined,
): boolean {
  return finishReason === 'length' && (content ?? '').trim().length < DEFAULT_MAX_LEAD_CHARS
}
