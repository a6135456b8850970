/**
 * @module Pieces of the guard's own secrets in an answer: every run of {@link PIECE_LENGTH} or more
 * characters of this request's canary or its tenant's prefix marker is cut, wherever it starts, in any
 * case, with or without its `cnry_`; and a piece of another tenant's marker (one the isolate minted,
 * see ./marker-book.ts) is reported as a leak.
 *
 * Why pieces: the marker opens every prompt of a prefix-isolated tenant and the canary closes it, so a
 * model quoting its prompt from the second character on, or an answer built from stale pages, carries
 * them without the prefix the whole-token scan (./scan.ts) looks for (as in `nry_y5np…`,
 * `5nptpffn4qc3…`). Both are secrets of the guard: the client must never learn them.
 *
 * How: a transducer over the text as it will be released. Each character that completes a window of
 * {@link PIECE_LENGTH} output characters equal to a substring of one of the secrets has that window cut,
 * and so does each next character while the last {@link PIECE_LENGTH} of the piece stay a substring
 * (a piece is cut whole, not in windows). The window is read over the output, after earlier cuts, so
 * text around a cut cannot join into a new piece. Characters already released (a stream's) are never
 * cut: only the window's unreleased ones go, so the released text never holds a whole window.
 *
 * Cost: a table lookup per character; a substring test only inside a run of 8 canary characters
 * (`[0-9a-z_]`, rare in prose), and a map lookup per character only inside a run of 12 body
 * characters while the book holds markers. Nothing depends on the prompt's length.
 */
import { type BookEntry, FOREIGN_ANCHOR, type MarkerBook } from './marker-book'

/** The shortest piece of our own secrets that is never released. */
export const PIECE_LENGTH = 8

/**
 * The shortest suffix a stream holds back as the possible start of a piece. A lone last character
 * that occurs in a secret leaves: ~30 of the 32 letters and digits do, so holding it would delay
 * most events of every stream by one event. If a piece does start there, that one character has left
 * and the rest of the piece is cut (see the module comment): no 8 characters ever leave.
 */
const HELD_FROM = 2

/** Output characters of the current run kept: a window, and a window's worth before it. */
const RUN_KEPT = 2 * PIECE_LENGTH - 1

/** Character classes by lowercased code: in a secret (`[0-9a-z_]` less i l o u), in a body. */
const OWN = 1
const BODY = 2
const CLASS = new Uint8Array(128)
for (const c of '0123456789abcdefghjkmnpqrstvwxyz') CLASS[c.charCodeAt(0)] = OWN | BODY
CLASS['_'.charCodeAt(0)] = OWN

/** The class of a UTF-16 code unit, upper case read as lower (0: in no secret). */
function classOf(code: number): number {
  const lower = code >= 65 && code <= 90 ? code | 32 : code
  return lower < 128 ? CLASS[lower]! : 0
}

/** A half-open range of raw positions to cut. */
export interface PieceCut {
  start: number
  end: number
}

/** What one feed found. */
export interface PieceScan {
  /** Ranges (raw positions) to cut: pieces of our own secrets. */
  cuts: PieceCut[]
  /** Another tenant's marker a piece of which the text holds: a leak. */
  foreign?: BookEntry
}

/**
 * The transducer of one channel: fed its text in order, it says what to cut and, for a stream, from
 * where the text must wait for more.
 *
 * @example
 * const cutter = new PieceCutter([canary, marker], book, 'acme')
 * const { cuts, foreign } = cutter.feed(delta, released)
 * const holdAt = cutter.holdFrom(released)
 */
export class PieceCutter {
  readonly #own: readonly string[]
  readonly #book: MarkerBook | undefined
  readonly #tenant: string | undefined
  /** The current run of output characters that can belong to a secret (lowercase), and where. */
  #run = ''
  #at: number[] = []
  /** The last PIECE_LENGTH − 1 characters of the piece being cut; '' when none is. */
  #piece = ''
  /** The current run of body characters of the raw text (lowercase), at most FOREIGN_ANCHOR. */
  #body = ''
  /** The raw position after the last character fed. */
  #end = 0

  constructor(own: readonly string[], book?: MarkerBook, tenant?: string) {
    this.#own = own.map((token) => token.toLowerCase())
    this.#book = book
    this.#tenant = tenant
  }

  /** The raw position after the last character fed. */
  get end(): number {
    return this.#end
  }

  /**
   * Reads the next `text` of the channel; `released` is where the unreleased text starts (nothing
   * before it can be cut any more).
   *
   * @example
   * const { cuts } = new PieceCutter([canary]).feed(answer, 0)
   */
  feed(text: string, released: number): PieceScan {
    const cuts: PieceCut[] = []
    let foreign: BookEntry | undefined
    const book = this.#book !== undefined && this.#book.size > 0 ? this.#book : undefined
    const from = this.#end
    for (let i = 0; i < text.length; i++) {
      let code = text.charCodeAt(i)
      if (code >= 65 && code <= 90) code |= 32
      const kind = code < 128 ? CLASS[code]! : 0
      if (kind !== 0 && this.#run === '' && this.#piece === '') {
        const end = shortRunEnd(text, i)
        if (end !== undefined) {
          i = end - 1
          continue
        }
      }
      if (kind === 0) {
        this.#piece = ''
        this.#body = ''
        if (this.#run !== '') {
          this.#run = ''
          this.#at = []
        }
        continue
      }
      const char = code === text.charCodeAt(i) ? text[i]! : String.fromCharCode(code)
      const pos = from + i
      if (book && (kind & BODY) !== 0) {
        this.#body =
          this.#body.length < FOREIGN_ANCHOR ? this.#body + char : this.#body.slice(1) + char
        if (foreign === undefined && this.#body.length === FOREIGN_ANCHOR) {
          foreign = this.#foreign(book.find(this.#body))
        }
      } else this.#body = ''
      if (this.#piece !== '') {
        const next = this.#piece + char
        if (this.#covered(next)) {
          addCut(cuts, pos)
          this.#piece = next.slice(1)
          continue
        }
        this.#piece = ''
      }
      this.#run += char
      this.#at.push(pos)
      if (this.#run.length > RUN_KEPT) {
        this.#run = this.#run.slice(1)
        this.#at.shift()
      }
      if (this.#run.length < PIECE_LENGTH) continue
      const window = this.#run.slice(-PIECE_LENGTH)
      if (this.#covered(window)) this.#cutWindow(window, cuts, released)
    }
    this.#end = from + text.length
    return foreign ? { cuts, foreign } : { cuts }
  }

  /** Cuts the run's last PIECE_LENGTH characters, a piece: unreleased ones go, released ones stay. */
  #cutWindow(window: string, cuts: PieceCut[], released: number): void {
    const first = this.#run.length - PIECE_LENGTH
    let run = this.#run.slice(0, first)
    const at = this.#at.slice(0, first)
    for (let k = first; k < this.#run.length; k++) {
      const p = this.#at[k]!
      if (p >= released) addCut(cuts, p)
      else {
        run += this.#run[k]
        at.push(p)
      }
    }
    this.#run = run
    this.#at = at
    this.#piece = window.slice(1)
  }

  /**
   * Where a stream must hold its text from (the end when nothing is held): the longest suffix of the
   * output, of {@link HELD_FROM} to {@link PIECE_LENGTH} − 1 characters, that could still grow into a
   * piece. Not called at the end of an answer: nothing can follow then.
   *
   * @example
   * state.pieceHold = cutter.holdFrom(state.base)
   */
  holdFrom(released: number): number {
    const run = this.#run
    // Every longer suffix ends in the shortest: where that is no substring, none is (most events).
    if (run.length < HELD_FROM || !this.#covered(run.slice(-HELD_FROM))) return this.#end
    for (let length = Math.min(PIECE_LENGTH - 1, run.length); length > HELD_FROM; length--) {
      const suffix = run.slice(-length)
      if (this.#covered(suffix)) return Math.max(released, this.#at[run.length - length]!)
    }
    return Math.max(released, this.#at[run.length - HELD_FROM]!)
  }

  /** Whether `text` (lowercase) is a substring of one of our secrets. */
  #covered(text: string): boolean {
    for (const token of this.#own) if (token.includes(text)) return true
    return false
  }

  /** A book entry that is another tenant's marker (ours is cut, never evidence). */
  #foreign(entry: BookEntry | undefined): BookEntry | undefined {
    if (entry === undefined || entry.tenant === this.#tenant) return undefined
    return this.#own.includes(entry.marker) ? undefined : entry
  }
}

/** Adds one position to `cuts`, extending the last range when it ends there. */
function addCut(cuts: PieceCut[], pos: number): void {
  const last = cuts[cuts.length - 1]
  if (last !== undefined && last.end === pos) last.end++
  else cuts.push({ start: pos, end: pos + 1 })
}

/**
 * Where a run of secret characters starting at `i` ends, when it has fewer than PIECE_LENGTH of them
 * and ends inside this text: such a run is no piece and leaves nothing to hold (its end resets every
 * state), and prose is mostly such runs, so they are stepped over whole rather than a character at a
 * time. Undefined otherwise.
 */
function shortRunEnd(text: string, i: number): number | undefined {
  let j = i + 1
  while (j < text.length && j - i < PIECE_LENGTH && classOf(text.charCodeAt(j)) !== 0) j++
  return j < text.length && j - i < PIECE_LENGTH ? j : undefined
}
