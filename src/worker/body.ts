/**
 * @module Reads a JSON request body within a byte limit and a shape limit, strictly: bad input gets a
 * clear error, and no body can make the isolate build more than a bounded tree.
 */
import { GuardError } from '../core'

/**
 * Most JSON values (objects, arrays, strings, numbers, `true`/`false`/`null`; member names are not
 * counted) a request body may hold.
 *
 * Why this figure: real chat requests, even at the largest prompt the ceiling admits (~677k tokens for
 * glm-5.3), hold far fewer. A message is 3 values (`{role, content}`), a content part 3 (`{type,
 * text}`), a tool round trip (an assistant message with one call, and the tool's answer) 14. Ten
 * thousand round trips — an agent session far longer than any seen, at ~68 tokens each to fill the
 * window — are 140,000 values; 128 tools (OpenAI's maximum) with 500-value schemas add 64,000. 2¹⁸
 * admits all of that, and its worst body still fits beside the tokenizer in a 128 MB isolate where
 * 2¹⁹ did not (the peaks: docs/reliability.md, "What someone without a key cannot do"; `npm run bench -- body`).
 */
const MAX_JSON_VALUES = 262_144

/**
 * Deepest nesting of arrays and objects below the body's own object — the same count as the request
 * reader's per-field limit, so both refuse the same bodies. Message content, tool schemas and tool
 * arguments never need more.
 */
const MAX_JSON_DEPTH = 64

/** Shape limits of a request body. */
interface JsonShapeLimits {
  /** Most JSON values. @default MAX_JSON_VALUES */
  maxValues: number
  /** Deepest nesting below the top-level value. @default MAX_JSON_DEPTH */
  maxDepth: number
}

// Bytes the scanner tells apart. Every one is ASCII, and no byte of a multi-byte UTF-8 sequence is
// below 0x80, so scanning UTF-8 bytes finds exactly what scanning the decoded text would.
const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const COMMA = 0x2c
const COLON = 0x3a
const SPACE = 0x20
const TAB = 0x09
const LF = 0x0a
const CR = 0x0d

/**
 * Counts the values of a JSON text and tracks its nesting, one UTF-8 chunk at a time, without
 * building anything: one pass, constant memory (a stack of at most `maxDepth + 2` container kinds).
 * It refuses — with a `GuardError` naming the limit — as soon as a limit is passed, so a dense body is
 * refused after reading about `maxValues` values' worth of it, not the whole body. For valid JSON the
 * counts are exact; invalid JSON is left for `JSON.parse` to refuse.
 *
 * @example
 * const shape = new JsonShapeScanner()
 * shape.push(new TextEncoder().encode('{"messages":[{"role":"user","content":"hi"}]}'))
 * shape.values // 5: the body, the array, the message, "user" and "hi" (member names do not count)
 */
class JsonShapeScanner {
  /** Values seen so far. */
  values = 0
  /** Deepest nesting seen so far (the top-level value is level 0). */
  deepest = 0
  readonly #maxValues: number
  readonly #maxDepth: number
  /** Kind of each open container, by depth (1 = object), up to one past the limit. */
  readonly #objects: Uint8Array
  #depth = 0
  #inString = false
  #escaped = false
  #inScalar = false
  /** The next string is a member name (after `{` or a `,` inside an object). */
  #expectName = false

  constructor(limits: Partial<JsonShapeLimits> = {}) {
    this.#maxValues = limits.maxValues ?? MAX_JSON_VALUES
    this.#maxDepth = limits.maxDepth ?? MAX_JSON_DEPTH
    this.#objects = new Uint8Array(this.#maxDepth + 3)
  }

  /**
   * Scans the next chunk of the body's bytes.
   *
   * @example
   * for await (const chunk of body) shape.push(chunk)
   */
  push(bytes: Uint8Array): void {
    const n = bytes.length
    let i = 0
    while (i < n) {
      if (this.#inString) {
        // The bulk of any body: run to the next quote or backslash without a branch per byte kind.
        if (this.#escaped) {
          this.#escaped = false
          i++
          continue
        }
        let b = bytes[i]!
        while (b !== QUOTE && b !== BACKSLASH && ++i < n) b = bytes[i]!
        if (i >= n) break
        if (b === BACKSLASH) this.#escaped = true
        else this.#inString = false
        i++
        continue
      }
      const b = bytes[i++]!
      switch (b) {
        case QUOTE:
          this.#inScalar = false
          this.#inString = true
          if (this.#expectName) this.#expectName = false
          else this.#count()
          break
        case OPEN_OBJECT:
        case OPEN_ARRAY:
          this.#inScalar = false
          this.#count()
          this.#open(b === OPEN_OBJECT)
          break
        case CLOSE_OBJECT:
        case CLOSE_ARRAY:
          this.#inScalar = false
          this.#expectName = false
          if (this.#depth > 0) this.#depth--
          break
        case COMMA:
          this.#inScalar = false
          this.#expectName = this.#objects[this.#depth] === 1
          break
        case COLON:
        case SPACE:
        case TAB:
        case LF:
        case CR:
          this.#inScalar = false
          break
        default:
          // A number or a literal: one value per run of such bytes.
          if (!this.#inScalar) {
            this.#inScalar = true
            this.#count()
          }
      }
    }
  }

  #count(): void {
    if (++this.values > this.#maxValues) {
      throw new GuardError(
        'invalid_request',
        `The request body holds more than ${this.#maxValues.toLocaleString('en-US')} JSON values (objects, arrays, strings, numbers); a chat request never needs that many.`,
      )
    }
  }

  #open(object: boolean): void {
    this.#depth++
    // The top-level value is level 0: a field's own array or object is level 1, as the request
    // reader counts it.
    const level = this.#depth - 1
    if (level > this.deepest) this.deepest = level
    if (level > this.#maxDepth) {
      throw new GuardError(
        'invalid_request',
        `The request body's JSON nests deeper than ${this.#maxDepth} levels (message content, JSON schemas and tool arguments never need that).`,
      )
    }
    this.#objects[this.#depth] = object ? 1 : 0
    this.#expectName = object
  }
}

/**
 * How fast a body must arrive: after `graceMs`, at least `minBytesPerSecond` on average since the
 * request began. A client that sends slower (a slow-drip upload holding what admission reserved for
 * its declared size) gets 408 and its reservation back.
 */
export interface BodyPace {
  graceMs: number
  minBytesPerSecond: number
}

/** What one read of a body may take: its byte limit, its pace, and who hears its size as it grows. */
export interface BodyBudget {
  /** Most bytes; a declared or streamed size over it is refused with 413 as soon as it is seen. */
  limit: number
  /** @default DEFAULT_BODY_PACE */
  pace?: BodyPace
  /** Hears the bytes read so far before each chunk is kept; throws to refuse (memory admission). */
  sized?: (bytes: number) => void
}

/**
 * 10 s to start, then 64 KiB/s (512 kbit/s) on average: a 16 MiB prompt has 266 s, a login form far
 * more than it needs; a client slower than that is holding the isolate, not uploading.
 */
export const DEFAULT_BODY_PACE: BodyPace = { graceMs: 10_000, minBytesPerSecond: 64 * 1024 }

/**
 * Parses the body as a JSON object. Never buffers more than the budget's `limit` bytes: a declared or
 * streamed size over it is refused with 413 as soon as it is seen, and a body slower than its pace with
 * 408. The body's values and nesting are counted as its bytes arrive, without building anything, and a
 * body over the shape limits is refused with 400 before `JSON.parse` ever sees it. Invalid UTF-8 and
 * malformed JSON are 400s. No copy of the bytes is kept (each chunk is decoded as it arrives) and no
 * array of parts is joined: the text is one rope of decoded parts until `JSON.parse` flattens it.
 *
 * @example
 * const body = await readJsonObject(c.req.raw, { limit: bodyLimit(c.env), pace: bodyPace(c.env) })
 */
export async function readJsonObject(
  request: Request,
  budget: BodyBudget,
  limits: Partial<JsonShapeLimits> = {},
): Promise<Record<string, unknown>> {
  const text = await readText(request, budget, limits)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new GuardError('invalid_request', 'The request body is not valid JSON.')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GuardError('invalid_request', 'The request body must be a JSON object.')
  }
  return value as Record<string, unknown>
}

/**
 * A form body (`application/x-www-form-urlencoded` or `multipart/form-data`) as its string fields,
 * read through the same bounded, paced reader as every other body; files are dropped. An empty or
 * missing body is an empty form.
 *
 * @example
 * const form = await readForm(c.req.raw, { limit: 4096, pace: bodyPace(c.env) })
 */
export async function readForm(
  request: Request,
  budget: BodyBudget,
): Promise<Record<string, string>> {
  const parts: Uint8Array[] = []
  if (request.body) await readChunks(request, budget, (chunk) => void parts.push(chunk))
  const type = request.headers.get('content-type') ?? ''
  let form: FormData
  try {
    form = await new Response(new Blob(parts), { headers: { 'content-type': type } }).formData()
  } catch (error) {
    if (parts.length === 0) return {}
    throw new GuardError('invalid_request', 'The request body is not a valid form.', {
      cause: error,
    })
  }
  const fields: Record<string, string> = {}
  for (const [name, value] of form) if (typeof value === 'string') fields[name] ??= value
  return fields
}

/**
 * The body as text. Each chunk is scanned, then decoded and appended as it arrives: no bytes are
 * kept, and the text is a rope of decoded parts until
 * `JSON.parse` flattens it: of the readers tried in workerd this one peaks lowest (bench/results/body.json).
 */
async function readText(
  request: Request,
  budget: BodyBudget,
  limits: Partial<JsonShapeLimits>,
): Promise<string> {
  if (!request.body)
    throw new GuardError('invalid_request', 'The request has no body; send a JSON object.')
  const shape = new JsonShapeScanner(limits)
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })
  let text = ''
  const keep = (chunk: Uint8Array) => {
    shape.push(chunk)
    text += decode(decoder, chunk)
  }
  await readChunks(request, budget, keep)
  return text + decode(decoder)
}

/**
 * The one body loop every route reads through: bytes are counted as they stream, whatever the headers
 * say (a chunked body declares nothing), and reading stops at the limit (413) or when the body falls
 * behind its pace (408). On any failure the upload is cancelled, so nothing more of it is read.
 *
 * Chunks are read as the body gives them. Reading a body into one reused buffer (a BYOB reader) was
 * tried for its lower garbage: in workerd's shared-isolate test run it left a promise that another
 * request later settled ("Cannot perform I/O on behalf of a different request", RefcountedFulfiller),
 * every run, and reading by the default reader removed it.
 */
async function readChunks(
  request: Request,
  budget: BodyBudget,
  keep: (chunk: Uint8Array) => void,
): Promise<void> {
  const { limit, sized } = budget
  const pace = budget.pace ?? DEFAULT_BODY_PACE
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body) return
  const reader = request.body.getReader()
  const started = Date.now()
  let size = 0
  // The time by which the bytes read so far were due: the grace, then the minimum rate.
  const due = () => started + pace.graceMs + (size * 1000) / pace.minBytesPerSecond
  const late = new PaceTimer(due, pace)
  try {
    for (;;) {
      if (!(due() > Date.now())) throw tooSlow(pace)
      const next = await Promise.race([read(reader), late.expired])
      if (next.done) return
      const chunk = next.value
      size += chunk.byteLength
      if (size > limit) throw tooLarge(limit)
      sized?.(size)
      keep(chunk)
    }
  } catch (error) {
    // A retryable refusal (memory admission) leaves the rest for the caller to drain before it
    // answers; anything else stops the upload here.
    if (error instanceof GuardError && error.retryAfterSeconds !== undefined) reader.releaseLock()
    else await reader.cancel().catch(() => {})
    throw error
  } finally {
    late.stop()
  }
}

/**
 * One timer for a whole body, not one per chunk (each costs a timer and its clearing, in front of the
 * upstream call): armed for the time the bytes read so far are due, and when it fires, re-armed for
 * the new due time if more bytes came meanwhile, or `expired` rejects with a 408.
 */
class PaceTimer {
  /** Rejects with the 408 once the body falls behind its pace; never resolves. */
  readonly expired: Promise<never>
  readonly #due: () => number
  #timer: ReturnType<typeof setTimeout> | undefined
  #reject: (error: GuardError) => void = () => {}

  constructor(due: () => number, pace: BodyPace) {
    this.#due = due
    this.expired = new Promise<never>((_, reject) => {
      this.#reject = reject
    })
    // Raced against each read, awaited by none after the last: its rejection is never unhandled.
    this.expired.catch(() => {})
    this.#arm(pace)
  }

  #arm(pace: BodyPace): void {
    this.#timer = setTimeout(() => {
      if (this.#due() > Date.now()) this.#arm(pace)
      else this.#reject(tooSlow(pace))
    }, this.#due() - Date.now())
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
  }
}

/**
 * Reads what is left of the body and drops it, within the budget's limit and pace (past either the
 * upload is cancelled), so an answer sent without the body reaches a client that is still sending it.
 * A body already read, locked or absent is left alone.
 *
 * @example
 * await discardBody(c.req.raw, { limit: bodyLimit(c.env), pace: bodyPace(c.env) })
 */
export async function discardBody(request: Request, budget: BodyBudget): Promise<void> {
  if (!request.body || request.body.locked || request.bodyUsed) return
  const bounds = { limit: budget.limit, pace: budget.pace ?? DEFAULT_BODY_PACE }
  await readChunks(request, bounds, () => {}).catch(() => {})
}

async function read(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  try {
    return await reader.read()
  } catch (error) {
    // The client went away or its upload broke: its own request's failure, not the guard's.
    throw new GuardError('invalid_request', 'The request body could not be read to its end.', {
      cause: error,
    })
  }
}

function decode(decoder: TextDecoder, chunk?: Uint8Array): string {
  try {
    return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode()
  } catch (error) {
    throw new GuardError('invalid_request', 'The request body is not valid UTF-8.', {
      cause: error,
    })
  }
}

function tooSlow(pace: BodyPace): GuardError {
  return new GuardError(
    'invalid_request',
    `The request body arrived too slowly: after ${pace.graceMs} ms it must keep up ${pace.minBytesPerSecond} bytes per second on average.`,
    { status: 408 },
  )
}

function tooLarge(limit: number): GuardError {
  return new GuardError('invalid_request', `The request body is larger than ${limit} bytes.`, {
    status: 413,
  })
}
