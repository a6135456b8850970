/**
 * @module The release stage of a verified stream: whole upstream events, held back just long enough that
 * no canary — ours or another request's — can ever cross to the client, even split across events.
 *
 * Events are released whole and unchanged unless a canary of ours must be cut out of them, so an answer
 * with nothing to strip reaches the client byte for byte as the upstream sent it. An event is held while
 * any channel's text in it could still be the start of a canary; a completed foreign canary ends the
 * stream with a quarantine before its event (or anything after it) is released.
 *
 * Pieces of our own canary and marker (src/canary/pieces.ts) start anywhere, not only at `cnry_`: each
 * channel's text is also read by a piece cutter, which cuts every run of 8 characters of either and
 * holds back the longest suffix of 2 to 7 characters that could still grow into one. Why that bound:
 * a piece can only form with the next event if the text so far ends in its first k < 8 characters,
 * each a substring of a secret; holding that suffix (and the 28-character canary context the scan
 * re-reads) keeps every such start until it is known. A lone last character is not held (see
 * `HELD_FROM` there); the cutter never cuts what has left, so no 8 characters ever do. A piece of
 * another tenant's marker ends the stream like a foreign canary.
 */

import { type AttemptContext, ownTokens } from '../attempt/context'
import {
  CANARY_LENGTH,
  classify,
  cutOff,
  type MarkerBook,
  markerBook,
  PieceCutter,
  quickHold,
} from '../canary'
import { GuardError } from '../errors'
import type { ForeignContent } from '../fingerprint'
import type { Usage } from '../format/frames'
import { type Channel, type Frame, isBlankEvent, withTexts } from '../format/frames'
import { encodeSseEvent } from '../format/sse'
import { redactCanaries } from '../verify/canary-evidence'
import type { EchoWatch } from '../verify/echo-watch'
import type { ContentHold } from './content-hold'
import { applyEdits, type Edit, StandInJudge, type StreamSecrets } from './stand-in-release'

/** A held tail too short to carry any canary material: a prefix of `cnry` without its underscore. */
const SHORT_TAIL = /^c(?:n(?:r(?:y)?)?)?$/i

/** A half-open range of a channel's text, in positions counted from the start of the answer. */
interface Range {
  start: number
  end: number
}

/** The start of a canary, ours or another's, in any case. */
const MARKER = /cnry_/gi

/** Characters that can still be the start of a canary (one canary long, less its last). */
const CONTEXT = CANARY_LENGTH - 1

/**
 * How far the released head of a channel's `text` may grow before it is cut off: so an event's text
 * is appended, and what is held is copied once per this many characters rather than once per event.
 */
const TRIM_AT = 4096

/** Held frames released a batch at a time (see `Release.begin`). */
const BEGIN_BATCH = 256

/**
 * What one batch lets out: the client's SSE text, or — one event released as it came, from an
 * upstream chunk that was exactly that event — the chunk itself (its bytes as they came, not encoded
 * again). Empty: nothing may leave yet.
 */
export type Released = string | Uint8Array

/** Per-channel text not yet released, with where it starts in the whole answer. */
interface ChannelState {
  /** Where the unreleased text starts in the channel: everything before it has left. */
  base: number
  /**
   * The channel's text from `from` on: at least its last {@link CONTEXT} released characters (where
   * there were that many), then the unreleased ones from `base`. The released ones are scanned again
   * with new text, so a canary whose first letters were released (see `moveOn`) is still caught when
   * the rest arrives.
   */
  text: string
  from: number
  /** Absolute position from which the text may still be held back (set by each scan). */
  safe: number
  /**
   * Every piece of our own canary and marker, wherever it starts (see src/canary/pieces.ts): cut as
   * it is read; undefined when nothing is scanned.
   */
  pieces: PieceCutter | undefined
  /** Where a piece of ours could still be forming: held from there (set by each scan). */
  pieceHold: number
  /** Our canary to cut, and this request's stand-ins to replace with their values. */
  strips: Edit[]
  /** The channel's last {@link CONTEXT} characters: where a canary may still be forming. */
  tail: string
  /** Where the last `cnry_` (any case) of the channel starts; −1 while there is none. */
  marker: number
  /**
   * Where the channel's latest whole token of our own (this attempt's canary, the prefix marker)
   * starts, once read: the foreign-content hold-back need not keep what lies before it (see
   * `ContentHold.safeFrom`). 0 while there is none.
   */
  barrier: number
  /** Text added since the channel's last scan. */
  dirty: boolean
}

/** Where the text a scan reads starts: the released characters still scanned, then the rest. */
function contextStart(state: ChannelState): number {
  return Math.max(state.from, state.base - CONTEXT)
}

/** The position after the channel's last character. */
function endOf(state: ChannelState): number {
  return state.from + state.text.length
}

/** Where one channel's text of a queued frame lies. */
interface Span extends Range {
  name: Channel
}

interface Held {
  frame: Frame
  spans: Span[]
}

/** Frames read while the answer was verified, in order (an array, or a held head read back). */
export interface HeldFrames {
  readonly length: number
  at(index: number): Frame | undefined
}

/** What the verification stage hands over: frames already read, and what to cut from them. */
export interface ReleaseStart {
  held: HeldFrames
  /** Ranges of our own canary (the echo and its decoration) to remove, per channel. */
  strips: Partial<Record<Channel, Range[]>>
  /**
   * Released on an early proof (the canary in the reasoning), before the content began: the content's
   * echo, if it comes, is still looked for at its start, and its span (decoration included) cut.
   */
  contentEcho?: EchoWatch
  /**
   * Released before any proof (`streamRelease: 'async'`): the proof is still owed — this attempt's
   * canary in the reasoning, or the content's echo (`contentEcho`, required then). A content that
   * opens without it, or an answer that ends without it, ends the stream with `onFailed`'s error.
   */
  proofOwed?: {
    /** Reads the reasoning for this attempt's canary (text proofs only; see `EchoWatch.early`). */
    reasoning: EchoWatch
    onFailed: (outcome: 'missing' | 'cut-off', seen: Record<string, string>) => Promise<GuardError>
  }
  /**
   * Whether each channel's last words are held until the foreign-content check has judged them (off
   * under `async`: evidence then ends the stream after the words left). @default true
   */
  contentHoldBack?: boolean
  /**
   * Called once the whole answer was released intact (its end seen, nothing foreign), with the last
   * usage the upstream reported: only such an answer may teach learned state.
   */
  onEnd?: (usage: Usage | undefined) => void
  /**
   * The answer's foreign-content check, fed with the held frames already: the release stage feeds it
   * the rest, holds back what it has not judged yet, and ends the stream when it finds evidence.
   */
  content?: ContentHold
  /**
   * This request's stand-in book: its stand-ins leave as their values, another request's ends the
   * stream (each channel's tail held back while a stand-in could still be forming in it).
   */
  secrets?: StreamSecrets
  /** Called when another tenant's prompt text appears after release; returns the ending error. */
  onForeignContent?: (found: ForeignContent, seen: Record<string, string>) => Promise<GuardError>
  /** Called when a foreign canary appears after release; returns the error that ends the stream. */
  onForeign: (
    channel: Channel,
    tenantTag: string | undefined,
    seen: Record<string, string>,
  ) => Promise<GuardError>
}

/**
 * The release stage: frames in (the held ones first), the client's SSE text out, batch by batch. Each
 * call returns what may leave now — possibly nothing — and rejects with the error that ends the stream.
 *
 * @example
 * const release = new Release(ctx, start)
 * send(await release.begin())
 * for (let frames = await upstream.next(); frames; frames = await upstream.next()) {
 *   send(await release.take(frames))
 * }
 * send(await release.finish())
 */
export class Release {
  readonly #ctx: AttemptContext
  readonly #start: ReleaseStart
  readonly #channels = new Map<Channel, ChannelState>()
  /** Frames not yet released, from `#head` on (released ones are dropped a batch at a time). */
  readonly #queue: Held[] = []
  #head = 0
  /** This attempt's canary and the tenant's prefix marker: cut wherever they appear. */
  readonly #own: string[]
  /** A bounded copy of everything seen, for the quarantine record should a foreign canary appear. */
  readonly #seen: Partial<Record<Channel, string>> = {}
  #sawDone = false
  #usage: Usage | undefined
  #finishReason: string | null | undefined
  /** Still owed (see `ReleaseStart.proofOwed`). */
  #proofOwed: boolean
  /** Stand-in judgements, when the guard substitutes secrets. */
  readonly #standIns: StandInJudge | undefined
  /** The channel of the latest text: any other channel with text pending has paused. */
  #latest: Channel | undefined
  /** The isolate's prefix markers (see src/canary/marker-book.ts), read once `begin` has run. */
  #book: MarkerBook | undefined
  /** What was seen so far, made safe to store: read only when a foreign stand-in ends the stream. */
  readonly #seenNow = (): Record<string, string> => redactCanaries(this.#seen)

  constructor(ctx: AttemptContext, start: ReleaseStart) {
    this.#ctx = ctx
    this.#start = start
    this.#own = ownTokens(ctx)
    this.#proofOwed = start.proofOwed !== undefined
    this.#standIns = start.secrets ? new StandInJudge(start.secrets) : undefined
  }

  #channel(name: Channel): ChannelState {
    let state = this.#channels.get(name)
    if (!state) {
      const strips = [...(this.#start.strips[name] ?? [])]
      state = {
        base: 0,
        text: '',
        from: 0,
        safe: 0,
        pieces:
          this.#own.length > 0
            ? new PieceCutter(this.#own, this.#book, this.#ctx.tenant)
            : undefined,
        pieceHold: 0,
        strips,
        tail: '',
        marker: -1,
        barrier: 0,
        dirty: false,
      }
      this.#channels.set(name, state)
    }
    return state
  }

  /** The frames held while the answer was verified, as far as they may leave now. */
  async begin(): Promise<Released> {
    const held = this.#start.held
    if (this.#own.length > 0) this.#book = await markerBook(await this.#ctx.services.key())
    let out = ''
    // In batches, as if they came so: a head of 15,000 events queued at once kept every one of them
    // (and what the stage makes of it) alive through the young generation's collections.
    let from = 0
    do {
      const to = Math.min(held.length, from + BEGIN_BATCH)
      // Already read by the foreign-content check while held: added here for release only.
      for (let i = from; i < to; i++) this.#add(held.at(i)!, false)
      await this.#scan(to === held.length ? this.#sawDone : false)
      out += this.#flush(false)
      from = to
    } while (from < held.length)
    return out
  }

  /** The next frames from the upstream, and what may leave now. */
  take(frames: readonly Frame[]): Promise<Released> | Released {
    if (frames.length === 0) return ''
    for (const frame of frames) this.#add(frame, true)
    // Nothing follows [DONE], so no canary can still be completing: release everything.
    const pending = this.#scan(this.#sawDone)
    return pending === undefined ? this.#flush(true) : pending.then(() => this.#flush(true))
  }

  /** The upstream ended: the rest, judged to its last word (then call {@link end}). */
  async finish(): Promise<Released> {
    await this.#scan(true)
    return this.#flush(true)
  }

  /** Queues a frame; `fresh` text (not read while held) also goes to the foreign-content check. */
  #add(frame: Frame, fresh: boolean): void {
    if (frame.done) this.#sawDone = true
    if (frame.usage) this.#usage = frame.usage
    if (frame.finishReason !== undefined) this.#finishReason = frame.finishReason
    const spans: Span[] = []
    for (const key in frame.texts) {
      const name = key as Channel
      const text = frame.texts[name]
      if (!text) continue
      const state = this.#channel(name)
      const startAt = endOf(state)
      state.text += text
      this.#mark(state, startAt, text)
      if (fresh) this.#start.content?.push(name, text)
      this.#standIns?.push(name, text)
      if (name === 'content') this.#watchEcho(state, frame.done)
      else if (name === 'reasoning' && this.#proofOwed)
        this.#start.proofOwed?.reasoning.readReasoning(text)
      state.dirty = true
      this.#latest = name
      spans.push({ name, start: startAt, end: startAt + text.length })
      const prior = this.#seen[name] ?? ''
      if (prior.length < 65_536) this.#seen[name] = prior + text
    }
    this.#queue.push({ frame, spans })
  }

  /** Notes a canary's start in text added at `at`, and keeps the channel's tail. */
  #mark(state: ChannelState, at: number, text: string): void {
    const probe = state.tail + text
    // Its underscore first: a native search, where the regular expression would cost each event.
    if (probe.indexOf('_') !== -1) {
      MARKER.lastIndex = 0
      for (let m = MARKER.exec(probe); m !== null; m = MARKER.exec(probe)) {
        state.marker = at - state.tail.length + m.index
      }
    }
    state.tail = probe.length <= CONTEXT ? probe : probe.slice(-CONTEXT)
  }

  /**
   * Classifies each channel's unreleased text: our own canary (and fragments of it) become strips, a
   * foreign canary ends the stream; the point where a canary could still be forming bounds release.
   * Synchronous (undefined) when no text holds a `cnry_`: no promise per event on the common path.
   */
  #scan(final: boolean): Promise<void> | undefined {
    const content = this.#contentCheck(final)
    if (content) return content
    const standIns = this.#judgeStandIns(final)
    const canaries = this.#scanCanaries(final)
    if (!standIns) return canaries
    return canaries ? Promise.all([standIns, canaries]).then(() => undefined) : standIns
  }

  /**
   * Judges every channel with text not judged yet for stand-ins; a channel that has paused (the
   * answer moved on to another) is judged to its end, so it does not hold the others back.
   */
  #judgeStandIns(final: boolean): Promise<void> | undefined {
    const judge = this.#standIns
    if (!judge) return undefined
    const pending: Promise<void>[] = []
    for (const [name, state] of this.#channels) {
      if (!judge.pending(name)) continue
      const paused = this.#latest !== undefined && this.#latest !== name
      const edits = judge.judgeWindow(name, final, this.#seenNow, paused)
      if (edits instanceof Promise)
        pending.push(edits.then((found) => void state.strips.push(...found)))
      else if (edits.length > 0) state.strips.push(...edits)
    }
    return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined)
  }

  /** Our own canary and other requests' (see {@link #scan}). */
  #scanCanaries(final: boolean): Promise<void> | undefined {
    const slow: [Channel, ChannelState][] = []
    for (const [name, state] of this.#channels) {
      if (!final && !state.dirty) continue
      state.dirty = false
      if (this.#own.length === 0 || !state.pieces) {
        state.safe = endOf(state)
        state.pieceHold = endOf(state)
        continue
      }
      const foreign = this.#cutPieces(state, final)
      if (foreign !== undefined) {
        // A piece of another tenant's marker: a leak, ended before the event that carries it.
        return this.#start.onForeign(name, foreign, redactCanaries(this.#seen)).then((error) => {
          throw error
        })
      }
      // A `cnry_` in what a scan reads needs the full classification; otherwise only the tail can
      // still be forming one (the same answer as `quickHold` over the whole text, without reading it).
      const quick = state.marker >= contextStart(state) ? undefined : quickHold(state.tail, final)
      if (quick === undefined) slow.push([name, state])
      else state.safe = Math.max(state.base, endOf(state) - state.tail.length + quick)
    }
    return slow.length === 0 ? undefined : this.#classify(slow, final)
  }

  /**
   * Reads a channel's new text for pieces of our own secrets: cuts them, and holds back where one could
   * still be forming. Returns the tenant tag of another tenant's marker a piece of which it read.
   */
  #cutPieces(state: ChannelState, final: boolean): string | undefined {
    const cutter = state.pieces!
    const found = cutter.feed(state.text.slice(cutter.end - state.from), state.base)
    for (const cut of found.cuts) state.strips.push(cut)
    state.pieceHold = final ? endOf(state) : cutter.holdFrom(state.base)
    return found.foreign?.tenantTag
  }

  /**
   * Ends the stream, before the events that carry it, when another tenant's prompt text has shown up;
   * at the end of the answer its last words are judged first.
   */
  #contentCheck(final: boolean): Promise<never> | undefined {
    if (final) {
      const content = this.#channels.get('content')
      if (content) this.#watchEcho(content, true)
      else this.#start.contentEcho?.observe('', true)
    }
    const unproven = this.#proofCheck(final)
    if (unproven) return unproven
    const { content, onForeignContent } = this.#start
    if (!content || !onForeignContent) return undefined
    if (final) content.end()
    const found = content.evidence()
    if (!found) return undefined
    return onForeignContent(found, redactCanaries(this.#seen)).then((error) => {
      throw error
    })
  }

  /** An owed proof: paid by the content's echo; failed by a content without it, or by the end. */
  #proofCheck(final: boolean): Promise<never> | undefined {
    const owed = this.#start.proofOwed
    if (!this.#proofOwed || !owed) return undefined
    // Paid as before release: this canary restated in the reasoning, or the content's echo.
    const echo = this.#start.contentEcho
    if (owed.reasoning.early || echo?.span) {
      this.#proofOwed = false
      return undefined
    }
    if (!final && !echo?.settled) return undefined
    this.#proofOwed = false
    const outcome = final && cutOff(this.#finishReason, this.#seen.content) ? 'cut-off' : 'missing'
    return owed.onFailed(outcome, redactCanaries(this.#seen)).then((error) => {
      throw error
    })
  }

  /** While the content's echo is still open, the content is held; once it is found, it is cut. */
  #watchEcho(state: ChannelState, final: boolean): void {
    const echo = this.#start.contentEcho
    if (!echo || echo.settled || state.base !== 0) return
    echo.observe(state.text, final)
    if (echo.span && echo.span.end > echo.span.start) state.strips.push({ ...echo.span })
  }

  /**
   * Where a channel may be released up to: neither a canary, nor a stand-in still forming, nor
   * unjudged content lies before it.
   */
  #safe(name: Channel): number {
    const echo = this.#start.contentEcho
    if (name === 'content' && echo && !echo.settled) return this.#channel(name).base
    const judged = this.#standIns ? this.#standIns.judgedTo(name) : Number.POSITIVE_INFINITY
    const state = this.#channel(name)
    const canary = Math.min(state.safe, state.pieceHold, judged)
    if (this.#start.contentHoldBack === false) return canary
    const barrier = this.#channel(name).barrier
    const content = this.#start.content?.safeFrom(name, barrier) ?? Number.POSITIVE_INFINITY
    return Math.min(canary, content)
  }

  async #classify(slow: [Channel, ChannelState][], final: boolean): Promise<void> {
    const key = await this.#ctx.services.key()
    for (const [name, state] of slow) {
      const start = contextStart(state)
      const lead = state.base - start
      const found = await classify(
        key,
        this.#own,
        name,
        state.text.slice(start - state.from),
        final,
      )
      const foreign = found.findings.find((f) => f.kind === 'foreign')
      if (foreign) {
        throw await this.#start.onForeign(name, foreign.tenantTag, redactCanaries(this.#seen))
      }
      for (const [at, to] of found.cuts) {
        // Positions are in context + text; what lies in the context is out already.
        if (to <= lead) continue
        const cut = { start: state.base + Math.max(0, at - lead), end: state.base + to - lead }
        if (!state.strips.some((r) => r.start === cut.start && r.end === cut.end))
          state.strips.push(cut)
      }
      for (const at of found.ownAt) state.barrier = Math.max(state.barrier, start + at)
      state.safe = state.base + Math.max(0, found.holdAt - lead)
    }
  }

  /** Releases queued frames whose every span lies before the point where a canary could still begin. */
  #flush(whole: true): Released
  #flush(whole: false): string
  #flush(whole: boolean): Released {
    const queue = this.#queue
    const first = this.#head
    let out = ''
    let at = first
    while (at < queue.length) {
      const next = queue[at]!
      if (this.#blocked(next) && !this.#moveOn(next, at)) break
      at++
      out += this.#emit(next)
      for (const span of next.spans) this.#advance(this.#channel(span.name), span.end)
    }
    // One event released as it came, from a chunk that was all of it: the chunk goes out as it came.
    const lone = whole && at === first + 1 ? queue[first]!.frame : undefined
    const released = lone?.chunk !== undefined && out === lone.raw ? lone.chunk : out
    if (at === queue.length) {
      queue.length = 0
      this.#head = 0
    } else if (at > 64) {
      queue.splice(0, at)
      this.#head = 0
    } else this.#head = at
    return released
  }

  /** Some text of the frame lies past where its channel may be released up to. */
  #blocked(held: Held): boolean {
    for (const span of held.spans) if (span.end > this.#safe(span.name)) return true
    return false
  }

  #advance(state: ChannelState, to: number): void {
    state.base = to
    if (to - state.from > TRIM_AT) {
      const keep = to - CONTEXT
      state.text = state.text.slice(keep - state.from)
      state.from = keep
    }
    if (state.strips.some((r) => r.end <= state.base)) {
      state.strips = state.strips.filter((r) => r.end > state.base)
    }
  }

  /**
   * A channel that ends in "c", "cn", "cnr" or "cnry" ("…is basic") while the answer has moved on to
   * another channel (reasoning done, content flowing) would otherwise hold every later event until the
   * end of the stream. Such a short tail is released: it carries no canary material, and should the
   * channel resume with the rest of a canary, the released tail is still scanned with it (`text`),
   * so the canary is caught before its remaining bytes leave. A tail that is the start of our own
   * canary is cut rather than released; any other `cnry_…` tail keeps holding.
   */
  #moveOn(held: Held, from: number): boolean {
    if (!this.#othersFrom(held, from)) return false
    const blocked = held.spans.filter((span) => span.end > this.#safe(span.name))
    // The foreign-content check judges a paused channel's last words now, unless they matched
    // another tenant lately: then they wait for the end (see ./content-hold.ts).
    for (const { name } of blocked) if (this.#start.content?.pause(name) === false) return false
    const evidence = this.#start.content?.evidence()
    if (evidence) return false // ended by the next scan, before these words leave
    const cuts: [ChannelState, Range][] = []
    for (const { name } of blocked) {
      const state = this.#channel(name)
      // A paused channel was judged to its end by the last scan; anything else is still forming.
      if (this.#standIns?.pending(name)) return false
      if (state.safe >= endOf(state)) continue // held for content only
      const tail = state.text.slice(state.safe - state.from)
      if (SHORT_TAIL.test(tail)) continue
      // The start of our own canary (a quote of the directive cut short): cut, never released.
      const lower = tail.toLowerCase()
      if (!this.#own.some((token) => token.startsWith(lower))) return false
      cuts.push([state, { start: state.safe, end: endOf(state) }])
    }
    for (const [state, range] of cuts) state.strips.push(range)
    for (const { name } of blocked) {
      const state = this.#channel(name)
      state.safe = endOf(state)
      // A possible start of a piece of ours leaves too (at most PIECE_LENGTH − 1 characters): should
      // the channel resume with the rest, the cutter reads them as released and cuts the rest.
      state.pieceHold = endOf(state)
    }
    return true
  }

  /** Whether a frame from `from` on carries text of a channel not blocked in `held` (a blocked one). */
  #othersFrom(held: Held, from: number): boolean {
    const spans = held.spans
    // One span (the usual event): it is the blocked one, so any other channel is another.
    const one = spans.length === 1 ? spans[0]!.name : undefined
    const names =
      one === undefined
        ? spans.filter((span) => span.end > this.#safe(span.name)).map((span) => span.name)
        : []
    const queue = this.#queue
    for (let k = from; k < queue.length; k++) {
      for (const { name } of queue[k]!.spans) {
        if (one === undefined ? !names.includes(name) : name !== one) return true
      }
    }
    return false
  }

  /** A released event's text: as it came unless something was cut from it. */
  #emit(held: Held): string {
    const replaced: Partial<Record<Channel, string>> = {}
    let changed = false
    for (const { name, start } of held.spans) {
      const strips = this.#channel(name).strips
      if (strips.length === 0) continue
      const original = held.frame.texts[name] ?? ''
      const cut = applyEdits(original, start, strips)
      if (cut !== original) {
        replaced[name] = cut
        changed = true
      }
    }
    if (!changed) return held.frame.raw ?? encodeSseEvent(held.frame.event)
    const event = withTexts(held.frame, replaced)
    // An event the cut left saying nothing is not sent (its spans still advance the channel).
    return isBlankEvent(event) ? '' : encodeSseEvent(event)
  }

  /**
   * After the last bytes left: a whole answer teaches; one without its end marker throws, never whole.
   *
   * @example
   * send(await release.finish())
   * release.end()
   */
  end(): void {
    if (!this.#sawDone) {
      // Every byte released so far was verified; the client still must not take a cut answer as whole.
      throw new GuardError(
        'upstream_error',
        'The upstream stream ended before it was complete; the answer is truncated.',
      )
    }
    this.#start.onEnd?.(this.#usage)
  }
}
