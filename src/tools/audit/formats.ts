/**
 * @module Format detection and the three readers: each parsed JSON value (a line, or a page read
 * whole) becomes common request records. Pure: no I/O. Shapes accepted: docs/audit.md.
 */
import { parseFrame, readTexts } from '../../core'
import type { AuditRecord, GuardVerdictFields, LogFormat, RecordPlace } from './record'

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The first of `keys` present (not undefined/null) in `json`. */
function pick(json: Json, keys: readonly string[]): unknown {
  for (const key of keys) {
    const value = json[key]
    if (value !== undefined && value !== null) return value
  }
  return undefined
}

function num(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) {
    return Number(value)
  }
  return undefined
}

function str(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  return undefined
}

/**
 * A time as ms since the epoch: ISO strings, or numbers in s, ms, µs or ns (told apart by size:
 * anything after 1973 in ms is above 1e11).
 *
 * @example
 * timeMs('2026-09-01T10:00:00Z') // 1788256800000
 * timeMs(1788256800) // 1788256800000
 */
export function timeMs(value: unknown): number | undefined {
  const n = num(value)
  if (n !== undefined) {
    if (n >= 1e17) return n / 1e6
    if (n >= 1e14) return n / 1e3
    if (n >= 1e11) return n
    return n > 0 ? n * 1000 : undefined
  }
  if (typeof value === 'string') {
    const parsed = Date.parse(value)
    return Number.isFinite(parsed) ? parsed : undefined
  }
  return undefined
}

/** Metadata keys that name who sent a request, most specific first. */
const TENANT_KEYS = [
  'tenant',
  'tenant_id',
  'tenantId',
  'customer',
  'customer_id',
  'customerId',
  'org',
  'org_id',
  'organization',
  'account',
  'account_id',
  'team',
  'user',
  'user_id',
  'userId',
]

/** At most this many metadata entries, each value at most this long, are kept per record. */
const METADATA_ENTRIES = 8
const METADATA_CHARS = 200

/** Metadata as a small flat record (a JSON string is parsed; objects inside are dropped). */
function metadataOf(value: unknown): AuditRecord['metadata'] {
  let object = value
  if (typeof value === 'string') {
    try {
      object = JSON.parse(value)
    } catch {
      return { metadata: value.slice(0, METADATA_CHARS) }
    }
  }
  if (!isObject(object)) return undefined
  const out: Record<string, string | number | boolean | null> = {}
  let kept = 0
  for (const [key, v] of Object.entries(object)) {
    if (kept >= METADATA_ENTRIES) break
    if (typeof v === 'string') out[key] = v.slice(0, METADATA_CHARS)
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[key] = v
    else continue
    kept++
  }
  return kept > 0 ? out : undefined
}

function tenantOf(...sources: (Json | undefined)[]): string | undefined {
  for (const source of sources) {
    if (source === undefined) continue
    const value = str(pick(source, TENANT_KEYS))
    if (value !== undefined) return value
  }
  return undefined
}

/**
 * The format of one parsed JSON value, or undefined when it is none of them.
 *
 * @example
 * detectFormat({ event: 'ai_guard_verdict', requestId: 'r1', action: 'release' }) // 'guard-verdict'
 */
export function detectFormat(value: unknown): LogFormat | undefined {
  if (workerLogs(value) !== undefined) return 'guard-verdict'
  if (isObject(value) && Array.isArray(value.result)) {
    const first = value.result.find(isObject)
    return first === undefined ? 'ai-gateway' : detectFormat(first)
  }
  if (Array.isArray(value)) {
    const first = value.find(isObject)
    return first === undefined ? undefined : detectFormat(first)
  }
  if (!isObject(value)) return undefined
  if (value.event === 'ai_guard_verdict' || value.event === 'ai_guard') {
    return typeof value.requestId === 'string' ? 'guard-verdict' : undefined
  }
  if (
    'tokens_in' in value ||
    'TokensIn' in value ||
    ('created_at' in value && 'duration' in value) ||
    ('Gateway' in value && ('StatusCode' in value || 'Timestamp' in value))
  ) {
    return 'ai-gateway'
  }
  const request = requestBodyOf(value)
  if (request !== undefined || isObject(pick(value, RESPONSE_KEYS))) return 'openai-jsonl'
  return undefined
}

/** What reading one JSON value gave: records, and items that were not records. */
interface ReadResult {
  records: AuditRecord[]
  /** Items of a page or array that were not records (index and why). */
  rejected: { item: number; why: string }[]
}

/**
 * Reads one parsed JSON value (a JSONL line, or a whole `{ result: […] }` page / array) into records.
 *
 * @example
 * const { records } = readValue(JSON.parse(line), { file: 'gw.jsonl', line: 12 })
 */
export function readValue(value: unknown, place: RecordPlace): ReadResult {
  const logs = workerLogs(value)
  if (logs !== undefined) {
    return {
      records: logs.map(({ verdict, time }, item) => {
        const record = readVerdict(verdict, { ...place, item })
        if (record.startMs === undefined && time !== undefined) record.startMs = time
        return record
      }),
      rejected: [],
    }
  }
  const items = isObject(value) && Array.isArray(value.result) ? value.result : value
  if (Array.isArray(items)) {
    const out: ReadResult = { records: [], rejected: [] }
    items.forEach((item: unknown, index) => {
      const record = readOne(item, { ...place, item: index })
      if (typeof record === 'string') out.rejected.push({ item: index, why: record })
      else out.records.push(record)
    })
    return out
  }
  const record = readOne(value, place)
  return typeof record === 'string'
    ? { records: [], rejected: [{ item: -1, why: record }] }
    : { records: [record], rejected: [] }
}

/** One record, or why it is not one. */
function readOne(value: unknown, place: RecordPlace): AuditRecord | string {
  const format = detectFormat(value)
  if (format === undefined || !isObject(value)) return 'not a record of a known format'
  if (format === 'guard-verdict') return readVerdict(value, place)
  if (format === 'ai-gateway') return readGateway(value, place)
  return readOpenAi(value, place)
}

// ---------------------------------------------------------------- AI Gateway

function readGateway(json: Json, place: RecordPlace): AuditRecord {
  const metrics = isObject(json.Metrics) ? json.Metrics : {}
  const metadata = metadataOf(pick(json, ['metadata', 'Metadata']))
  const record: AuditRecord = {
    format: 'ai-gateway',
    place,
    id: str(pick(json, ['id', 'ID', 'log_id', 'RequestID'])) ?? `${place.file}:${place.line}`,
  }
  assign(record, 'startMs', timeMs(pick(json, ['created_at', 'Timestamp', 'timestamp'])))
  assign(record, 'model', str(pick(json, ['model', 'Model', 'RequestedModel'])))
  assign(record, 'status', num(pick(json, ['status_code', 'StatusCode'])))
  assign(record, 'durationMs', num(pick(json, ['duration', 'Duration'])) ?? num(metrics.durationMs))
  assign(record, 'reportedPromptTokens', num(pick(json, ['tokens_in', 'TokensIn'])))
  assign(record, 'reportedOutputTokens', num(pick(json, ['tokens_out', 'TokensOut'])))
  const cached = pick(json, ['cached', 'Cached'])
  if (typeof cached === 'boolean') record.responseCached = cached
  if (metadata) record.metadata = metadata
  assign(record, 'tenant', tenantOf(metadata))
  readBodies(
    record,
    pick(json, ['request', 'request_body', 'RequestBody']),
    pick(json, ['response', 'response_body', 'ResponseBody']),
  )
  return record
}

// ---------------------------------------------------------------- OpenAI-format pairs

const REQUEST_KEYS = ['request', 'req', 'input', 'request_body']
const RESPONSE_KEYS = ['response', 'res', 'output', 'completion', 'response_body']

/** The request body of an app log line: `request`, or `request.body` when it is an HTTP capture. */
function requestBodyOf(json: Json): Json | undefined {
  let request = pick(json, REQUEST_KEYS)
  if (typeof request === 'string') request = parseJson(request)
  if (!isObject(request)) return undefined
  if (isObject(request.body) && !('messages' in request) && !('prompt' in request)) {
    return request.body
  }
  return 'messages' in request || 'prompt' in request ? request : undefined
}

function readOpenAi(json: Json, place: RecordPlace): AuditRecord {
  const request = requestBodyOf(json)
  let response = pick(json, RESPONSE_KEYS)
  if (isObject(response) && isObject(response.body) && !('choices' in response)) {
    response = response.body
  }
  const responseId = isObject(response) ? str(response.id) : undefined
  const metadata = metadataOf(json.metadata) ?? (request ? metadataOf(request.metadata) : undefined)
  const record: AuditRecord = {
    format: 'openai-jsonl',
    place,
    id:
      str(pick(json, ['id', 'request_id', 'requestId'])) ??
      responseId ??
      `${place.file}:${place.line}`,
  }
  const start = timeMs(pick(json, ['started_at', 'start_time', 'timestamp', 'created_at', 'time']))
  assign(record, 'startMs', start)
  assign(
    record,
    'model',
    str(request?.model) ??
      (isObject(response) ? str(response.model) : undefined) ??
      str(json.model),
  )
  assign(record, 'status', num(pick(json, ['status', 'status_code', 'http_status'])))
  const firstToken = timeMs(pick(json, ['first_token_at', 'first_byte_at']))
  const ttft = num(pick(json, ['ttft_ms', 'ttft', 'time_to_first_token_ms']))
  if (ttft !== undefined) record.ttftMs = ttft
  else if (firstToken !== undefined && start !== undefined) record.ttftMs = firstToken - start
  const ended = timeMs(pick(json, ['ended_at', 'finished_at', 'end_time']))
  const duration = num(pick(json, ['duration_ms', 'duration', 'latency_ms', 'latency']))
  if (duration !== undefined) record.durationMs = duration
  else if (ended !== undefined && start !== undefined) record.durationMs = ended - start
  if (metadata) record.metadata = metadata
  assign(
    record,
    'tenant',
    str(pick(json, ['tenant', 'tenant_id'])) ??
      tenantOf(metadata) ??
      str(json.user) ??
      str(request?.user),
  )
  readBodies(record, request, response)
  return record
}

// ---------------------------------------------------------------- bodies (both formats)

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Reads the request and response bodies into `inputs`, `answer`, usage and cached tokens. */
function readBodies(record: AuditRecord, rawRequest: unknown, rawResponse: unknown): void {
  let request = rawRequest
  if (typeof request === 'string') request = parseJson(request)
  if (isObject(request) && request.type === 'encrypted') {
    record.bodyNote = 'bodies are encrypted (Logpush): decrypt them to enable the content checks'
  } else if (isObject(request) && ('messages' in request || 'prompt' in request)) {
    record.inputs = request
  } else if (rawRequest !== undefined) record.bodyNote = 'request body unreadable'
  let response = rawResponse
  if (typeof response === 'string') {
    const trimmed = response.trimStart()
    response =
      trimmed.startsWith('data:') || trimmed.startsWith('event:') ? response : parseJson(response)
  }
  if (typeof response === 'string') readSse(record, response)
  else if (isObject(response)) {
    if (response.type === 'encrypted') {
      record.bodyNote = 'bodies are encrypted (Logpush): decrypt them to enable the content checks'
      return
    }
    // The Workers AI REST envelope: { result: { response | choices, usage }, success }.
    const body = isObject(response.result) && !('choices' in response) ? response.result : response
    readWhole(record, body)
  }
}

function readWhole(record: AuditRecord, body: Json): void {
  readUsage(record, body.usage)
  try {
    const { texts } = readTexts(body)
    record.answer = channelTexts(texts)
    return
  } catch {
    // Several choices, or an unusual shape: read every choice's message loosely.
  }
  const answer: Record<string, string> = {}
  if (Array.isArray(body.choices)) {
    body.choices.forEach((choice: unknown, i) => {
      const message = isObject(choice) ? (choice.message ?? choice.delta) : undefined
      if (!isObject(message)) return
      for (const key of ['reasoning_content', 'reasoning', 'content'] as const) {
        const text = message[key]
        if (typeof text === 'string' && text !== '') answer[`choice${i}:${key}`] = text
      }
    })
  } else if (typeof body.response === 'string') answer.content = body.response
  if (Object.keys(answer).length > 0) record.answer = answer
}

/** A streamed answer logged as its SSE text: every `data:` line's texts, concatenated per channel. */
function readSse(record: AuditRecord, text: string): void {
  const answer: Record<string, string> = {}
  for (const line of text.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue
    const data = line.slice(5).trim()
    if (data === '' || data === '[DONE]') continue
    try {
      const frame = parseFrame({ data })
      for (const [channel, piece] of Object.entries(frame.texts)) {
        if (typeof piece === 'string') answer[channel] = (answer[channel] ?? '') + piece
      }
      if (frame.usage) readUsage(record, frame.usage)
    } catch {
      // A frame that is not JSON: skipped; the rest of the stream still counts.
    }
  }
  if (Object.keys(answer).length > 0) record.answer = answer
}

function channelTexts(texts: Partial<Record<string, string>>): Record<string, string> | undefined {
  const out: Record<string, string> = {}
  for (const [channel, text] of Object.entries(texts)) {
    if (typeof text === 'string' && text !== '') out[channel] = text
  }
  return Object.keys(out).length > 0 ? out : undefined
}

function readUsage(record: AuditRecord, usage: unknown): void {
  if (!isObject(usage)) return
  const prompt = num(usage.prompt_tokens ?? usage.input_tokens)
  if (prompt !== undefined) record.reportedPromptTokens = prompt
  const output = num(usage.completion_tokens ?? usage.output_tokens)
  if (output !== undefined) record.reportedOutputTokens = output
  const details = usage.prompt_tokens_details ?? usage.input_tokens_details
  const cached = isObject(details) ? num(details.cached_tokens) : num(usage.cached_tokens)
  if (cached !== undefined) record.cachedTokens = cached
}

// ---------------------------------------------------------------- guard verdicts

/**
 * The verdict lines inside a Workers log envelope — Workers Trace Events Logpush
 * (`{ EventTimestampMs, Logs: [{ Message: ["<line>"], TimestampMs }] }`) or `wrangler tail --format
 * json` (`{ logs: [{ message: ["<line>"], timestamp }] }`) — or undefined when it is not one or holds
 * none.
 */
function workerLogs(value: unknown): { verdict: Json; time: number | undefined }[] | undefined {
  if (!isObject(value)) return undefined
  const logs = value.Logs ?? value.logs
  if (!Array.isArray(logs)) return undefined
  const out: { verdict: Json; time: number | undefined }[] = []
  const fallback = timeMs(pick(value, ['EventTimestampMs', 'eventTimestamp']))
  for (const log of logs) {
    if (!isObject(log)) continue
    const messages = log.Message ?? log.message
    for (const message of Array.isArray(messages) ? messages : [messages]) {
      const parsed =
        typeof message === 'string' && message.startsWith('{"event":"ai_guard')
          ? parseJson(message)
          : message
      if (
        isObject(parsed) &&
        (parsed.event === 'ai_guard_verdict' || parsed.event === 'ai_guard') &&
        typeof parsed.requestId === 'string'
      ) {
        out.push({
          verdict: parsed,
          time: timeMs(pick(log, ['TimestampMs', 'timestamp'])) ?? fallback,
        })
      }
    }
  }
  return out.length > 0 ? out : undefined
}

function readVerdict(json: Json, place: RecordPlace): AuditRecord {
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
  const verdict: GuardVerdictFields = {
    action: str(json.action) ?? 'unknown',
    reasons: strings(json.reasons),
  }
  assign(verdict, 'incidentId', str(json.incidentId))
  assign(verdict, 'estimatedTokens', num(json.estimatedTokens))
  assign(verdict, 'tokenBound', num(json.tokenBound))
  assign(verdict, 'expectedMinMs', num(json.expectedMinMs))
  if (Array.isArray(json.sourceTenants)) verdict.sourceTenants = strings(json.sourceTenants)
  const record: AuditRecord = {
    format: 'guard-verdict',
    place,
    id: str(json.requestId) ?? `${place.file}:${place.line}`,
    verdict,
  }
  assign(record, 'startMs', timeMs(pick(json, ['time', 'timestamp', 'ts', 'at'])))
  assign(record, 'model', str(json.model))
  assign(record, 'tenant', str(json.tenant))
  assign(record, 'ttftMs', num(json.ttftMs))
  return record
}

function assign<T extends object, K extends keyof T>(
  target: T,
  key: K,
  value: T[K] | undefined,
): void {
  if (value !== undefined) target[key] = value
}
