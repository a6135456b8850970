/**
 * @module Log sources to records: JSON lines one at a time, or a multi-line JSON page read whole;
 * malformed lines counted with their numbers (pass 1) and skipped.
 */
import type { FileReport, LogSource, Malformed } from './findings'
import { detectFormat, readValue } from './formats'
import type { AuditRecord } from './record'

/** Characters of a multi-line JSON document read whole (a list API page is far smaller). */
const MAX_DOCUMENT_CHARS = 256 * 1024 * 1024
/** Malformed lines listed per file (the rest are counted). */
const MALFORMED_LISTED = 20

/** Who sent a request: its tenant, or the request itself when the log names none. */
export const principalOf = (record: AuditRecord): string => record.tenant ?? `request ${record.id}`

/** A record's place as a map key. */
export const placeKey = (r: AuditRecord): string =>
  `${r.place.file}\u0000${r.place.line}\u0000${r.place.item ?? -1}`

/** A record's place for people: `file:line` or `file:line#item`. */
export const whereOf = (r: AuditRecord): string =>
  `${r.place.file}:${r.place.line}${r.place.item === undefined ? '' : `#${r.place.item}`}`

/** A record read, or a line that held none, with the characters it took. */
interface Parsed {
  record: AuditRecord | undefined
  chars: number
}

/** Whether a first line opens a multi-line JSON document (a pretty-printed list API page). */
function opensDocument(line: string): boolean {
  const t = line.trim()
  return t === '{' || t === '[' || (/^[{[]/.test(t) && /[[{,]$/.test(t))
}

/**
 * The records of one source. With a `file` report (pass 1), counts lines and malformed ones there;
 * without (pass 2), malformed lines are skipped silently (already counted).
 */
export async function* readSource(
  source: LogSource,
  file: FileReport | undefined,
  wanted?: (line: number) => boolean,
): AsyncGenerator<Parsed> {
  let lineNo = 0
  let document: string[] | undefined
  let documentChars = 0
  let documentStart = 0
  let first = true
  try {
    for await (const raw of source.lines()) {
      lineNo++
      const chars = raw.length + 1
      if (file) {
        file.lines++
        file.characters += chars
      }
      if (document) {
        documentChars += chars
        if (documentChars > MAX_DOCUMENT_CHARS) {
          throw new Error(
            `a multi-line JSON document over ${MAX_DOCUMENT_CHARS / 1024 / 1024} MiB: export JSON lines instead`,
          )
        }
        document.push(raw)
        yield { record: undefined, chars }
        continue
      }
      const line = raw.trim()
      if (line === '') {
        yield { record: undefined, chars }
        continue
      }
      if (first) {
        first = false
        if (opensDocument(line)) {
          document = [raw]
          documentChars = chars
          documentStart = lineNo
          if (file) file.document = true
          yield { record: undefined, chars }
          continue
        }
      }
      // The exact pass parses only the lines it wants (a page is parsed whole below).
      if (wanted && !wanted(lineNo)) {
        yield { record: undefined, chars }
        continue
      }
      yield* readLine(line, { file: source.name, line: lineNo }, file, chars)
    }
  } catch (error) {
    if (file) file.error = error instanceof Error ? error.message : String(error)
    return
  }
  if (document) yield* readDocument(document, { file: source.name, line: documentStart }, file)
}

/** The records of a multi-line JSON document read whole, or one malformed entry at its start. */
function* readDocument(
  lines: string[],
  place: { file: string; line: number },
  file: FileReport | undefined,
): Generator<Parsed> {
  let value: unknown
  try {
    value = JSON.parse(lines.join('\n'))
  } catch (error) {
    if (file) {
      malformed(file, {
        line: place.line,
        why: `not a valid JSON document (${error instanceof Error ? error.message : 'parse error'}): truncated?`,
      })
    }
    return
  }
  yield* readParsed(value, place, file, 0)
}

function* readLine(
  line: string,
  place: { file: string; line: number },
  file: FileReport | undefined,
  chars: number,
): Generator<Parsed> {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    if (file)
      malformed(file, {
        line: place.line,
        why:
          line.startsWith('{') || line.startsWith('[') ? 'invalid or truncated JSON' : 'not JSON',
      })
    yield { record: undefined, chars }
    return
  }
  yield* readParsed(value, place, file, chars)
}

function* readParsed(
  value: unknown,
  place: { file: string; line: number },
  file: FileReport | undefined,
  chars: number,
): Generator<Parsed> {
  if (detectFormat(value) === undefined) {
    if (file) malformed(file, { line: place.line, why: 'JSON of no known log format' })
    yield { record: undefined, chars }
    return
  }
  const { records, rejected } = readValue(value, place)
  if (file)
    for (const r of rejected)
      malformed(file, { line: place.line, ...(r.item >= 0 ? { item: r.item } : {}), why: r.why })
  if (records.length === 0) yield { record: undefined, chars }
  // The line's characters count once, with its first record.
  let firstRecord = true
  for (const record of records) {
    yield { record, chars: firstRecord ? chars : 0 }
    firstRecord = false
  }
}

function malformed(file: FileReport, entry: Malformed): void {
  file.malformed.count++
  if (file.malformed.first.length < MALFORMED_LISTED) file.malformed.first.push(entry)
}
