/**
 * @module The release stage of a verified stream: whole upstream events, held back just long enough that
 * no canary — ours or another request's — can ever cross to the client, even split across events.
 *
 * Events are released whole and unchanged unless a canary of ours must be cut out of them, so an answer
 * with nothing to strip reaches the client byte for byte as the upstream sent it. An event is held while
 * any channel's text in it could still be the start of a canary; a completed foreign canary ends the
 * stream with a quarantine before its event (or anything after it) is released.
 */

import type { AttemptContext } from './attempt'
import { CANARY_LENGTH, classify, quickHold } from './canary'
import { GuardError } from './errors'
import { redactCanaries } from './evidence'
import { type Channel, type Frame, parseFrame, withTexts } from './stream/frames'
import type { SseEvent } from './stream/sse'
import type { Usage } from './upstream'

/** A held tail too short to carry any canary material: a prefix of `cnry` without its underscore. */
const SHORT_TAIL = /^c(?:n(?:r(?:y)?)?)?$/i

/** A half-open range of a channel's text, in positions counted from the start of the answer. */
interface Range {
  start: number
  end: number
}

/** Per-channel text not yet released, with where it starts in the whole answer. */
interface ChannelState {
  base: number
  text: string
  /** Absolute position from which the text may still be held back (set by each scan). */
  safe: number
  strips: Range[]
  /**
   * The last released characters (at most one canary long): scanned again with new text, so a canary
   * whose first letters were released (see `moveOn`) is still caught when the rest arrives.
   */
  context: string
}

interface Held {
  frame: Frame
  spans: Partial<Record<Channel, Range>>
}

/** What the verification stage hands over: frames already read, and what to cut from them. */
export interface ReleaseStart {
  held: Frame[]
  /** Ranges of our own canary (the echo and its decoration) to remove, per channel. */
  strips: Partial<Record<Channel, Range[]>>
  /** Called when a foreign canary appears after release; returns the error that ends the stream. */
  /**
   * Called once the whole answer was released intact (its end seen, nothing foreign), with the last
   * usage the upstream reported: only such an answer may teach learned state.
   */
  onEnd?: (usage: Usage | undefined) => void
  onForeign: (
    channel: Channel,
    tenantTag: string | undefined,
    seen: Record<string, string>,
  ) => Promise<GuardError>
}

/**
 * The release transform: SSE events in, SSE events out (the held frames first).
 *
 * @example
 * events.pipeThrough(releaseStream(ctx, start)).pipeThrough(sseEncoder())
 */
export function releaseStream(
  ctx: AttemptContext,
  start: ReleaseStart,
): TransformStream<SseEvent, SseEvent> {
  const channels = new Map<Channel, ChannelState>()
  /** Channels with text added since their last scan: only those need scanning again. */
  const dirty = new Set<Channel>()
  const queue: Held[] = []
  let sawDone = false
  let usage: Usage | undefined
  const seen: Partial<Record<Channel, string>> = {}

  const channel = (name: Channel): ChannelState => {
    let state = channels.get(name)
    if (!state) {
      state = { base: 0, text: '', safe: 0, strips: [...(start.strips[name] ?? [])], context: '' }
      channels.set(name, state)
    }
    return state
  }

  const add = (frame: Frame) => {
    if (frame.done) sawDone = true
    if (frame.usage) usage = frame.usage
    const spans: Held['spans'] = {}
    for (const [name, text] of Object.entries(frame.texts) as [Channel, string][]) {
      if (!text) continue
      const state = channel(name)
      const startAt = state.base + state.text.length
      state.text += text
      dirty.add(name)
      spans[name] = { start: startAt, end: startAt + text.length }
      // Bounded copy for the quarantine record, should a foreign canary appear later.
      const prior = seen[name] ?? ''
      if (prior.length < 65_536) seen[name] = prior + text
    }
    queue.push({ frame, spans })
  }

  /**
   * Classifies each channel's unreleased text: our own canary (and fragments of it) become strips, a
   * foreign canary ends the stream; the point where a canary could still be forming bounds release.
   */
  const scan = (final: boolean): Promise<void> | undefined => {
    const slow: [Channel, ChannelState][] = []
    for (const [name, state] of channels) {
      if (!final && !dirty.has(name)) continue
      if (ctx.canary === undefined) {
        state.safe = state.base + state.text.length
        continue
      }
      // The common case, a text with no `cnry_` in it, needs no key and no async classification:
      // it is settled synchronously, without a promise per event.
      const quick = quickHold(state.context + state.text, final)
      if (quick === undefined) slow.push([name, state])
      else state.safe = state.base + Math.max(0, quick - state.context.length)
    }
    dirty.clear()
    return slow.length === 0 ? undefined : classifyAll(slow, final)
  }

  const classifyAll = async (slow: [Channel, ChannelState][], final: boolean): Promise<void> => {
    const key = await ctx.services.key()
    for (const [name, state] of slow) {
      const lead = state.context.length
      const found = await classify(key, ctx.canary, name, state.context + state.text, final)
      const foreign = found.findings.find((f) => f.kind === 'foreign')
      if (foreign) {
        throw await start.onForeign(name, foreign.tenantTag, redactCanaries(seen))
      }
      for (const [at, to] of found.cuts) {
        // Positions are in context + text; what lies in the context is out already.
        if (to <= lead) continue
        const cut = { start: state.base + Math.max(0, at - lead), end: state.base + to - lead }
        if (!state.strips.some((r) => r.start === cut.start && r.end === cut.end))
          state.strips.push(cut)
      }
      state.safe = state.base + Math.max(0, found.holdAt - lead)
    }
  }

  /** Releases queued frames whose every span lies before the point where a canary could still begin. */
  const release = (controller: TransformStreamDefaultController<SseEvent>) => {
    while (queue.length > 0) {
      const next = queue[0]!
      const spans = Object.entries(next.spans) as [Channel, Range][]
      const blocked = spans.filter(([name, span]) => span.end > channel(name).safe)
      if (blocked.length > 0 && !moveOn(blocked)) break
      queue.shift()
      controller.enqueue(emit(next, spans))
      for (const [name, span] of spans) {
        const state = channel(name)
        const released = state.text.slice(0, span.end - state.base)
        state.context = (state.context + released).slice(-(CANARY_LENGTH - 1))
        state.text = state.text.slice(span.end - state.base)
        state.base = span.end
        state.strips = state.strips.filter((r) => r.end > state.base)
      }
    }
  }

  /**
   * A channel that ends in "c", "cn", "cnr" or "cnry" ("…is basic") while the answer has moved on to
   * another channel (reasoning done, content flowing) would otherwise hold every later event until the
   * end of the stream. Such a short tail is released: it carries no canary material, and should the
   * channel resume with the rest of a canary, the released tail is still scanned with it (`context`),
   * so the canary is caught before its remaining bytes leave. A tail that is the start of our own
   * canary is cut rather than released; any other `cnry_…` tail keeps holding.
   */
  const moveOn = (blocked: [Channel, Range][]): boolean => {
    const names = new Set(blocked.map(([name]) => name))
    const others = queue.some((held) =>
      Object.keys(held.spans).some((name) => !names.has(name as Channel)),
    )
    if (!others) return false
    const cuts: [ChannelState, Range][] = []
    for (const [name] of blocked) {
      const state = channel(name)
      const tail = state.text.slice(state.safe - state.base)
      if (SHORT_TAIL.test(tail)) continue
      // The start of our own canary (a quote of the directive cut short): cut, never released.
      if (ctx.canary?.startsWith(tail.toLowerCase())) {
        cuts.push([state, { start: state.safe, end: state.base + state.text.length }])
        continue
      }
      return false
    }
    for (const [state, range] of cuts) state.strips.push(range)
    for (const [name] of blocked) {
      const state = channel(name)
      state.safe = state.base + state.text.length
    }
    return true
  }

  const emit = (held: Held, spans: [Channel, Range][]): SseEvent => {
    const replaced: Partial<Record<Channel, string>> = {}
    let changed = false
    for (const [name, span] of spans) {
      const state = channel(name)
      const original = held.frame.texts[name] ?? ''
      const cut = cutRanges(original, span.start, state.strips)
      if (cut !== original) {
        replaced[name] = cut
        changed = true
      }
    }
    return changed ? withTexts(held.frame, replaced) : held.frame.event
  }

  return new TransformStream<SseEvent, SseEvent>({
    async start(controller) {
      for (const frame of start.held) add(frame)
      const final = start.held.some((f) => f.done)
      await scan(final)
      release(controller)
    },
    transform(event, controller) {
      const frame = parseFrame(event)
      add(frame)
      // Nothing follows [DONE], so no canary can still be completing: release everything.
      const pending = scan(frame.done)
      if (pending === undefined) {
        release(controller)
        return
      }
      return pending.then(() => release(controller))
    },
    async flush(controller) {
      await scan(true)
      release(controller)
      if (!sawDone) {
        // Every byte released so far was verified; the client still must not take a cut answer as whole.
        throw new GuardError(
          'upstream_error',
          'The upstream stream ended before it was complete; the answer is truncated.',
        )
      }
      start.onEnd?.(usage)
    },
  })
}

/** `text` (which starts at `offset` in its channel) with every overlapping range removed. */
function cutRanges(text: string, offset: number, ranges: Range[]): string {
  let out = ''
  let at = 0
  for (const r of [...ranges].sort((a, b) => a.start - b.start)) {
    const s = Math.max(0, r.start - offset)
    const e = Math.min(text.length, r.end - offset)
    if (e <= 0 || s >= text.length || e <= s) continue
    if (s > at) out += text.slice(at, s)
    at = Math.max(at, e)
  }
  return out + text.slice(at)
}
