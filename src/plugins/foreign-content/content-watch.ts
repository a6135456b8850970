/**
 * @module The answer side: scans one answer's channels (reasoning, content, tool arguments), streamed
 * or whole, for winnowed shingles that another tenant sent recently and this request's own prompt
 * does not contain. Each channel is shingled and winnowed like a prompt, so a leaked span shares with
 * its source every window that lies inside it. Evidence is a **run**: k distinct fingerprints of the
 * answer's own selection, all sent by one other tenant, with nothing but common text (several
 * senders', public, the model's own words) between them. A span of
 * {@link minimumSpan} units always makes one (the selections of windows inside a shared span are
 * consecutive: no other selection falls between them); matches scattered over an answer — chance
 * n-grams, or phrases a tenant stuffed into its prompts hoping another's answer uses them — do not.
 * O(new units) per event: nothing is rescanned.
 */
import { type FingerprintKey, fingerprintOf } from './hash'
import type { PrintParams, PromptPrint } from './prompt-print'
import { SelectionList } from './selection-list'
import { Shingler } from './shingler'
import type { FingerprintLookup } from './table'
import { MIN_UNIT_WEIGHT, WORD_WEIGHT } from './units'
import { Winnower } from './winnow'

/** Shingle size, window, and the run of foreign fingerprints that makes evidence. */
export interface FingerprintParams extends PrintParams {
  /** Consecutive distinct fingerprints of one other tenant needed for evidence. */
  k: number
}

/** Evidence that an answer carries another tenant's recent prompt text. */
export interface ForeignContent {
  /** The tenant whose prompt it carries. */
  source: string
  /** The longest run of consecutive distinct fingerprints of that tenant (≥ k). */
  run: number
  /** Distinct fingerprints of that tenant's prompts matched anywhere in the answer. */
  matches: number
  /** The channel of that run. */
  channel: string
  /** Where the run's earliest fingerprint not yet excused starts in the channel's text. */
  from: number
  /** Where the run's head ends: its first fingerprints' shingles (see {@link ContentWatch.excuse}). */
  headEnd: number
  /** The fingerprints of the head: a second opinion's cue holds them, so the model cannot recall them. */
  head: number[]
  /** Every fingerprint of the run, in the order of their places. */
  prints: number[]
}

/** Where one selection that matched another tenant lies in its channel's text. */
type ForeignMatch = { fingerprint: number; from: number; end: number }

/** What a {@link ContentWatch} needs. */
export interface ContentWatchOptions {
  key: FingerprintKey
  table: FingerprintLookup
  model: string
  /** The tenant the answer is for: its own prompts are never evidence. */
  tenant: string
  /** This request's prompt: text it contains is never evidence. */
  own: Pick<PromptPrint, 'contains'>
  /** Time of the lookups (ms): a clock, or a fixed time for the whole answer. */
  now: number | (() => number)
  params: FingerprintParams
  /**
   * The table key under which released answers of this model are recorded (see {@link answersOf}):
   * text the model has already said to a tenant other than a source is something the model says, not
   * evidence that the source's pages were read. Absent: answers are not consulted.
   */
  answers?: string
  /**
   * Fingerprints of public texts (the built-in background, the operator's `publicTexts`): never
   * evidence, whoever sent them (see `printPrompt(…).selected` of those texts). Asked only about a
   * selection another tenant sent, or while a run is under way, so a set printed on first use costs
   * nothing to answers that match nobody.
   */
  publicPrints?: Pick<ReadonlySet<number>, 'has'>
}

/**
 * Lookups that share one reading of a clock `now`: a clock read cost as much as a lookup, and the
 * table's visibility is counted in seconds of an hour-long ttl — the 64 lookups of
 * ~160 words of an answer are seconds apart at most.
 */
const LOOKUPS_PER_CLOCK = 64

/** The most fingerprints an answer keeps for teaching (see {@link ContentWatch.selections}). */
const MAX_SELECTIONS = 8_192

/**
 * The table key of a model's released answers, beside its prompts' (the model's own name).
 *
 * @example
 * table.add(answersOf(model), tenant, watch.selections(), now)
 */
export function answersOf(model: string): string {
  return `answers\u0000${model}`
}

/**
 * The fewest units a single quoted span needs to be sure of evidence: k disjoint windows of w
 * shingles, each shingle n units.
 *
 * @example
 * minimumSpan({ n: 5, w: 6, k: 3 }) // 22
 */
export function minimumSpan(params: FingerprintParams): number {
  return params.k * params.w + params.n - 1
}

/**
 * The least a run must cover, from its first selected shingle's first unit to its latest's last, to
 * be evidence: (k − 2)·w + n + 1 units of a spaced script's weight (Han and kana characters weigh a
 * half, other spaceless scripts' a third: `unitWeight`). A single span of {@link minimumSpan} units
 * always covers it (its k windows' selections lie at most w − 1 shingles from either end), so the
 * guarantee stands; what it removes is k chance or stock selections packed into a shorter phrase — a
 * code preamble of 21 units that one tenant pasted, a 45-character Japanese sign-off — which the
 * model then says to everyone and which, withheld each time, never becomes its known words.
 *
 * @example
 * spanFloor({ n: 7, w: 4, k: 6 }) // 24
 */
export function spanFloor(params: FingerprintParams): number {
  return Math.max(1, (params.k - 2) * params.w + params.n + 1)
}

/**
 * Units a stream must hold back (besides any unit still open) so that a span of {@link minimumSpan}
 * units reaches its evidence before its first unit is released: the evidence comes with its last
 * unit, when the other minimumSpan − 1 are still held. Counted in weight (`unitWeight`): in Han or
 * kana text twice as many characters, in Thai three times; a span of minimumSpan words' weight
 * covers k windows and {@link spanFloor} whatever its scripts.
 *
 * @example
 * holdBackUnits({ n: 5, w: 6, k: 3 }) // 21
 */
export function holdBackUnits(params: FingerprintParams): number {
  return minimumSpan(params) - 1
}

/**
 * Complete units a stream holds back while none of the last {@link holdBackUnits} matched another
 * tenant: one winnowing window (w + n − 1 units) less its first unit. A leaked span still short of its
 * evidence that holds an earlier unit holds the latest whole window too, whose selection is then the
 * source's own (see {@link ContentWatch.safeFrom}).
 *
 * @example
 * quietHoldBackUnits({ n: 7, w: 4, k: 4 }) // 9
 */
export function quietHoldBackUnits(params: PrintParams): number {
  return params.w + params.n - 2
}

interface ChannelState {
  shingler: Shingler
  /** The last shingles' start and end offsets, by index modulo {@link RECENT} (for the selected one). */
  recent: Int32Array
  /** The latest selections that matched another tenant, oldest first (at most {@link KEEP_MATCHES}). */
  matches: ForeignMatch[]
  winnow: Winnower
  final: boolean
  /** Where the latest shingle read ends (a selection is one of the last few shingles). */
  lastEnd: number
  /** Where the latest shingle ended when a selection matched another tenant's prompt; −1: none yet. */
  foreignEnd: number
  /** The shingle index of the latest selection that matched another tenant's prompt; −1: none yet. */
  foreignShingle: number
  /**
   * Where the first shingle of the latest episode of matches starts (matches each within the long
   * hold of the one before): held whole while the episode lasts; −1: none yet.
   */
  episodeFrom: number
  /** The furthest {@link ContentWatch.safeFrom} so far: a later match does not take back a release. */
  safe: number
  /** Per tenant, its current run: its distinct fingerprints since the run began, and where it began. */
  runs: Map<string, Run>
}

/**
 * One tenant's run in a channel: the distinct fingerprints of its selections since the run began
 * (only common text between them), and where the first of those shingles starts in the text.
 */
interface Run {
  prints: Set<number>
  /** Where each of its fingerprints' shingles starts and ends. */
  at: Map<number, { from: number; end: number }>
  from: number
  /** The weight of the units before its first selected shingle (see `unitWeight`). */
  fromWeight: number
  /** The weight of the units from its first selected shingle to the end of its latest. */
  span: number
}

/** Shingles whose offsets a channel remembers: a selection is one of the last w (≤ 16). A power of two. */
const RECENT = 16

/** Foreign matches a channel remembers for the cue of a second opinion (see `foreignMatches`). */
const KEEP_MATCHES = 512

/**
 * Fingerprints of a run given to a second opinion as the end of its cue, by default: enough for the
 * model to tell which of the places a text repeats a phrase it is at, far short of evidence (at most
 * k − 2 are ever given).
 */
const HEAD_PRINTS = 2

/** A run that reached evidence, kept after it ends so an excusal can revisit it. */
interface Reached {
  source: string
  channel: string
  run: Run
}

/**
 * A selection that is common text — sent by several tenants, declared public, or said by the model to
 * others: it neither counts for a run nor ends one. Templated private text (rows, logs, forms) is
 * common words around private values; the values' selections keep one run across the common words
 * between them.
 */
const COMMON = Symbol('common')

/** A selection nobody else sent, or this request's own text: it ends every run. */
const NOBODY: readonly string[] = []

/**
 * Watches one answer.
 *
 * @example
 * const watch = new ContentWatch({ key, table, model, tenant, own: print, now: Date.now, params })
 * watch.push('content', delta, false)
 * if (watch.evidence()) quarantine()
 * else release(text.slice(released, watch.safeFrom('content')))
 */
export class ContentWatch {
  private readonly channels = new Map<string, ChannelState>()
  private readonly matched = new Map<string, Set<number>>()
  /** {@link minimumSpan} in weight (a word of a spaced script weighs `WORD_WEIGHT`). */
  private readonly spanWeight: number
  /** Unit starts a channel remembers: the most units a long hold can be, and a window before. */
  private readonly keepStarts: number
  private readonly quietHoldBack: number
  /** The least weight a run must cover to be evidence: see {@link spanFloor}. */
  private readonly floor: number
  private readonly selected = new SelectionList(MAX_SELECTIONS)
  private best: Omit<ForeignContent, 'from' | 'headEnd' | 'head' | 'prints'> | undefined
  /** Runs that reached k, in the order they did. */
  private readonly reached: Reached[] = []
  /** Fingerprints the model recalled on its own from a clean cue: its words, never evidence. */
  private readonly excused = new Set<number>()
  /** The clock's last reading, and the lookups made with it (see {@link LOOKUPS_PER_CLOCK}). */
  private at = 0
  private lookups = LOOKUPS_PER_CLOCK

  /** The channel being read by {@link push}: its shingles go to {@link onShingle}. */
  private reading: ChannelState | undefined
  private readingChannel = ''
  /** One function for every push, not a fresh closure per event. */
  private readonly onShingle = (hash: number, start: number, end: number, index: number): void => {
    const current = this.reading!
    current.lastEnd = end
    const slot = (index & (RECENT - 1)) * 2
    current.recent[slot] = start
    current.recent[slot + 1] = end
    if (current.winnow.push(hash, index)) this.check(current, this.readingChannel)
  }

  constructor(private readonly options: ContentWatchOptions) {
    const { n, w, k } = options.params
    if (!Number.isInteger(k) || k < 1) throw new Error('ContentWatch: k must be a positive integer')
    const holdBack = holdBackUnits({ n, w, k })
    this.spanWeight = minimumSpan({ n, w, k }) * WORD_WEIGHT
    this.keepStarts = Math.ceil(this.spanWeight / MIN_UNIT_WEIGHT) + n + w
    this.quietHoldBack = Math.min(quietHoldBackUnits({ n, w }), holdBack)
    this.floor = spanFloor({ n, w, k }) * WORD_WEIGHT
  }

  /**
   * Reads the next piece of a channel's text; `final` ends that channel.
   *
   * @example
   * watch.push('reasoning', event.delta.reasoning_content, false)
   */
  push(channel: string, text: string, final: boolean): void {
    let state = this.channels.get(channel)
    if (state === undefined) {
      const { n, w } = this.options.params
      state = {
        shingler: new Shingler(this.options.key, { n, keepStarts: this.keepStarts }),
        recent: new Int32Array(RECENT * 2),
        matches: [],
        winnow: new Winnower(w),
        final: false,
        lastEnd: 0,
        foreignEnd: -1,
        foreignShingle: -1,
        episodeFrom: -1,
        safe: 0,
        runs: new Map(),
      }
      this.channels.set(channel, state)
    }
    if (state.final) {
      if (text === '') return
      throw new Error(`ContentWatch: channel ${channel} was already final`)
    }
    this.reading = state
    this.readingChannel = channel
    state.shingler.read(text, final, this.onShingle)
    if (final) {
      if (state.winnow.end()) this.check(state, channel)
      state.final = true
    }
  }

  /**
   * The other tenant with the longest run, when that run has at least k fingerprints; its head is its
   * first `headPrints` fingerprints (at most k − 2).
   *
   * @example
   * const found = watch.evidence() // { source: 'globex', run: 4, matches: 6, channel: 'content' }
   */
  evidence(headPrints = HEAD_PRINTS): ForeignContent | undefined {
    let found: Reached | undefined
    for (const entry of this.reached) {
      if (entry.run.prints.size >= this.k && entry.run.prints.size > (found?.run.prints.size ?? 0))
        found = entry
    }
    if (found === undefined) return undefined
    const { source, channel, run } = found
    // The head: the run's first HEAD_PRINTS fingerprints by place (a cue's end that tells the model
    // which of the places a text repeats a phrase it is at, still far short of evidence).
    const ordered = [...run.at].sort((a, b) => a[1].from - b[1].from)
    const first = ordered.slice(0, Math.max(1, Math.min(headPrints, this.k - 2)))
    const from = first[0]![1].from
    const headEnd = Math.max(...first.map(([, place]) => place.end))
    const head = first.map(([print]) => print)
    const matches = this.matched.get(source)?.size ?? run.prints.size
    const prints = ordered.map(([print]) => print)
    return { source, run: run.prints.size, matches, channel, from, headEnd, head, prints }
  }

  /**
   * Excuses fingerprints as the model's own words: the model wrote them again from a clean cue that
   * did not hold them (src/plugins/foreign-content/second-opinion.ts). They no longer count for any run, past or to
   * come, and bridge runs as common text does, so private values inside recalled text still make one.
   * Returns how many fingerprints of the runs that reached evidence it took away.
   *
   * @example
   * if (watch.excuse(recalled) === 0) quarantine()
   */
  excuse(prints: Iterable<number>): number {
    for (const print of prints) this.excused.add(print)
    let taken = 0
    // Runs that reached evidence first: a run still under way may be one of them.
    for (const entry of this.reached) taken += this.dropExcused(entry.run)
    for (const state of this.channels.values()) {
      for (const [source, run] of state.runs) {
        this.dropExcused(run)
        if (run.prints.size === 0) state.runs.delete(source)
      }
      state.matches = state.matches.filter((m) => !this.excused.has(m.fingerprint))
      if (state.matches.length === 0) state.foreignShingle = -1
    }
    for (const all of this.matched.values()) for (const print of this.excused) all.delete(print)
    if (this.best !== undefined) {
      const top = this.evidence()
      this.best = top ?? { ...this.best, run: Math.min(this.best.run, this.k - 1) }
    }
    return taken
  }

  /**
   * The selections of a channel that matched another tenant and were not excused, oldest first (the
   * latest {@link KEEP_MATCHES}): what a second opinion's cue must leave out.
   *
   * @example
   * for (const m of watch.foreignMatches('content')) cue = cut(cue, m.from, m.end)
   */
  foreignMatches(channel: string): readonly { fingerprint: number; from: number; end: number }[] {
    return this.channels.get(channel)?.matches ?? []
  }

  private dropExcused(run: Run): number {
    let taken = 0
    for (const print of run.prints) {
      if (!this.excused.has(print)) continue
      run.prints.delete(print)
      run.at.delete(print)
      taken++
    }
    if (taken > 0 && run.at.size > 0)
      run.from = Math.min(...[...run.at.values()].map((p) => p.from))
    return taken
  }

  /**
   * The other tenant with the longest run so far, whatever its length (for measurements and logs).
   *
   * @example
   * watch.strongest()?.run // 2: below k, not evidence
   */
  strongest(): Omit<ForeignContent, 'from' | 'headEnd' | 'head' | 'prints'> | undefined {
    return this.best === undefined ? undefined : { ...this.best }
  }

  /**
   * The offset in the channel's text before which it may be released as far as this check goes: all
   * of it once final; otherwise up to the last {@link quietHoldBackUnits} complete units and any open
   * one while no selection among the shingles of the last {@link holdBackUnits} units matched another
   * tenant, else up to the last {@link holdBackUnits}.
   *
   * Why the shorter hold is safe (H = holdBackUnits, W = w + n − 1, m units read): a span of H + 1
   * units has made its evidence once its last unit is read, so only a span starting at unit m − H or
   * later can still be forming, and the shorter hold releases units m − H to m − W besides. Such a
   * span that holds one of them starts at m − W or before and runs past m − 1, so the latest window
   * (units m − W to m − 1) lies inside it: that window's selection is then the source's own and
   * matched the source when it was read. While the latest selection matched no other tenant, no
   * span that can still make evidence holds a unit released; the condition used is stricter still.
   * A match read later cannot change a window read before it, so what was safe stays safe.
   *
   * @example
   * const releasable = text.slice(0, watch.safeFrom('content'))
   */
  safeFrom(channel: string): number {
    const state = this.channels.get(channel)
    if (state === undefined) return 0
    const shingler = state.shingler
    if (state.final) return shingler.length
    // Stricter than the proof needs (the latest window alone): a shorter quote of another tenant,
    // which no hold guarantees to catch, close before a long one keeps the long hold as before. With
    // the latest window alone, the detection bench's stale pages let 8 words of one such quote out.
    const foreign = state.foreignShingle
    const long = this.longHold(shingler)
    const quiet = foreign < 0 || foreign < shingler.units - long
    let safe = this.heldFrom(state, quiet ? this.quietHoldBack : long)
    // While matches keep coming, nothing since the episode's first leaves: a shorter quote of another
    // tenant (too short for evidence alone) just before a long one waits for the long one's evidence.
    // With the long hold alone, the detection bench's stale pages (a quote, a page junction, a longer
    // quote) let the first quote's words out just before the second made evidence.
    if (!quiet && state.episodeFrom >= 0 && state.episodeFrom < safe) safe = state.episodeFrom
    // A run under way may still become evidence across the common text that follows it: none of it
    // leaves meanwhile (however long the common stretch), so a templated leak is withheld whole.
    for (const run of state.runs.values()) if (run.from < safe) safe = run.from
    if (safe > state.safe) state.safe = safe
    return state.safe
  }

  /**
   * Where the last {@link holdBackUnits} complete units (and any open one) of the channel start: the
   * text a match in which may still grow into evidence with what follows, whatever {@link safeFrom}
   * lets out. All of it once final.
   *
   * @example
   * const matchedLately = watch.foreignEnd('reasoning') > watch.longHoldFrom('reasoning')
   */
  longHoldFrom(channel: string): number {
    const state = this.channels.get(channel)
    if (state === undefined) return 0
    if (state.final) return state.shingler.length
    return this.heldFrom(state, this.longHold(state.shingler))
  }

  /**
   * Whether a run of another tenant's fingerprints is under way in the channel (not yet ended by a
   * selection that is not that tenant's or common): what follows may still extend it.
   *
   * @example
   * if (watch.running('content')) hold()
   */
  running(channel: string): boolean {
    const state = this.channels.get(channel)
    return state !== undefined && !state.final && state.runs.size > 0
  }

  /**
   * The complete units of the long hold ({@link holdBackUnits}): the most that weigh less than a
   * span of {@link minimumSpan} words does, so that any span reaching back before them weighs that
   * much and has made its evidence by its last unit (29 units of English, 59 or so Han characters).
   */
  private longHold(shingler: Shingler): number {
    return Math.min(shingler.unitsWeighing(this.spanWeight) - 1, shingler.units)
  }

  /** Where the channel's last `units` complete units (and any open one) start. */
  private heldFrom(state: ChannelState, units: number): number {
    const shingler = state.shingler
    const held = Math.min(units, shingler.units)
    return held === 0 ? shingler.pendingStart() : shingler.unitStart(held)!
  }

  /**
   * Where the channel's text read so far last matched another tenant's prompt: the end of the latest
   * shingle read when a selection did (at or past the matching words); −1 when nothing has.
   *
   * @example
   * const clean = watch.foreignEnd('reasoning') <= watch.safeFrom('reasoning')
   */
  foreignEnd(channel: string): number {
    return this.channels.get(channel)?.foreignEnd ?? -1
  }

  /**
   * The answer's own fingerprints (every selection, up to a cap): what a released answer teaches, so
   * that the same words in a later answer are known to be the model's (see {@link answersOf}).
   *
   * @example
   * table.add(answersOf(model), tenant, watch.selections(), Date.now())
   */
  selections(): number[] {
    return this.selected.toArray()
  }

  private check(state: ChannelState, channel: string): void {
    const { key, tenant } = this.options
    const hash = state.winnow.selectedHash
    const fingerprint = fingerprintOf(key, hash)
    this.selected.add(fingerprint)
    // Recalled by the model from a clean cue: common text to every run.
    if (this.excused.size !== 0 && this.excused.has(fingerprint)) return
    const sources = this.sourcesOf(hash, fingerprint, state.runs.size > 0)
    if (sources === COMMON) return
    // A selection that is not a given tenant's ends that tenant's run (own text, text nobody sent).
    for (const source of state.runs.keys()) {
      if (!sources.includes(source)) state.runs.delete(source)
    }
    for (const source of sources) {
      if (source !== tenant) this.count(state, source, fingerprint, channel)
    }
  }

  /**
   * What one selection is to the runs: common text, or the tenants whose prompts sent it (none for
   * this request's own text or text nobody sent). Own text that is also common only matters while a
   * run is under way (it then bridges, as common text does): otherwise no lookup is made for it.
   */
  private sourcesOf(
    hash: number,
    fingerprint: number,
    running: boolean,
  ): readonly string[] | typeof COMMON {
    const { own, table, model, now, answers, publicPrints } = this.options
    const mine = own.contains(hash)
    if (mine && !running) return NOBODY
    const at = typeof now === 'number' ? now : this.clock(now)
    const owners = table.lookup(model, fingerprint, at)
    // Public text bridges a run like common text; with no run under way it changes nothing.
    if (owners === undefined) return running && publicPrints?.has(fingerprint) ? COMMON : NOBODY
    if (owners.common || publicPrints?.has(fingerprint)) return COMMON
    if (mine) return NOBODY
    if (answers === undefined) return owners.tenants
    // Said by the model to someone other than the source: its words, not the source's pages.
    const said = table.lookup(answers, fingerprint, at)
    if (said === undefined) return owners.tenants
    if (said.common) return COMMON
    const sources = owners.tenants.filter((s) => said.tenants.every((t) => t === s))
    return sources.length > 0 ? sources : COMMON
  }

  private get k(): number {
    return this.options.params.k
  }

  private clock(now: () => number): number {
    if (this.lookups >= LOOKUPS_PER_CLOCK) {
      this.at = now()
      this.lookups = 0
    }
    this.lookups++
    return this.at
  }

  private count(state: ChannelState, source: string, fingerprint: number, channel: string): void {
    const selected = state.winnow.selectedIndex
    // The selected shingle's first unit: n + w − 1 units back at most, within the starts kept.
    const from = state.shingler.unitStart(state.shingler.units - selected) ?? state.safe
    const slot = (selected % RECENT) * 2
    const place = { from, end: Math.max(from, state.recent[slot + 1]!) }
    state.matches.push({ fingerprint, ...place })
    if (state.matches.length > KEEP_MATCHES) state.matches.shift()
    const shingler = state.shingler
    const previous = state.foreignShingle
    const long = this.longHold(shingler)
    if (previous < 0 || previous < shingler.units - long) state.episodeFrom = from
    state.foreignEnd = state.lastEnd
    state.foreignShingle = selected
    let run = state.runs.get(source)
    if (run === undefined) {
      run = {
        prints: new Set(),
        at: new Map(),
        from,
        fromWeight: shingler.weightBefore(selected) ?? 0,
        span: 0,
      }
      state.runs.set(source, run)
    }
    run.prints.add(fingerprint)
    if (!run.at.has(fingerprint)) run.at.set(fingerprint, place)
    const end = shingler.weightBefore(selected + this.options.params.n) ?? run.fromWeight
    run.span = Math.max(run.span, end - run.fromWeight)
    // k selections over less than the floor's weight are not yet evidence (a phrase shorter than any
    // quote the guard must catch, or a CJK sentence counted in characters): at most k − 1 so far.
    const size = run.span >= this.floor ? run.prints.size : Math.min(run.prints.size, this.k - 1)
    let all = this.matched.get(source)
    if (all === undefined) {
      all = new Set()
      this.matched.set(source, all)
    }
    all.add(fingerprint)
    if (size >= this.k && !this.reached.some((r) => r.run === run)) {
      this.reached.push({ source, channel, run })
    }
    const best = this.best
    if (best?.source === source) {
      best.matches = all.size
      if (size > best.run) Object.assign(best, { run: size, channel })
    } else if (best === undefined || size > best.run) {
      this.best = { source, run: size, matches: all.size, channel }
    }
  }
}

/**
 * Scans a whole answer at once: each channel's full text, final.
 *
 * @example
 * const found = scanAnswer(options, { reasoning: r, content: c, 'tool:0': args })
 */
export function scanAnswer(
  options: ContentWatchOptions,
  channels: Readonly<Record<string, string>>,
): ForeignContent | undefined {
  const watch = new ContentWatch(options)
  for (const [channel, text] of Object.entries(channels)) watch.push(channel, text, true)
  return watch.evidence()
}
