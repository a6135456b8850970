/**
 * @module The canary check of a streamed answer: our own canary and marker are cut wherever they
 * appear, another request's canary (or a piece of another tenant's marker) ends the stream before the
 * event that carries it, and each channel is held back wherever a canary could still be forming.
 *
 * Pieces of our own canary and marker (src/core/canary/pieces.ts) start anywhere, not only at `cnry_`: each
 * channel's text is also read by a piece cutter, which cuts every run of 8 characters of either and
 * holds back the longest suffix of 2 to 7 characters that could still grow into one. Why that bound:
 * a piece can only form with the next event if the text so far ends in its first k < 8 characters,
 * each a substring of a secret; holding that suffix (and the 28-character canary context the scan
 * re-reads) keeps every such start until it is known. A lone last character is not held (see
 * `HELD_FROM` there); the cutter never cuts what has left, so no 8 characters ever do. A piece of
 * another tenant's marker ends the stream like a foreign canary.
 */
import type { AttemptContext } from '../attempt/context'
import {
  CANARY_LENGTH,
  classify,
  type MarkerBook,
  markerBook,
  PieceCutter,
  quickHold,
} from '../canary'
import type { Channel } from '../format/frames'
import type { AnswerView, Check } from './check'

/** A held tail too short to carry any canary material: a prefix of `cnry` without its underscore. */
const SHORT_TAIL = /^c(?:n(?:r(?:y)?)?)?$/i

/** The start of a canary, ours or another's, in any case. */
const MARKER = /cnry_/gi

/** Characters that can still be the start of a canary (one canary long, less its last). */
const CONTEXT = CANARY_LENGTH - 1

/**
 * How far the released head of a channel's `text` may grow before it is cut off: so an event's text
 * is appended, and what is held is copied once per this many characters rather than once per event.
 */
const TRIM_AT = 4096

/** One channel as the canary check reads it. */
interface ChannelState {
  /** Where the unreleased text starts in the channel: everything before it has left. */
  base: number
  /**
   * The channel's text from `from` on: at least its last {@link CONTEXT} released characters (where
   * there were that many), then the unreleased ones from `base`. The released ones are scanned again
   * with new text, so a canary whose first letters were released (see `pause`) is still caught when
   * the rest arrives.
   */
  text: string
  from: number
  /** Absolute position from which the text may still be held back (set by each scan). */
  safe: number
  /** Every piece of our own canary and marker, wherever it starts: cut as it is read. */
  pieces: PieceCutter
  /**
   * The text read since the cutter was last fed: fed as it is, not sliced from `text` (a slice of a
   * string built by appending copies all of it first, ~4 KB per event).
   */
  unfed: string
  /** Where a piece of ours could still be forming: held from there (set by each scan). */
  pieceHold: number
  /** The channel's last {@link CONTEXT} characters: where a canary may still be forming. */
  tail: string
  /** Where the last `cnry_` (any case) of the channel starts; −1 while there is none. */
  marker: number
  /**
   * Where the channel's latest whole token of our own (this attempt's canary, the prefix marker)
   * starts, once read: the foreign-content check need not hold back what lies before it. 0: none.
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

/**
 * The canary check.
 *
 * @example
 * const check = new CanaryCheck(ctx, ownTokens(ctx), view, onForeign)
 */
export class CanaryCheck implements Check {
  readonly #ctx: AttemptContext
  readonly #own: readonly string[]
  readonly #view: AnswerView
  readonly #onForeign: (channel: Channel, tenantTag: string | undefined) => Promise<never>
  readonly #channels = new Map<Channel, ChannelState>()
  /** The isolate's prefix markers (see src/core/canary/marker-book.ts), read by `start`. */
  #book: MarkerBook | undefined
  /** Tails of our own canary to cut when their paused channels leave (see `canPause`). */
  #pausedCuts: [Channel, number, number][] = []

  constructor(
    ctx: AttemptContext,
    own: readonly string[],
    view: AnswerView,
    onForeign: (channel: Channel, tenantTag: string | undefined) => Promise<never>,
  ) {
    this.#ctx = ctx
    this.#own = own
    this.#view = view
    this.#onForeign = onForeign
  }

  async start(): Promise<void> {
    this.#book = await markerBook(await this.#ctx.services.key())
  }

  #channel(name: Channel): ChannelState {
    let state = this.#channels.get(name)
    if (!state) {
      state = {
        base: 0,
        text: '',
        from: 0,
        safe: 0,
        pieces: new PieceCutter(this.#own, this.#book, this.#ctx.request.tenant),
        unfed: '',
        pieceHold: 0,
        tail: '',
        marker: -1,
        barrier: 0,
        dirty: false,
      }
      this.#channels.set(name, state)
    }
    return state
  }

  read(name: Channel, text: string, at: number): void {
    const state = this.#channel(name)
    state.text += text
    state.unfed += text
    const probe = state.tail + text
    // Its underscore first: a native search, where the regular expression would cost each event.
    if (probe.indexOf('_') !== -1) {
      MARKER.lastIndex = 0
      for (let m = MARKER.exec(probe); m !== null; m = MARKER.exec(probe)) {
        state.marker = at - state.tail.length + m.index
      }
    }
    state.tail = probe.length <= CONTEXT ? probe : probe.slice(-CONTEXT)
    state.dirty = true
  }

  /**
   * Classifies each channel's unreleased text: our own canary (and fragments of it) is cut, a foreign
   * canary ends the stream; the point where a canary could still be forming bounds release.
   * Synchronous (undefined) when no text holds a `cnry_`: no promise per event on the common path.
   */
  judge(final: boolean): Promise<void> | undefined {
    const slow: [Channel, ChannelState][] = []
    for (const [name, state] of this.#channels) {
      if (!final && !state.dirty) continue
      state.dirty = false
      const cutter = state.pieces
      const found = cutter.feed(state.unfed, state.base)
      state.unfed = ''
      for (const cut of found.cuts) this.#view.cut(name, cut)
      state.pieceHold = final ? endOf(state) : cutter.holdFrom(state.base)
      // A piece of another tenant's marker: a leak, ended before the event that carries it.
      if (found.foreign) return this.#onForeign(name, found.foreign.tenantTag)
      // A `cnry_` in what a scan reads needs the full classification; otherwise only the tail can
      // still be forming one (the same answer as `quickHold` over the whole text, without reading it).
      const quick = state.marker >= contextStart(state) ? undefined : quickHold(state.tail, final)
      if (quick === undefined) slow.push([name, state])
      else state.safe = Math.max(state.base, endOf(state) - state.tail.length + quick)
    }
    return slow.length === 0 ? undefined : this.#classify(slow, final)
  }

  async #classify(slow: [Channel, ChannelState][], final: boolean): Promise<void> {
    const key = await this.#ctx.services.key()
    for (const [name, state] of slow) {
      const start = contextStart(state)
      const lead = state.base - start
      const buffer = state.text.slice(start - state.from)
      const found = await classify({ key, own: this.#own }, name, buffer, final)
      const foreign = found.findings.find((f) => f.kind === 'foreign')
      if (foreign) await this.#onForeign(name, foreign.tenantTag)
      for (const [at, to] of found.cuts) {
        // Positions are in context + text; what lies in the context is out already.
        if (to <= lead) continue
        const cut = { start: state.base + Math.max(0, at - lead), end: state.base + to - lead }
        this.#view.cut(name, cut, true)
      }
      for (const at of found.ownAt) state.barrier = Math.max(state.barrier, start + at)
      state.safe = state.base + Math.max(0, found.holdAt - lead)
    }
  }

  releasableTo(name: Channel): number {
    const state = this.#channel(name)
    return Math.min(state.safe, state.pieceHold)
  }

  /** Where the channel's latest token of our own starts (0: none yet). */
  barrier(name: Channel): number {
    return this.#channels.get(name)?.barrier ?? 0
  }

  /**
   * A channel that ends in "c", "cn", "cnr" or "cnry" ("…is basic") while the answer has moved on to
   * another channel (reasoning done, content flowing) would otherwise hold every later event until the
   * end of the stream. Such a short tail is released: it carries no canary material, and should the
   * channel resume with the rest of a canary, the released tail is still scanned with it (`text`),
   * so the canary is caught before its remaining bytes leave. A tail that is the start of our own
   * canary is cut rather than released; any other `cnry_…` tail keeps holding.
   */
  canPause(names: readonly Channel[]): boolean {
    const cuts: [Channel, number, number][] = []
    for (const name of names) {
      const state = this.#channel(name)
      if (state.safe >= endOf(state)) continue // held for another check only
      const tail = state.text.slice(state.safe - state.from)
      if (SHORT_TAIL.test(tail)) continue
      // The start of our own canary (a quote of the directive cut short): cut, never released.
      const lower = tail.toLowerCase()
      if (!this.#own.some((token) => token.startsWith(lower))) return false
      cuts.push([name, state.safe, endOf(state)])
    }
    this.#pausedCuts = cuts
    return true
  }

  pause(names: readonly Channel[]): void {
    for (const [name, start, end] of this.#pausedCuts) this.#view.cut(name, { start, end })
    this.#pausedCuts = []
    for (const name of names) {
      const state = this.#channel(name)
      state.safe = endOf(state)
      // A possible start of a piece of ours leaves too (at most PIECE_LENGTH − 1 characters): should
      // the channel resume with the rest, the cutter reads them as released and cuts the rest.
      state.pieceHold = endOf(state)
    }
  }

  released(name: Channel, to: number): void {
    const state = this.#channel(name)
    state.base = to
    if (to - state.from > TRIM_AT) {
      const keep = to - CONTEXT
      state.text = state.text.slice(keep - state.from)
      state.from = keep
    }
  }
}
