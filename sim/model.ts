/**
 * @module The simulated "model": a deterministic function of the tokens actually in its KV pages.
 *
 * It never sees the request, only its pages, exactly like the decode GPUs in the incident: when those
 * pages hold another tenant's prompt, its reasoning and its answer quote that prompt verbatim.
 */
import { mixSeed, type Prng, PURPOSE, prng, randomInt } from './random'
import type { SimTokenizer } from './tokenizer'

/** The echo directive a guard (or anyone) can put in a prompt; the LAST visible match wins. */
export const ECHO_DIRECTIVE =
  /begin your (?:reply|answer|response) with(?: the (?:code|token|marker))?\s*[:"'`]*\s*([A-Za-z0-9_-]+)/gi

/**
 * The JSON-mode echo directive: `Start your JSON object with the member "guard_echo": "cnry_…", then …`.
 * Followed only when the request asks for a JSON object; the LAST visible match wins.
 */
export const JSON_ECHO_DIRECTIVE =
  /start your json object with the member "([A-Za-z0-9_]+)": "([A-Za-z0-9_-]+)"/gi

/** A directive's request to note its code first thing in the thinking (the guard's `note-first`). */
export const NOTE_DIRECTIVE = /note the code\s+([A-Za-z0-9_-]+) first thing in your thinking/gi

/** What decode sees and how much it may say. */
export interface ModelInput {
  /** Token ids read from the request's KV pages (never-written slots already skipped). */
  visible: ArrayLike<number> & Iterable<number>
  /** Engine seed. */
  seed: number
  /** The request's arrival ordinal on its engine. */
  ordinal: number
  /** Cap on reasoning + content tokens (`Infinity` when the request sets no `max_tokens`). */
  maxTokens: number
  /** Whether the model thinks aloud first (`reasoning_content`); legacy models do not. */
  reasoning: boolean
  /** Whether the answer must be one JSON object (JSON mode); reasoning stays free text. */
  json: boolean
  /** Probability of not following a visible echo directive. */
  echoIgnoreRate: number
  /** Characters per quoted span (lines are clipped to it). @default 90 */
  quoteChars?: number
  /** Probability of restating the followed echo directive, code included, first thing in the reasoning. */
  directiveQuoteRate?: number
  /** Probability of noting the code first thing in the reasoning, where the directive asks for it. */
  thinkingNoteRate?: number
  /** Reasoning tokens before a restated code begins (0: restated first thing). @default 0 */
  restateAtToken?: number
  /** Reasoning tokens thought on after the paragraph, before the answer. @default 0 */
  extraReasoningTokens?: number
  /** JSON mode: probability of writing the asked-for echo member after the answer, not first. */
  jsonEchoLateRate?: number
}

/** What the model generated, as tokens (the wire format groups and decodes them). */
export interface ModelOutput {
  reasoningTokens: number[]
  contentTokens: number[]
  finishReason: 'stop' | 'length'
  /** The echo token followed (text: the content's first word; JSON: the first member's value), if any. */
  echoed: string | null
}

const QUOTE_CHARS = 90
const MARKER_LINE = /^<\|[a-z_]+\|>$/

/**
 * Generates reasoning and answer from the visible tokens alone.
 *
 * @example
 * const out = generate(tok, {
 *   visible, seed: 1, ordinal: 0, maxTokens: 256, reasoning: true, json: false, echoIgnoreRate: 0,
 * })
 */
export function generate(tok: SimTokenizer, input: ModelInput): ModelOutput {
  const text = tok.decode(input.visible)
  const rand = prng(mixSeed(input.seed, input.ordinal, PURPOSE.content))
  // A model in JSON mode can only follow the JSON directive; in text mode only the text one.
  const directive = input.json ? lastJsonEchoMatch(text) : lastEchoMatch(text)
  const member = input.json && directive ? copyMember(directive) : null
  const echo = input.json ? (member?.value ?? null) : directive ? fresh(directive[1]!) : null
  const slipped = echo !== null && rand() < input.echoIgnoreRate
  // The directive it follows (or slips on) is its instruction, not its material: quoting it would
  // put the request's own canary in the answer, where a guard cuts it and leaves a hole that reads
  // like a leak. Every other directive (a stale page of another request's) is context, quoted as is.
  const quotes = pickQuotes(
    directive ? withoutInstruction(text, directive) : text,
    rand,
    input.quoteChars ?? QUOTE_CHARS,
  )

  const asked = member
    ? `I am asked to start my JSON object with a "${member.key}" member holding a code. `
    : echo
      ? 'I am asked to begin my reply with a code on its own line. '
      : ''
  // Drawn only when the habit is on, so outputs without it stay byte-identical.
  const rate = input.directiveQuoteRate ?? 0
  const restated = echo !== null && rate > 0 && rand() < rate
  let reasoningText = ''
  let answer: string
  if (quotes === null) {
    reasoningText = input.reasoning
      ? `Reading the context (${input.visible.length} tokens). ` +
        `It holds no material besides ${directive ? 'that instruction' : 'the template'}. ` +
        asked +
        'There is nothing to answer from.'
      : ''
    answer = 'The context is empty: there is no provided material to quote.'
  } else {
    const q = (i: number): string => `“${quotes.middle[i] ?? quotes.first}”`
    reasoningText = input.reasoning
      ? `Reading the context (${input.visible.length} tokens). It opens with “${quotes.first}”. ` +
        `Further in: ${q(0)} … then ${q(1)}. It ends with “${quotes.last}”. ` +
        asked +
        'I will answer from this material.'
      : ''
    answer =
      `From the context → ${q(2)} … ${q(3)} … ` +
      `and at the end: “${quotes.last}”. That is what the provided material says.`
  }
  let contentText: string
  const restateAt = input.restateAtToken ?? 0
  let restatement = ''
  if (restated && reasoningText) {
    const code = member ? `"${member.key}": "${member.value}"` : echo
    if (restateAt === 0)
      reasoningText = `The instruction at the end: begin with ${code}. ${reasoningText}`
    else restatement = `${code} is what I am to begin with. `
  }
  if (noted(text, echo, input, rand) && reasoningText) {
    reasoningText = `Noting the code first: ${echo}. ${reasoningText}`
  }
  // Drawn only when the habit is on, so outputs without it stay byte-identical.
  const late =
    member !== null &&
    !slipped &&
    (input.jsonEchoLateRate ?? 0) > 0 &&
    rand() < (input.jsonEchoLateRate ?? 0)
  if (!input.json) contentText = `${echo && !slipped ? `${echo} ` : ''}${answer}`
  else {
    const object = JSON.stringify({ answer })
    const pair = member ? `${JSON.stringify(member.key)}:${JSON.stringify(member.value)}` : ''
    contentText =
      member && !slipped
        ? late
          ? `${object.slice(0, -1)},${pair}}`
          : `{${pair},${object.slice(1)}`
        : object
  }

  let reasoningAll: readonly number[] = reasoningText ? tok.encode(reasoningText) : []
  if (reasoningText && (input.extraReasoningTokens ?? 0) > 0) {
    reasoningAll = [...reasoningAll, ...thinking(tok, input.extraReasoningTokens ?? 0)]
  }
  if (restatement) reasoningAll = spliced(tok, reasoningAll, restateAt, tok.encode(restatement))
  const contentAll = tok.encode(contentText)
  const reasoningBudget = Math.min(reasoningAll.length, Math.ceil(input.maxTokens / 2))
  const reasoningTokens = reasoningAll.slice(0, reasoningBudget)
  const contentTokens = contentAll.slice(0, input.maxTokens - reasoningTokens.length)
  const cut =
    reasoningTokens.length < reasoningAll.length || contentTokens.length < contentAll.length
  return {
    reasoningTokens,
    contentTokens,
    finishReason: cut ? 'length' : 'stop',
    echoed: echo && !slipped && !late ? echo : null,
  }
}

/** Exactly `count` tokens of thinking that quotes nothing (a long thinker's middle). */
function thinking(tok: SimTokenizer, count: number): number[] {
  const sentence = tok.encode(' I weigh the material once more before answering.')
  const out: number[] = []
  while (out.length < count) out.push(...sentence.slice(0, count - out.length))
  return out
}

/**
 * `tokens` with `inserted` from token `at` (or the end), moved on past any token that ends inside a
 * character, so the text around the insertion stays valid.
 */
function spliced(
  tok: SimTokenizer,
  tokens: readonly number[],
  at: number,
  inserted: readonly number[],
): number[] {
  let cut = Math.min(at, tokens.length)
  while (cut < tokens.length && tok.decode(tokens.slice(0, cut)).endsWith('\uFFFD')) cut++
  return [...tokens.slice(0, cut), ...inserted, ...tokens.slice(cut)]
}

/**
 * `text` without the instruction `directive` matched in it: from the match to the end of its line,
 * which holds the directive's own tail (`… on its own line, then answer normally.`), and from the note
 * asking for the same code just before it (`Note the code … first thing in your thinking. `). Text
 * before them on the same line (`Summarise this. Begin your reply with …`) is the user's and stays.
 */
function withoutInstruction(text: string, directive: RegExpMatchArray): string {
  let start = directive.index ?? 0
  const note = lastMatch(text.slice(0, start), NOTE_DIRECTIVE)
  const code = directive[directive.length - 1]?.toLowerCase()
  if (note && note[1]!.toLowerCase() === code && !text.slice(note.index!, start).includes('\n')) {
    start = note.index!
  }
  const newline = text.indexOf('\n', start + directive[0].length)
  return text.slice(0, start) + (newline === -1 ? '' : text.slice(newline))
}

/** The last match of `pattern` (a global regex) in `text`, or null. */
function lastMatch(text: string, pattern: RegExp): RegExpMatchArray | null {
  let found: RegExpMatchArray | null = null
  for (const match of text.matchAll(pattern)) found = match
  return found
}

/**
 * Whether the model notes the code of the echo it follows first thing in its reasoning: only where the
 * directive asks for that note with that very code, and then at `thinkingNoteRate` (drawn only when
 * the habit is on, so outputs without it stay byte-identical).
 */
function noted(
  text: string,
  echo: string | null,
  input: ModelInput,
  rand: () => number,
): echo is string {
  const rate = input.thinkingNoteRate ?? 0
  if (echo === null || input.json || rate <= 0) return false
  const note = lastMatch(text, NOTE_DIRECTIVE)
  return note !== null && note[1]!.toLowerCase() === echo.toLowerCase() && rand() < rate
}

function lastEchoMatch(text: string): RegExpMatchArray | null {
  return lastMatch(text, ECHO_DIRECTIVE)
}

function lastJsonEchoMatch(text: string): RegExpMatchArray | null {
  return lastMatch(text, JSON_ECHO_DIRECTIVE)
}

function copyMember(match: RegExpMatchArray): { key: string; value: string } {
  return { key: fresh(match[1]!), value: fresh(match[2]!) }
}

/**
 * A fresh copy: V8 slices share the parent string, and the engine's request log would otherwise keep
 * a whole (possibly 4 MB) prompt alive per record.
 */
function fresh(slice: string): string {
  return [...slice].join('')
}

/**
 * Whether a request asks for one JSON object: `response_format` of type `json_object` or `json_schema`
 * (OpenAI, Workers AI), or Workers AI's `guided_json` (a `null` one asks for nothing).
 *
 * @example
 * wantsJson({ response_format: { type: 'json_object' } }) // true
 */
export function wantsJson(inputs: Record<string, unknown>): boolean {
  const format = inputs.response_format
  if (typeof format === 'object' && format !== null) {
    const type = (format as Record<string, unknown>).type
    if (type === 'json_object' || type === 'json_schema') return true
  }
  return inputs.guided_json !== undefined && inputs.guided_json !== null
}

/**
 * The member named by the last JSON echo directive in `text`, or null.
 *
 * @example
 * lastJsonEcho('Start your JSON object with the member "guard_echo": "cnry_x1", then …')
 * // { key: 'guard_echo', value: 'cnry_x1' }
 */
export function lastJsonEcho(text: string): { key: string; value: string } | null {
  const found = lastJsonEchoMatch(text)
  return found === null ? null : copyMember(found)
}

/**
 * The token of the last echo directive in `text`, or null.
 *
 * @example
 * lastEcho('… Begin your reply with the code cnry_x1 …') // 'cnry_x1'
 */
export function lastEcho(text: string): string | null {
  const found = lastEchoMatch(text)
  return found === null ? null : fresh(found[1]!)
}

interface Quotes {
  first: string
  middle: string[]
  last: string
}

/**
 * First line, four seeded evenly spread lines, last line: leaked context shows up wherever it sits.
 * Null when the text has no line to quote (only template markers, blanks, fragments).
 */
function pickQuotes(text: string, rand: Prng, chars: number): Quotes | null {
  const head = lineFrom(text, 0, 1, chars)
  if (head === null && !text.split('\n').some(isContentLine)) return null
  const first = head ?? ''
  const last = lineFrom(text, text.length - 1, -1, chars) ?? first
  const middle: string[] = []
  const spans = 4
  for (let i = 0; i < spans; i++) {
    const slot = text.length / (spans + 1)
    const at = Math.floor(slot * (i + 1) + (rand() - 0.5) * slot * 0.5)
    middle.push(lineFrom(text, Math.max(0, Math.min(text.length - 1, at)), 1, chars) ?? first)
  }
  // A seeded start inside long lines, so quotes are spans, not always line heads.
  return {
    first: clip(first, 0, chars),
    middle: middle.map((line) =>
      clip(line, line.length > chars ? randomInt(rand, 0, 8) : 0, chars),
    ),
    last: clip(last, Math.max(0, last.length - chars), chars),
  }
}

/** The first content line at or after (dir 1) / before (dir -1) `pos`, trimmed; marker lines skipped. */
function lineFrom(text: string, pos: number, dir: 1 | -1, chars: number): string | null {
  let at = pos
  for (let tries = 0; tries < 64 && at >= 0 && at < text.length; tries++) {
    const start = text.lastIndexOf('\n', at - 1) + 1
    let end = text.indexOf('\n', at)
    if (end === -1) end = text.length
    const line = text.slice(start, Math.min(end, start + 4 * chars)).trim()
    if (isContentLine(line)) return line
    at = dir === 1 ? end + 1 : start - 2
  }
  return null
}

/** A (trimmed) line worth quoting: not a fragment, not a template marker. */
function isContentLine(line: string): boolean {
  const trimmed = line.trim()
  return trimmed.length >= 3 && !MARKER_LINE.test(trimmed)
}

function clip(line: string, start: number, chars: number): string {
  let s = start
  // Never start or end inside a surrogate pair: quotes must stay verbatim, valid text.
  if (s > 0 && isLowSurrogate(line.charCodeAt(s))) s--
  let e = Math.min(line.length, s + chars)
  if (e < line.length && isLowSurrogate(line.charCodeAt(e))) e--
  return line.slice(s, e)
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff
}
