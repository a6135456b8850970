/**
 * @module The stand-in book of one request: {@link StandInBook.substitute} replaces every secret the
 * detectors find with its stand-in (the same secret, the same stand-in, for the whole request), and
 * {@link StandInBook.restore} puts this request's values back in an answer and reports every stand-in
 * of ANOTHER request it finds — proof that the engine served another request's prompt — without ever
 * restoring it (that would hand over the other tenant's secret). Values live only in this object.
 */
import { findSecrets, firstEndingAfter, type SecretDetector, type SecretSpan } from './detector'
import { builtInDetectors } from './detectors'
import { IBAN_LENGTHS } from './identifiers'
import {
  inspectStandIn,
  mintStandIn,
  type StandInKey,
  type StandInPayload,
  standInHmac,
} from './stand-in-codec'
import { StandInIndex } from './stand-in-index'
import {
  classShape,
  MAX_STAND_IN_LENGTH,
  runFacts,
  SHAPES,
  type StandInShape,
} from './stand-in-shapes'

/** How many secrets of one kind a call replaced or restored. */
export interface KindCount {
  kind: string
  count: number
}

/** What {@link StandInBook.substitute} returns: the text to send, and kinds with counts. */
export interface Substitution {
  text: string
  replaced: KindCount[]
  /** Secrets left in place because their kind's shape holds too few bits (operator kinds only). */
  unsubstituted: KindCount[]
}

/** A stand-in of another request found in an answer: where, which kind, whose (full layout). */
export interface ForeignStandIn {
  kind: string
  start: number
  end: number
  payload: StandInPayload
}

/** What {@link StandInBook.restore} returns. */
export interface Restoration {
  text: string
  restored: KindCount[]
  /** Stand-ins minted under the key for another request: left as they are, and proof of a leak. */
  foreign: ForeignStandIn[]
}

/** One span of an answer to replace with a value of this request. */
export interface Replacement extends SecretSpan {
  value: string
  /**
   * A PEM stand-in found with other line breaks than it was sent with (real, `\n`, `\\n`, as the
   * model escaped it): the value goes back with these (see `restoredValue` in
   * src/plugins/secrets/stand-in-evidence.ts).
   */
  lineBreak?: string
}

/**
 * A PEM value written with the escaping of `lineBreak` (real, or `\n` as in a JSON string or a
 * `.env` line): only the escaping changes, never the breaks (a CRLF key stays CRLF). Without a
 * line break, the value as it is.
 *
 * @example
 * withLineBreaks('-----BEGIN…\nMIIE…', '\\n') // '-----BEGIN…\\nMIIE…'
 */
export function withLineBreaks(value: string, lineBreak: string | undefined): string {
  if (lineBreak === undefined) return value
  const escaped = lineBreak.includes('\\')
  const valueEscaped = !value.includes('\n') && value.includes('\\n')
  if (escaped && !valueEscaped) return value.replace(/\r/g, '\\r').replace(/\n/g, '\\n')
  if (!escaped && valueEscaped) return value.replace(/\\r/g, '\r').replace(/\\n/g, '\n')
  return value
}

/** The first line break of a PEM stand-in as written in an answer. */
const PEM_BREAK = /-----(\r?\n|\\\\n|\\n)/

/** What {@link StandInBook.locate} finds: this request's stand-ins with their values, and others'. */
export interface Located {
  /** In order, non-overlapping. */
  own: Replacement[]
  foreign: ForeignStandIn[]
}

/** The key of a payload: its kind, layout, and for the full layout the minting request. */
function payloadKey(kind: string, p: StandInPayload): string {
  return p.layout === 'full'
    ? `${kind}:${p.nonce}:${p.tenantTag}:${p.id}`
    : `${kind}:compact:${p.id}`
}

/** Where a request's stand-ins come from. */
export interface StandInRequest {
  requestId: string
  tenant: string
}

/** Stand-in candidates of an answer checked together (see `#scan`). */
const SCAN_BATCH = 32

/**
 * Candidates already inspected, per key: what `inspectStandIn` said of a tenant's candidate text (a
 * pure function of key, kind and text; null: not a stand-in). Answers repeat their strings — a quoted
 * identifier, a hash, the tenant's own prefix marker, whose 24 base-32 characters have a password
 * stand-in's shape — and each repeat cost a MAC. Per tenant, so no tenant can learn from the time of
 * its own answers what another tenant's answers held; at most {@link INSPECTED_MAX} entries per key,
 * the oldest dropped first (each at most a few hundred bytes).
 */
const INSPECTED = new WeakMap<StandInKey, Map<string, StandInPayload | null>>()
const INSPECTED_MAX = 4_096

/**
 * The most distinct secrets one request may hold (the full layout's 16-bit counter).
 *
 * @example
 * if (book.size === MAX_STAND_INS) log('further secrets stay unsubstituted')
 */
export const MAX_STAND_INS = 65_536

/** Kinds whose values are also written without separators (a model may drop the spaces). */
const COMPACTABLE = new Set(['card-number', 'iban', 'no-fodselsnummer', 'se-personnummer'])

function counts(map: Map<string, number>): KindCount[] {
  return [...map].map(([kind, count]) => ({ kind, count }))
}

function bump(map: Map<string, number>, kind: string): void {
  map.set(kind, (map.get(kind) ?? 0) + 1)
}

/**
 * One request's stand-ins. Deterministic in (key, requestId, tenant) and the order secrets first
 * appear: the same prompt substituted twice gives the same text.
 *
 * @example
 * const book = await StandInBook.open(key, { requestId, tenant: 'acme' })
 * const { text } = await book.substitute(prompt) // send `text` upstream
 * const answer = await book.restore(upstreamAnswer) // answer.foreign.length > 0: quarantine
 */
export class StandInBook {
  readonly #key: StandInKey
  readonly #request: StandInRequest
  /** The request nonce and the tenant tag, derived on the first stand-in minted (most prompts hold none). */
  #ids: Promise<{ nonce: Uint8Array; tag: Uint8Array }> | undefined
  readonly #detectors: readonly SecretDetector[]
  readonly #shapes: ReadonlyMap<string, StandInShape>
  /** Whether every recognised kind is built in (no operator pattern's candidate may hold whitespace). */
  readonly #builtInOnly: boolean
  readonly #longestCandidate: number
  readonly #candidates: BookKinds['candidates']
  readonly #longestGate: number
  readonly #byValue = new Map<string, string>()
  readonly #byStandIn = new Map<string, { kind: string; value: string }>()
  readonly #index = new StandInIndex()
  /** Own stand-ins by the payload they carry: finds one the model rewrote (`4123-…` for `4123 …`). */
  readonly #byPayload = new Map<string, { kind: string; value: string }>()
  #counter = 0
  #longest = 0

  private constructor(
    key: StandInKey,
    request: StandInRequest,
    detectors: readonly SecretDetector[],
    recognised: readonly SecretDetector[],
  ) {
    this.#key = key
    this.#request = request
    this.#detectors = detectors
    const kinds = bookKinds(detectors, recognised)
    this.#shapes = kinds.shapes
    this.#candidates = kinds.candidates
    this.#builtInOnly = kinds.builtInOnly
    this.#longestGate = kinds.longestGate
    this.#longestCandidate = kinds.longestCandidate
  }

  /**
   * Opens the book of one request. `detectors` (what {@link substitute} replaces) defaults to
   * {@link builtInDetectors}; operator detectors (src/plugins/secrets/operator-pattern.ts) may be appended.
   * `recognised` adds kinds whose stand-ins {@link restore} recognises without this request
   * substituting them: another request (another model's policy) may have.
   *
   * @example
   * const book = await StandInBook.open(key, { requestId: crypto.randomUUID(), tenant: 'acme' })
   */
  static async open(
    key: StandInKey,
    request: StandInRequest,
    detectors: readonly SecretDetector[] = builtInDetectors(),
    recognised: readonly SecretDetector[] = [],
  ): Promise<StandInBook> {
    return new StandInBook(key, { ...request }, detectors, recognised)
  }

  #derivedIds(): Promise<{ nonce: Uint8Array; tag: Uint8Array }> {
    this.#ids ??= Promise.all([
      standInHmac(this.#key, `stand-in-request\0${this.#request.requestId}`),
      standInHmac(this.#key, `tenant\0${this.#request.tenant}`),
    ]).then(([nonce, tag]) => ({ nonce: nonce.slice(0, 4), tag: tag.slice(0, 5) }))
    return this.#ids
  }

  /** How many distinct secrets this book holds. */
  get size(): number {
    return this.#byValue.size
  }

  /**
   * The length of the longest stand-in issued so far (0 before any): a stream's release stage holds
   * back one character less, so a stand-in split across events is never released half-restored.
   *
   * @example
   * const holdBack = Math.max(CANARY_LENGTH, book.longestStandIn) - 1
   */
  get longestStandIn(): number {
    return this.#longest
  }

  /**
   * `text` with every detected secret replaced by its stand-in; kinds and counts, never values.
   *
   * @example
   * const { text, replaced } = await book.substitute('key: ghp_…') // replaced: [{ kind: 'github-token', count: 1 }]
   */
  async substitute(text: string): Promise<Substitution> {
    // A stand-in this book issued is never a candidate again, nor is any part of it: an IBAN's
    // stand-in may hold a Luhn-valid run of 16 digits in a card range, and a text scanned a second
    // time (tool-call arguments: as written, then their decoded strings) had that run replaced by a
    // card's stand-in — which restoration undid one level, returning the IBAN's stand-in as the IBAN.
    const issued = this.#byStandIn.size === 0 ? [] : this.#index.find(text)
    const spans = findSecrets(text, this.#detectors).filter(
      (span) => !overlaps(issued, span.start, span.end),
    )
    const replaced = new Map<string, number>()
    const skipped = new Map<string, number>()
    let out = ''
    let at = 0
    for (const span of spans) {
      const value = text.slice(span.start, span.end)
      const standIn = await this.#standInFor(span, value)
      if (standIn === undefined) {
        bump(skipped, span.kind)
        continue
      }
      out += text.slice(at, span.start) + standIn
      at = span.end
      bump(replaced, span.kind)
    }
    out += text.slice(at)
    return { text: out, replaced: counts(replaced), unsubstituted: counts(skipped) }
  }

  async #standInFor(span: SecretSpan, value: string): Promise<string | undefined> {
    const known = this.#byValue.get(`${span.kind}\0${value}`)
    if (known !== undefined) return known
    const shape = this.#shapes.get(span.kind)
    if (shape === undefined) return undefined
    // A compact stand-in may collide with one already minted (its id has 8–24 bits): take the next.
    for (let attempt = 0; attempt < 64 && this.#counter < MAX_STAND_INS; attempt++) {
      const counter = this.#counter++
      const { nonce, tag } = await this.#derivedIds()
      const minted = await mintStandIn(
        this.#key,
        { kind: span.kind, shape, value },
        { nonce, tag, counter },
      )
      // The own-stand-in index anchors on 8 characters: a shorter operator match stays as it is.
      if (minted === undefined || minted.text.length < 8) return undefined
      const standIn = minted.text
      if (this.#byStandIn.has(standIn) || standIn === value) continue
      this.#remember(span.kind, value, standIn)
      this.#byPayload.set(payloadKey(span.kind, minted.payload), { kind: span.kind, value })
      return standIn
    }
    return undefined
  }

  #remember(kind: string, value: string, standIn: string): void {
    this.#byValue.set(`${kind}\0${value}`, standIn)
    this.#byStandIn.set(standIn, { kind, value })
    // A PEM stand-in found as it was sent carries its own line break too: in a JSON channel a `\n`
    // it was written with is a newline once decoded, so its value (taken from a JSON text as
    // written, escapes and all) must go back decoded and escaped once — not escaped a second time.
    const sentBreak = kind === 'private-key' ? PEM_BREAK.exec(standIn)?.[1] : undefined
    this.#index.add({
      standIn,
      kind,
      value,
      ...(sentBreak === undefined ? {} : { lineBreak: sentBreak }),
    })
    this.#longest = Math.max(this.#longest, standIn.length)
    if (kind === 'private-key') {
      // The same block with its line breaks the other way (real ↔ JSON-escaped): what a stand-in sent
      // inside JSON arguments is once those are decoded, and what a model may write it as.
      const flip = (t: string) =>
        t.includes('\n')
          ? t.replace(/\r/g, '\\r').replace(/\n/g, '\\n')
          : t.replace(/\\r/g, '\r').replace(/\\n/g, '\n')
      const other = flip(standIn)
      if (other !== standIn && !this.#byStandIn.has(other)) {
        this.#byStandIn.set(other, { kind, value })
        // Found so, the value goes back with that writing's line breaks (restoredValue).
        const lineBreak = other.includes('\n') ? '\n' : '\\n'
        this.#index.add({ standIn: other, kind, value, lineBreak })
      }
    }
    if (COMPACTABLE.has(kind)) {
      const bare = standIn.replace(/[ -]/g, '')
      if (bare !== standIn && !this.#byStandIn.has(bare)) {
        const entry = { standIn: bare, kind, value: value.replace(/[ -]/g, '') }
        this.#byStandIn.set(bare, entry)
        this.#index.add(entry)
      }
    }
  }

  /**
   * `text` with this request's stand-ins replaced by their values; stand-ins minted for another
   * request are left in place and listed in `foreign` (quarantine the answer: it is a leak).
   *
   * @example
   * const { text, foreign } = await book.restore(answer)
   * if (foreign.length > 0) quarantine(foreign.map((f) => f.kind))
   */
  async restore(text: string): Promise<Restoration> {
    const restored = new Map<string, number>()
    const { own, foreign } = await this.locate(text)
    let out = ''
    let at = 0
    for (const r of own) {
      out += text.slice(at, r.start) + withLineBreaks(r.value, r.lineBreak)
      at = r.end
      bump(restored, r.kind)
    }
    out += text.slice(at)
    return { text: out, restored: counts(restored), foreign }
  }

  /**
   * Where `text` holds this request's stand-ins (with their values) and other requests' — what
   * {@link restore} replaces, for a caller that replaces by itself (a stream's release stage).
   * Only stand-ins starting in [`from`, `to`) are reported; the text around the window is read as
   * context (a candidate must start where a token starts), so a stream can judge a window at a time.
   *
   * @example
   * const { own, foreign } = await book.locate(text, judged, holdFrom)
   */
  async locate(text: string, from = 0, to = text.length): Promise<Located> {
    return this.locateNow(text, from, to)
  }

  /**
   * {@link locate}, synchronous when nothing in the window needs a MAC checked — the common case
   * of a stream's next words, which then cost no promise.
   *
   * @example
   * const found = book.locateNow(text, judged, holdFrom)
   * const { own, foreign } = found instanceof Promise ? await found : found
   */
  locateNow(text: string, from = 0, to = text.length): Located | Promise<Located> {
    // Every exact hit from `from` on bounds the candidates (one starting before `to` may overlap a
    // hit starting after it); only those starting before `to` are reported.
    const hits: Replacement[] = []
    if (this.#byStandIn.size > 0) {
      const window = from === 0 ? text : text.slice(from)
      for (const { start, end, entry } of this.#index.find(window)) {
        hits.push({
          start: from + start,
          end: from + end,
          kind: entry.kind,
          value: entry.value,
          ...(entry.lineBreak === undefined ? {} : { lineBreak: entry.lineBreak }),
        })
      }
    }
    const exact = hits.filter((r) => r.start < to)
    const candidates = this.#candidatesIn(text, hits, from, to)
    if (candidates.length === 0) return { own: exact, foreign: [] }
    return this.#inspect(candidates).then(({ foreign, rewritten }) => {
      if (rewritten.length === 0) return { own: exact, foreign }
      const own: Replacement[] = []
      let at = 0
      for (const r of [...exact, ...rewritten].sort((a, b) => a.start - b.start)) {
        if (r.start < at) continue // two readings of one span: the first stands
        own.push(r)
        at = r.end
      }
      return { own, foreign }
    })
  }

  /**
   * `text` with everything shaped like a stand-in of a recognised kind — this request's, another
   * request's, or a look-alike: no MAC is checked — replaced by `[stand-in]`, so a stored record
   * holds none (a stand-in is a bearer proof of the request it was minted for).
   *
   * @example
   * record.withheld.content = book.redact(withheldText)
   */
  redact(text: string): string {
    let out = text
    for (const [, re] of this.#candidates) out = out.replace(re, '[stand-in]')
    return out
  }

  /**
   * Whether the recognised kinds include operator patterns (their candidates may hold whitespace:
   * a stream then holds back the longest stand-in's length, src/plugins/secrets/hold-back.ts).
   */
  get recognisesPatterns(): boolean {
    return !this.#builtInOnly
  }

  /**
   * The longest candidate of any recognised kind: {@link MAX_STAND_IN_LENGTH}, or an operator
   * pattern's longest match when longer. A stream holds back one character less.
   */
  get longestCandidate(): number {
    return this.#longestCandidate
  }

  /** Candidates of every recognised kind starting in [from, to), outside the spans found exactly. */
  #candidatesIn(text: string, own: readonly SecretSpan[], from: number, to: number): Candidate[] {
    const candidates: Candidate[] = []
    // A candidate starting at or after `from` lies in text[from..], so that part's facts bound it.
    const facts = runFacts(text, from, this.#longestGate)
    for (const [kind, re, gate] of this.#candidates) {
      if (gate && (gate.minRun > facts.longestRun || (gate.digit && !facts.digit))) continue
      re.lastIndex = from
      for (let m = re.exec(text); m !== null && m.index < to; m = re.exec(text)) {
        const start = m.index
        // Every start is tried, even inside the last candidate: one whose MAC fails may hide a
        // stand-in that starts within it (a card after other digit groups). The patterns' one-character
        // look-behind keeps this to token starts.
        re.lastIndex = start + 1
        for (const length of candidateLengths(kind, m[0])) {
          const end = start + length
          if (!overlaps(own, start, end)) {
            candidates.push({ kind, start, end, text: m[0].slice(0, length) })
          }
        }
      }
    }
    return candidates
  }

  /**
   * Candidates whose MAC verifies: another request's stand-ins (foreign), or this request's in another
   * layout the model chose (rewritten: a card's separators changed).
   */
  async #inspect(
    candidates: readonly Candidate[],
  ): Promise<{ foreign: ForeignStandIn[]; rewritten: Replacement[] }> {
    // In batches: one at a time, each WebCrypto round trip idled (docs/secrets.md); all at once,
    // thousands of HMACs queued on the thread pool together ran slower still.
    let known = INSPECTED.get(this.#key)
    if (!known) {
      known = new Map()
      INSPECTED.set(this.#key, known)
    }
    const tenant = this.#request.tenant
    const idOf = (c: Candidate) => `${tenant}\u0000${c.kind}\u0000${c.text}`
    // This call's own readings: the shared map may drop an entry while this call still needs it.
    const readings = new Map<string, StandInPayload | null>()
    const fresh: [string, Candidate][] = []
    for (const c of candidates) {
      const id = idOf(c)
      if (readings.has(id)) continue
      const seen = known.get(id)
      if (seen === undefined) fresh.push([id, c])
      readings.set(id, seen ?? null)
    }
    for (let i = 0; i < fresh.length; i += SCAN_BATCH) {
      const batch = fresh.slice(i, i + SCAN_BATCH)
      const found = await Promise.all(
        batch.map(([, c]) => inspectStandIn(this.#key, c.kind, this.#shapes.get(c.kind)!, c.text)),
      )
      batch.forEach(([id], j) => {
        const reading = found[j] === undefined ? null : Object.freeze(found[j]!)
        readings.set(id, reading)
        if (known.size >= INSPECTED_MAX) known.delete(known.keys().next().value!)
        known.set(id, reading)
      })
    }
    const verified = candidates
      .map((candidate) => ({ ...candidate, payload: readings.get(idOf(candidate)) ?? undefined }))
      .filter((c): c is Candidate & { payload: StandInPayload } => c.payload !== undefined)
      .sort((a, b) => a.start - b.start || b.end - a.end)
    const foreign: ForeignStandIn[] = []
    const rewritten: Replacement[] = []
    let at = 0
    for (const { kind, start, end, payload, text } of verified) {
      if (start < at) continue // overlapping readings (two kinds, two lengths): the first stands
      at = end
      const mine = this.#byPayload.get(payloadKey(kind, payload))
      if (!mine) foreign.push({ kind, start, end, payload })
      else if (kind !== 'private-key') rewritten.push({ start, end, ...mine })
      else rewritten.push({ start, end, ...mine, lineBreak: PEM_BREAK.exec(text)?.[1] ?? '\n' })
    }
    return { foreign, rewritten }
  }
}

/**
 * The lengths of a candidate match to check, longest first. The patterns are greedy: an IBAN runs on
 * into an upper-case word after it (`… 947 THE END`), a grouped card into a digit group after it. An
 * IBAN is cut at its country's length (stand-ins keep the country); a grouped card also drops its
 * trailing groups while 13 digits remain.
 */
function candidateLengths(kind: string, match: string): number[] {
  const lengths = [match.length]
  if (kind === 'iban') {
    const length = IBAN_LENGTHS[match.slice(0, 2)]
    if (length !== undefined) {
      let alnum = 0
      for (let i = 0; i < match.length; i++) {
        if (match[i] !== ' ' && ++alnum === length) {
          if (i + 1 < match.length) lengths.push(i + 1)
          break
        }
      }
    }
  } else if (kind === 'card-number') {
    for (let i = match.length - 1; i > 0; i--) {
      if (
        (match[i] === ' ' || match[i] === '-') &&
        match.slice(0, i).replace(/[ -]/g, '').length >= 13
      ) {
        lengths.push(i)
      }
    }
  }
  return lengths
}

/** What a book derives from its detectors alone: the same for every request under one policy. */
interface BookKinds {
  shapes: ReadonlyMap<string, StandInShape>
  /**
   * Each kind's candidate pattern, global, shared (its `lastIndex` is set before each use), with
   * what a text must hold for the pattern to be worth running (see {@link StandInShape.gate}).
   */
  candidates: readonly (readonly [string, RegExp, StandInShape['gate']])[]
  builtInOnly: boolean
  /** The largest run any gate asks for: a text known to hold one (and a digit) passes them all. */
  longestGate: number
  longestCandidate: number
}

/**
 * Kinds by the detector lists they were derived from. A policy's lists are made once and never
 * changed (src/plugins/secrets/policy.ts), so every request under it shares one derivation: made per book,
 * it was a sixth of the secrets check's time on a 1k-token prompt without secrets.
 */
const KINDS = new WeakMap<
  readonly SecretDetector[],
  WeakMap<readonly SecretDetector[], BookKinds>
>()

function bookKinds(
  detectors: readonly SecretDetector[],
  recognised: readonly SecretDetector[],
): BookKinds {
  let byRecognised = KINDS.get(detectors)
  if (!byRecognised) {
    byRecognised = new WeakMap()
    KINDS.set(detectors, byRecognised)
  }
  let kinds = byRecognised.get(recognised)
  if (!kinds) {
    kinds = deriveKinds([...detectors, ...recognised])
    byRecognised.set(recognised, kinds)
  }
  return kinds
}

/** The kinds of `all` (substituted first, then recognised) in first-seen order. */
function deriveKinds(all: readonly SecretDetector[]): BookKinds {
  const shapes = new Map<string, StandInShape>()
  const candidates: [string, RegExp, StandInShape['gate']][] = []
  for (const detector of all) {
    if (shapes.has(detector.kind)) continue
    const shape = SHAPES[detector.kind] ?? classShape(detector.pattern ?? /(?!)/g)
    shapes.set(detector.kind, shape)
    candidates.push([detector.kind, candidatePattern(shape.candidates), shape.gate])
  }
  return {
    shapes,
    candidates,
    builtInOnly: [...shapes.keys()].every((kind) => Object.hasOwn(SHAPES, kind)),
    longestGate: Math.max(0, ...candidates.map(([, , gate]) => gate?.minRun ?? 0)),
    longestCandidate: Math.max(MAX_STAND_IN_LENGTH, ...all.map((d) => d.longest ?? 0)),
  }
}

/**
 * Each shape's candidate pattern compiled once per isolate, global (a user sets `lastIndex` before
 * each scan and never awaits inside one, so books can share them).
 */
const COMPILED = new Map<string, RegExp>()

function candidatePattern(re: RegExp): RegExp {
  const flags = re.flags.includes('g') ? re.flags : `${re.flags}g`
  const key = `${flags}/${re.source}`
  let compiled = COMPILED.get(key)
  if (!compiled) {
    compiled = new RegExp(re.source, flags)
    COMPILED.set(key, compiled)
  }
  return compiled
}

/** A candidate stand-in of one kind in an answer. */
interface Candidate {
  kind: string
  start: number
  end: number
  text: string
}

/** Whether [start, end) overlaps a span of `sorted` (in order, non-overlapping). */
function overlaps(
  sorted: readonly Pick<SecretSpan, 'start' | 'end'>[],
  start: number,
  end: number,
): boolean {
  const next = sorted[firstEndingAfter(sorted, start)]
  return next !== undefined && next.start < end
}
