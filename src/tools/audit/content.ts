/**
 * @module Foreign content in a logged answer: the answer's channels are shingled and winnowed exactly
 * as the guard does (src/plugins/foreign-content), each selection looked up in the audit's {@link ContentIndex},
 * and runs of consecutive selections sent by one other principal (tenant, or request when the log
 * names no tenant) are collected with the requests they came from and the quoted text.
 *
 * Every principal with at least one matched selection is returned, as a candidate: a run of
 * selections is not proof (k consecutive selections can sit in a span much shorter than the
 * {@link minimumSpan} they guarantee), so the audit verifies candidates exactly against the source
 * request's whole prompt ({@link exactPassages}) and measures the passage in units.
 */
import {
  type FingerprintKey,
  type FingerprintParams,
  fingerprintOf,
  minimumSpan,
  Shingler,
  Winnower,
} from '../../plugins/foreign-content'
import type { ContentIndex } from './content-index'

/** The answer being scanned. */
interface AnswerSelf {
  /** Its own index reference (−1 when its prompt was not indexed). */
  ref: number
  principal: string
  /** When the answer was complete (ms), NaN when unknown: later requests cannot be its source. */
  endMs: number
  /** Sources sent longer than this before the answer are ignored (ms; Infinity: no limit). */
  windowMs: number
}

/** One quoted passage: a run of consecutive selections of one other principal. */
interface QuotedRun {
  channel: string
  /** Selections in the run (distinct fingerprints). */
  length: number
  /** Offsets of the run in the channel's text. */
  start: number
  end: number
}

/** Evidence that an answer carries another principal's prompt text. */
export interface ForeignContentEvidence {
  principal: string
  /** Source requests (index refs), the one most matched first. */
  sources: { ref: number; matches: number }[]
  /** The longest run. */
  run: number
  /** Separate runs of at least 2. */
  passages: number
  /** Distinct fingerprints matched in all. */
  matches: number
  /** The longest run's place. */
  longest: QuotedRun
  /** The live guard's rule holds: a run of at least k (a single quote of minimumSpan units always makes one). */
  guardRule: boolean
}

interface Open {
  principal: string
  fps: Set<number>
  start: number
  end: number
  refs: number[]
}

interface Tally {
  runs: QuotedRun[]
  matches: Set<number>
  refs: Map<number, number>
}

/** What an answer is scanned against: the prompts' index, the key and parameters, whose answer it is. */
interface ForeignScan {
  index: ContentIndex
  key: FingerprintKey
  params: FingerprintParams
  self: AnswerSelf
}

/**
 * Scans an answer's channels against the index. `own` (the answer's own prompt print) removes text
 * the request itself sent; without it only the request's own fingerprints and principal do.
 *
 * @example
 * const found = scanForeign({ index, key, params: FINGERPRINT_DEFAULTS, self }, { content: text })
 */
export function scanForeign(
  scan: ForeignScan,
  answer: Readonly<Record<string, string>>,
  own?: { contains(hash: number): boolean },
): ForeignContentEvidence[] {
  const tallies = new Map<string, Tally>()
  for (const [channel, text] of Object.entries(answer)) {
    scanChannel(scan, { channel, text }, own, tallies)
  }
  const found: ForeignContentEvidence[] = []
  for (const [principal, tally] of tallies) {
    const runs = tally.runs.filter((r) => r.length >= 2)
    const longest = tally.runs.reduce<QuotedRun | undefined>(
      (best, r) => (best === undefined || r.length > best.length ? r : best),
      undefined,
    )
    if (longest === undefined) continue
    found.push({
      principal,
      sources: [...tally.refs.entries()]
        .map(([ref, matches]) => ({ ref, matches }))
        .sort((a, b) => b.matches - a.matches || a.ref - b.ref),
      run: longest.length,
      passages: runs.length,
      matches: tally.matches.size,
      longest,
      guardRule: longest.length >= scan.params.k,
    })
  }
  return found.sort((a, b) => b.run - a.run || b.matches - a.matches)
}

function scanChannel(
  { index, key, params, self }: ForeignScan,
  { channel, text }: { channel: string; text: string },
  own: { contains(hash: number): boolean } | undefined,
  tallies: Map<string, Tally>,
): void {
  const ring = params.w + 1
  const starts = new Float64Array(ring)
  const ends = new Float64Array(ring)
  const shingler = new Shingler(key, { n: params.n })
  const winnow = new Winnower(params.w)
  let open: Open | undefined
  const close = (): void => {
    if (open === undefined) return
    let tally = tallies.get(open.principal)
    if (tally === undefined) {
      tally = { runs: [], matches: new Set(), refs: new Map() }
      tallies.set(open.principal, tally)
    }
    tally.runs.push({ channel, length: open.fps.size, start: open.start, end: open.end })
    for (const fp of open.fps) tally.matches.add(fp)
    for (const ref of open.refs) tally.refs.set(ref, (tally.refs.get(ref) ?? 0) + 1)
    open = undefined
  }
  const select = (): void => {
    const hash = winnow.selectedHash
    const fp = fingerprintOf(key, hash)
    // Outside the index's sample: unknown, so it neither extends nor ends a run.
    if (!index.sampled(fp)) return
    const source = sourceOf(index, self, fp, own?.contains(hash) === true)
    if (source === undefined || source.principal !== open?.principal) close()
    if (source === undefined) return
    const at = winnow.selectedIndex % ring
    const run: Open = open ?? {
      principal: source.principal,
      fps: new Set(),
      start: starts[at]!,
      end: ends[at]!,
      refs: [],
    }
    open = run
    run.fps.add(fp)
    run.end = Math.max(run.end, ends[at]!)
    run.refs.push(...source.refs)
  }
  shingler.read(text, true, (hash, start, end, i) => {
    starts[i % ring] = start
    ends[i % ring] = end
    if (winnow.push(hash, i)) select()
  })
  if (winnow.end()) select()
  close()
}

/** The other principal a selection belongs to, and its requests, or undefined. */
function sourceOf(
  index: ContentIndex,
  self: AnswerSelf,
  fp: number,
  inOwnPrompt: boolean,
): { principal: string; refs: number[] } | undefined {
  if (inOwnPrompt) return undefined
  const owners = index.lookup(fp)
  if (owners === undefined || owners.common) return undefined
  if (owners.first === self.ref || owners.second === self.ref) return undefined
  const refs: number[] = []
  let principal: string | undefined
  for (const ref of [owners.first, owners.second]) {
    const request = ref >= 0 ? index.requests[ref] : undefined
    if (request === undefined) continue
    if (request.principal === self.principal) return undefined
    // A request sent after the answer was complete cannot have left pages it read.
    if (request.startMs > self.endMs + 1000) continue
    if (self.endMs - request.startMs > self.windowMs) continue
    principal = request.principal
    refs.push(ref)
  }
  return principal === undefined ? undefined : { principal, refs }
}

/**
 * The shortest single quote sure to be evidence at these parameters (the guard's figure, k·w + n − 1),
 * and the audit's floor for proof.
 *
 * @example
 * guaranteedSpan({ n: 7, w: 4, k: 6 }) // 30
 */
export function guaranteedSpan(params: FingerprintParams): number {
  return minimumSpan(params)
}

/** A passage of an answer found verbatim in one source request's prompt (and not in its own). */
export interface ExactPassage {
  channel: string
  /** Units shared, consecutive. */
  units: number
  /**
   * Of them, the units of no common text: not sent by another principal too, not public background,
   * not the model's own phrasing (written in three answers, or before the source was sent).
   */
  privateUnits: number
  start: number
  end: number
}

/** Which answer shingles are in the answer's own prompt, per channel (by shingle index). */
export type OwnMask = Record<string, Uint8Array>

/**
 * Marks each channel's shingles that its own prompt contains (computed while the own prompt's print
 * is at hand, so the exact pass needs no copy of the own prompt).
 *
 * @example
 * const mask = ownMask(key, params, answer, printPrompt(key, ownTexts, params))
 */
export function ownMask(
  key: FingerprintKey,
  params: FingerprintParams,
  answer: Readonly<Record<string, string>>,
  own: { contains(hash: number): boolean } | undefined,
): OwnMask {
  const mask: OwnMask = {}
  for (const [channel, text] of Object.entries(answer)) {
    const flags: number[] = []
    new Shingler(key, { n: params.n }).read(text, true, (hash) => {
      flags.push(own?.contains(hash) ? 1 : 0)
    })
    mask[channel] = Uint8Array.from(flags)
  }
  return mask
}

/**
 * The winnowed fingerprints of an answer's channels that its own prompt does not hold (`own`: every
 * shingle of it): what the audit's answer index counts, so that text a model writes to many
 * principals is known as its own phrasing, and an answer quoting its own prompt adds nothing.
 *
 * @example
 * for (const fp of answerSelections(key, params, answer, print)) answers.add(fp, ref)
 */
export function answerSelections(
  key: FingerprintKey,
  params: FingerprintParams,
  answer: Readonly<Record<string, string>>,
  own: { contains(hash: number): boolean } | undefined,
): number[] {
  const out: number[] = []
  for (const text of Object.values(answer)) {
    const shingler = new Shingler(key, { n: params.n })
    const winnow = new Winnower(params.w)
    const select = (): void => {
      const hash = winnow.selectedHash
      if (own?.contains(hash) !== true) out.push(fingerprintOf(key, hash))
    }
    shingler.read(text, true, (hash, _start, _end, i) => {
      if (winnow.push(hash, i)) select()
    })
    if (winnow.end()) select()
  }
  return out
}

/** What {@link exactPassages} measures against. */
interface PassageContext {
  /** The prompts' index: selections of the source request anchor a passage, common ones cut it. */
  index: ContentIndex
  /**
   * The answers' index (timed, common at three answers): text the model wrote in three answers,
   * or before the source was sent, makes a passage not private.
   */
  answers?: ContentIndex
  key: FingerprintKey
  params: FingerprintParams
}

/**
 * The passages of an answer that occur verbatim in a source prompt (`source.contains`: every shingle
 * of it) and not in the answer's own prompt, with at least `minUnits` units. A passage counts only
 * when a winnowed selection inside it is attributed to `ref` in the index (it is anchored on the
 * evidence that made the request a candidate). Each passage says how many of its units are private:
 * the units of a selection common in the prompts' index (sent by two principals, or public
 * background) or in the answers' index (the model's own phrasing) are not, so common words around
 * private values (a shared template's rows, a stock phrase beside a quote) leave the values' count.
 *
 * @example
 * const source = printPrompt(key, texts, params)
 * const passages = exactPassages(ctx, answer, mask, { ref, source, minUnits: 10 })
 */
export function exactPassages(
  ctx: PassageContext,
  answer: Readonly<Record<string, string>>,
  mask: OwnMask,
  {
    ref,
    source,
    minUnits,
  }: { ref: number; source: { contains(hash: number): boolean }; minUnits: number },
): ExactPassage[] {
  const sourceStartMs = ctx.index.requests[ref]?.startMs ?? Number.NaN
  const out: ExactPassage[] = []
  for (const [channel, text] of Object.entries(answer)) {
    const read = readChannel(ctx, text, mask[channel], { ref, source, sourceStartMs })
    out.push(...sharedRuns(channel, read, ctx.params.n, minUnits))
  }
  return out.sort((a, b) => b.privateUnits - a.privateUnits || b.units - a.units)
}

/** One answer channel's shingles: which the source shares, where each is, and its selections. */
interface ChannelRead {
  shared: boolean[]
  starts: number[]
  ends: number[]
  /** Shingle indexes of selections attributed to the source request. */
  anchors: number[]
  /** Shingle indexes of common selections (two principals, background, the model's phrasing). */
  commons: number[]
}

function readChannel(
  ctx: PassageContext,
  text: string,
  own: Uint8Array | undefined,
  of: { ref: number; source: { contains(hash: number): boolean }; sourceStartMs: number },
): ChannelRead {
  const { index, answers, key, params } = ctx
  const shingler = new Shingler(key, { n: params.n })
  const winnow = new Winnower(params.w)
  const read: ChannelRead = { shared: [], starts: [], ends: [], anchors: [], commons: [] }
  const select = (): void => {
    const at = winnow.selectedIndex
    const fp = fingerprintOf(key, winnow.selectedHash)
    const owners = index.sampled(fp) ? index.lookup(fp) : undefined
    const written = answers?.sampled(fp) ? answers.lookup(fp) : undefined
    // The model's own phrasing: written in three answers, or written before the source was sent.
    const phrasing =
      written !== undefined && (written.common || written.earliestMs < of.sourceStartMs)
    if (owners?.common || phrasing) read.commons.push(at)
    else if (owners && (owners.first === of.ref || owners.second === of.ref)) read.anchors.push(at)
  }
  shingler.read(text, true, (hash, s, e, i) => {
    read.shared[i] = own?.[i] !== 1 && of.source.contains(hash)
    read.starts[i] = s
    read.ends[i] = e
    if (winnow.push(hash, i)) select()
  })
  if (winnow.end()) select()
  return read
}

/** The runs of shared shingles with an anchor and at least `minUnits` units, as passages. */
function sharedRuns(
  channel: string,
  read: ChannelRead,
  n: number,
  minUnits: number,
): ExactPassage[] {
  const { shared, starts, ends } = read
  // Units (by index: shingle i covers units i … i + n − 1) of common selections.
  const common = new Uint8Array(shared.length + n)
  for (const at of read.commons) common.fill(1, at, at + n)
  const anchored = new Uint8Array(shared.length)
  for (const at of read.anchors) anchored[at] = 1
  const out: ExactPassage[] = []
  let first = -1
  let hasAnchor = false
  for (let i = 0; i <= shared.length; i++) {
    if (i < shared.length && shared[i]) {
      if (first < 0) first = i
      if (anchored[i] === 1) hasAnchor = true
      continue
    }
    const units = i - 1 - first + n
    if (first >= 0 && hasAnchor && units >= minUnits) {
      let privateUnits = 0
      for (let u = first; u < first + units; u++) if (common[u] !== 1) privateUnits++
      out.push({ channel, units, privateUnits, start: starts[first]!, end: ends[i - 1]! })
    }
    first = -1
    hasAnchor = false
  }
  return out
}
