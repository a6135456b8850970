/**
 * @module A stream's stand-ins: each channel is judged a window at a time — from where the last
 * judgement ended to where a stand-in could still be forming (src/plugins/secrets/hold-back.ts) — so this
 * request's stand-ins are known, with their values, before any of their characters may leave, and
 * another request's stand-in ends the stream before its event does. Never released half-restored.
 */
import type { AnswerView, Channel, Check, Edit, GuardError, StandInFinding } from '../../core'
import { formingFrom } from './hold-back'
import type { Replacement, StandInBook } from './stand-in-book'
import { foreignFinding, jsonChannel, restoredValue } from './stand-in-evidence'

/** What a stream's stand-in check needs to restore and recognise stand-ins. */
export interface StreamSecrets {
  book: StandInBook
  /** Whether the content is JSON (values restored escaped in it; tool arguments always are). */
  jsonContent: boolean
  /** Whether a text occurs in the prompt as sent (a foreign stand-in there is no proof of a leak). */
  inPrompt?: (text: string) => boolean
  /** Called for another request's stand-in; returns the error that ends the stream. */
  onForeign: (finding: StandInFinding, seen: Record<string, string>) => Promise<GuardError>
}

/** Characters kept before the judged point: the candidate patterns' look-behind reads one. */
const LOOK_BEHIND = 8

/**
 * The stand-in check of a streamed answer, per channel. Each channel's unjudged text (and a little
 * before it) is kept here, appended as it comes: judging reads only that, never the channel's whole
 * text (a string built by appending is a rope in V8, and reading a character of it flattens it all —
 * a few kilobytes per event). A channel that has paused (the answer moved on to another) is judged to
 * its end, so it does not hold the others back.
 *
 * @example
 * const check = new StandInCheck(secrets, view)
 * check.read('content', text)
 * const edits = await check.judgeWindow('content', false, seen)
 */
export class StandInCheck implements Check {
  readonly #view: AnswerView
  readonly #secrets: StreamSecrets
  readonly #judged = new Map<Channel, number>()
  /** Per channel, where the last stand-in reported ends: a later window never reads into it again. */
  readonly #covered = new Map<Channel, number>()
  /** Per paused channel, where a stand-in could still have been forming when it paused. */
  readonly #resumeFrom = new Map<Channel, number>()
  readonly #longest: number
  readonly #wide: boolean
  /** Per channel: its text from `from` on (from shortly before the judged point, or the resume point). */
  readonly #windows = new Map<Channel, { text: string; from: number }>()

  constructor(secrets: StreamSecrets, view: AnswerView) {
    this.#secrets = secrets
    this.#view = view
    this.#wide = secrets.book.recognisesPatterns
    this.#longest = secrets.book.longestCandidate
  }

  /** Where the channel is judged up to: its text before this may leave, as far as stand-ins go. */
  judgedTo(name: Channel): number {
    return this.#judged.get(name) ?? 0
  }

  /** Whether the channel has text not judged yet. */
  pending(name: Channel): boolean {
    const window = this.#windows.get(name)
    return window !== undefined && this.judgedTo(name) < window.from + window.text.length
  }

  /** The channel's next text, as it came. */
  read(name: Channel, text: string): void {
    const window = this.#windows.get(name)
    if (window) window.text += text
    else this.#windows.set(name, { text, from: 0 })
  }

  /**
   * Judges the channel's text pushed so far from where it was judged up to where a stand-in could
   * still be forming — the end when `final`. Returns this request's stand-ins as edits (absolute
   * positions); rejects with the stream's ending error on another request's. Synchronous when no
   * candidate needed its MAC checked.
   */
  judgeWindow(
    name: Channel,
    final: boolean,
    seen: () => Record<string, string>,
    paused = false,
  ): Edit[] | Promise<Edit[]> {
    const window = this.#windows.get(name)
    if (!window) return []
    const { text, from } = window
    const judged = this.judgedTo(name)
    const forming = formingFrom(text, this.#longest, this.#wide)
    // A paused channel (the answer moved on to another) is judged to its end, so it never holds the
    // others back; should it resume, it is read again from where a stand-in could have begun, so
    // another request's stand-in split across the pause still ends the stream.
    if (paused && !final && !this.#resumeFrom.has(name)) this.#resumeFrom.set(name, from + forming)
    let start = judged
    const resume = this.#resumeFrom.get(name)
    if (resume !== undefined && !paused) {
      start = Math.max(from, Math.min(resume, judged))
      this.#resumeFrom.delete(name)
    }
    const to = final || paused ? text.length : forming
    if (from + to <= start) return []
    this.#judged.set(name, Math.max(judged, from + to))
    const found = this.#secrets.book.locateNow(text, start - from, to)
    this.#trim(window, Math.min(from + to, this.#resumeFrom.get(name) ?? Number.POSITIVE_INFINITY))
    const json = jsonChannel(name, this.#secrets.jsonContent)
    // Of this request's stand-ins, only those whose first character has not left can be restored.
    const restorable = (own: Replacement[]) =>
      start < judged ? own.filter((r) => from + r.start >= judged) : own
    if (!(found instanceof Promise)) return this.#edits(name, from, restorable(found.own), json)
    return found.then(async ({ own: located, foreign }) => {
      const own = restorable(located)
      const inPrompt = this.#secrets.inPrompt
      const covered = this.#covered.get(name) ?? 0
      const first = foreign.find(
        (f) => from + f.start >= covered && !inPrompt?.(text.slice(f.start, f.end)),
      )
      if (first) throw await this.#secrets.onForeign(foreignFinding(name, first), seen())
      return this.#edits(name, from, own, json)
    })
  }

  /** Drops what lies well before `keepFrom` (a look-behind's worth is kept) once it is worth it. */
  #trim(window: { text: string; from: number }, keepFrom: number): void {
    const cut = keepFrom - LOOK_BEHIND - window.from
    if (cut > 256) {
      window.text = window.text.slice(cut)
      window.from += cut
    }
  }

  /** This request's stand-ins as edits at absolute positions, each read once per channel. */
  #edits(name: Channel, from: number, own: readonly Replacement[], json: boolean): Edit[] {
    const out: Edit[] = []
    for (const r of own) {
      if (from + r.start < (this.#covered.get(name) ?? 0)) continue // read by an earlier window
      this.#covered.set(name, from + r.end)
      out.push({ start: from + r.start, end: from + r.end, value: restoredValue(r, json) })
    }
    return out
  }

  /** Judges every channel with text not judged yet (see {@link judgeWindow}); edits go to the view. */
  judge(final: boolean): Promise<void> | undefined {
    const view = this.#view
    const pending: Promise<void>[] = []
    for (const name of view.channels()) {
      if (!this.pending(name)) continue
      const paused = view.latest !== undefined && view.latest !== name
      const edits = this.judgeWindow(name, final, view.seen, paused)
      const cut = (found: Edit[]) => {
        for (const edit of found) view.cut(name, edit)
      }
      if (edits instanceof Promise) pending.push(edits.then(cut))
      else cut(edits)
    }
    return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined)
  }

  releasableTo(name: Channel): number {
    return this.judgedTo(name)
  }

  /** A paused channel was judged to its end by the last judgement; anything else is still forming. */
  canPause(names: readonly Channel[]): boolean {
    return !names.some((name) => this.pending(name))
  }
}
