/**
 * @module The family estimate: for any text, at least as many tokens as any tokenizer of the model's
 * generation counts (o200k, Qwen3, DeepSeek-V3, Llama 3, Gemma 3), computed from o200k's own tokens
 * and a measured table, plus a lower figure no family tokenizer goes below.
 *
 * How the bound is built (scripts/measure-tokenizers.ts measures it; bench/results/
 * tokenizer-factors.json holds the evidence):
 * - Every o200k token t has an expansion: the most tokens any family tokenizer spends on t's text on
 *   its own (o200k tokens that are not whole UTF-8 characters get their byte length). A text's
 *   bound is the sum over its o200k tokens, times a per-class safety factor and plus a small slack
 *   ({@link CLASS_SLACK}) measured for the places where a tokenizer's merges across o200k token
 *   boundaries cost more than the parts.
 * - Qwen3 normalizes to NFC before tokenizing, and NFC makes some characters longer (Devanagari
 *   nukta letters, Hebrew presentation forms, musical symbols: up to 3× their bytes). A text that
 *   NFC changes is estimated twice, as sent and as NFC, and each class is charged the larger.
 * - Pre-tokens longer than {@link LONG_PIECE_UNITS} are cut into chunks (count.ts says why), which
 *   bounds the merge work per token a crafted prompt can cost.
 * - A lone surrogate is one o200k token but three in a tokenizer that encodes it as WTF-8 bytes:
 *   pieces holding one are charged their bytes.
 * - Each piece's cost is attributed to one script class (see script.ts), so margins and messages can
 *   be per script.
 */
import type { TextFacts } from '../memo/text-memo'
import { chunkEnd, LONG_PIECE_UNITS, type PieceTokenizer, pieceTokenizer } from './count'
import type { ClassFactor } from './family-table'
import {
  CLASS_MASK,
  LONE_SURROGATE,
  nfcForm,
  pieceFacts,
  SCRIPT_CLASSES,
  type ScriptClass,
} from './script'
import { utf8Length } from './utf8'
import { nextTurn, PIECES_PER_TURN } from './yield'

/** What one script class of a prompt costs. */
export interface ClassFigures {
  /** Family bound: at least what any reference tokenizer counts for this class's pieces. */
  bound: number
  /** A figure no reference tokenizer goes below (80% of the smallest measured ratio); for timing. */
  lower: number
  /** o200k tokens of these pieces (chunked long pieces: a few more than o200k's exact count). */
  o200k: number
}

/** The family estimate of a prompt. */
export interface PromptEstimate {
  /** Σ over classes of `bound`. */
  bound: number
  /** Σ over classes of `lower`. */
  lower: number
  /** Σ over classes of `o200k`: the exact o200k count when `exact`. */
  o200k: number
  /** False when a long pre-token was counted in chunks, or counting stopped early. */
  exact: boolean
  /** Per class, only classes present. */
  classes: Partial<Record<ScriptClass, ClassFigures>>
}

const CLASS_COUNT = SCRIPT_CLASSES.length

/** ASCII letters: no real word of them is longer than a chunk, so a longer run is charged its bytes. */
const LATIN = SCRIPT_CLASSES.indexOf('latin')

/** Chunk costs remembered per scan (see FamilyScanner's memo). */
const CHUNK_MEMO_ENTRIES = 4_096

/** The decoded family table and its per-class factors (see family-table.ts). */
interface FamilyData {
  /** Expansion per o200k token id. */
  expansion: Uint8Array
  /** Charged for a token id outside the table. */
  unknown: number
  /** Per class id: the table's safety factor. */
  safety: Float64Array
  /** Per class id: × o200k tokens = a figure no family tokenizer went below. */
  lower: Float64Array
  /** Per class id: family bound per o200k token on ordinary text of the class. */
  typical: Float64Array
  /** The family bound per o200k token of English prose. */
  english: number
}

let loading: Promise<FamilyData> | undefined

function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

/** Undoes the table's raw deflate with the platform's own decompressor (workerd, Node 22, browsers). */
async function inflate(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'))
  return new Uint8Array(await new Response(stream).arrayBuffer())
}

async function decodeFamily(): Promise<FamilyData> {
  // Imported on first count, like o200k itself: the byte path never evaluates or decodes it.
  const family = await import('./family-table')
  const packed = await inflate(base64Bytes(family.FAMILY_NIBBLES_DEFLATED))
  // A short table would read as zero expansion, an undercount: refuse it (the load is retried).
  if (packed.length !== Math.ceil(family.FAMILY_TOKENS / 2)) {
    throw new Error(
      `family table holds ${packed.length} bytes, not ${Math.ceil(family.FAMILY_TOKENS / 2)}`,
    )
  }
  const expansion = new Uint8Array(family.FAMILY_TOKENS)
  for (let id = 0; id < family.FAMILY_TOKENS; id++) {
    const byte = packed[id >> 1] ?? 0
    expansion[id] = id & 1 ? byte >> 4 : byte & 0x0f
  }
  // Nibble 0 marks an expansion over 15, listed separately as [id, expansion] pairs.
  const escapes = family.FAMILY_ESCAPES
  for (let i = 0; i + 1 < escapes.length; i += 2) {
    expansion[escapes[i] ?? 0] = Math.min(255, escapes[i + 1] ?? 255)
  }
  const per = (pick: (factor: ClassFactor) => number) =>
    Float64Array.from(SCRIPT_CLASSES, (name) => pick(family.CLASS_FACTORS[name]))
  return {
    expansion,
    unknown: family.UNKNOWN_TOKEN_EXPANSION,
    safety: per((f) => f.safety),
    lower: per((f) => f.lower),
    typical: per((f) => f.typical),
    english: family.ENGLISH_BOUND_PER_O200K,
  }
}

/**
 * The family table and factors, imported and decoded once per isolate on first use (~200 kB, a
 * millisecond or two). A failed load is not cached: a later request retries.
 *
 * @example
 * const { expansion } = await loadFamily()
 * expansion[12_345] // the most tokens any family tokenizer spends on that o200k token's text
 */
export function loadFamily(): Promise<FamilyData> {
  loading ??= decodeFamily().catch((error: unknown) => {
    loading = undefined
    throw error
  })
  return loading
}

/** Per-class running figures of one scan. */
interface Tally {
  /** Family tokens before the safety factor (max over the NFC variants). */
  raw: Float64Array
  /** o200k tokens as sent (pieces with a lone surrogate: their bytes). */
  o200k: Float64Array
  /** o200k tokens that can be trusted as a floor (min over variants; lone-surrogate pieces: 0). */
  floor: Float64Array
}

function tally(): Tally {
  return {
    raw: new Float64Array(CLASS_COUNT),
    o200k: new Float64Array(CLASS_COUNT),
    floor: new Float64Array(CLASS_COUNT),
  }
}

function copyTally(from: Tally): Tally {
  return { raw: from.raw.slice(), o200k: from.o200k.slice(), floor: from.floor.slice() }
}

/**
 * What one text adds to a scan, its NFC variant included — a pure function of the text, so a
 * tenant's resent text is scanned once (src/core/memo): the prompt's figures are the sum of its texts'.
 */
export interface TextTally extends Tally {
  /** False when a long pre-token of it was counted in chunks or charged its bytes. */
  exact: boolean
}

/** What a {@link TextTally} costs to remember. */
const TEXT_TALLY_BYTES = 3 * 8 * SCRIPT_CLASSES.length + 96

/** A text's share of the as-sent scan (undefined: remembered, already final in the total). */
type Share = { tally: Tally; exact: boolean } | undefined

/** The result of {@link scanFamily}. */
interface FamilyScan extends PromptEstimate {
  /** False when the scan stopped because the charged figure passed the limit. */
  within: boolean
  /** Σ over classes of `ceil(bound × charge)`: the charged figure compared with the limit. */
  charged: number
}

/**
 * Tokens added to every class present, for merges across o200k token boundaries that cost a family
 * tokenizer a token or two more than the parts (Qwen3 splits "asjonal" into 3, o200k's two tokens
 * into 1 each). Over a long text the table's slack absorbs them, and the per-class safety factor
 * covers the rest; in a short text a single one is a large share (without the slack, short windows
 * of the corpus fell a token or two short).
 */
const CLASS_SLACK = 2

/** The bound of one class from its raw family tokens: `ceil(raw × safety) + CLASS_SLACK` (0 if none). */
function classBound(raw: number, safety: number): number {
  return raw > 0 ? Math.ceil(raw * safety) + CLASS_SLACK : 0
}

function charged(
  raw: Float64Array,
  safety: Float64Array,
  charge: Float64Array | undefined,
): number {
  let total = 0
  for (let c = 0; c < CLASS_COUNT; c++) {
    const r = raw[c] ?? 0
    if (r === 0) continue
    const bound = classBound(r, safety[c] ?? 1)
    total += charge ? Math.ceil(bound * (charge[c] ?? 1)) : bound
  }
  return total
}

/** A chunk's tokens and cost packed in one number (cost < 2^20 per 32-unit chunk). */
const PACK = 1_048_576

/**
 * One scan's running state: the charged figure so far (checked against the limit as it grows), whether
 * every pre-token was counted whole, and the chunk memo. Its methods are the scan's steps.
 */
class FamilyScanner {
  /** Σ cost × safety × charge so far: a float pre-check before the exact per-class sum. */
  running = 0
  /** False once a long pre-token was counted in chunks or charged its bytes. */
  exact = true
  readonly #tokenizer: PieceTokenizer
  readonly #family: FamilyData
  readonly #charge: Float64Array | undefined
  readonly #limit: number
  /** Per class: safety × charge, what one raw family token adds to `running`. */
  readonly #weight = new Float64Array(CLASS_COUNT)
  /** Chunk costs remembered within one scan: a repeated run (`aaaa…`, a pasted block) merges once. */
  readonly #memo = new Map<string, number>()
  /** Pre-tokens scanned since the scan last let the isolate's other requests run (./yield.ts). */
  #sinceTurn = 0

  constructor(
    tokenizer: PieceTokenizer,
    family: FamilyData,
    charge: Float64Array | undefined,
    limit: number,
  ) {
    this.#tokenizer = tokenizer
    this.#family = family
    this.#charge = charge
    this.#limit = limit
    for (let c = 0; c < CLASS_COUNT; c++) {
      this.#weight[c] = (family.safety[c] ?? 1) * (charge?.[c] ?? 1)
    }
  }

  /** Whether `raw` charged with margins passes the limit (the exact sum only past the pre-check). */
  over(raw: Float64Array): boolean {
    return this.running > this.#limit && this.charged(raw) > this.#limit
  }

  /** Σ over classes of `ceil(bound × charge)` for these raw figures. */
  charged(raw: Float64Array): number {
    return charged(raw, this.#family.safety, this.#charge)
  }

  /** Adds `extra` raw tokens of class `c` to the running figure (they are already in a tally). */
  charge(c: number, extra: number): void {
    this.running += extra * (this.#weight[c] ?? 1)
  }

  /**
   * Scans one text into `into`; `live` checks the limit as it goes. False when the charged figure
   * passed the limit (the scan stopped there).
   */
  async scanText(text: string, into: Tally, live: boolean): Promise<boolean> {
    for (const match of text.matchAll(this.#tokenizer.split)) {
      if (++this.#sinceTurn === PIECES_PER_TURN) {
        this.#sinceTurn = 0
        await nextTurn()
      }
      const piece = match[0]
      const facts = pieceFacts(piece)
      const c = facts & CLASS_MASK
      let within: boolean
      if (facts & LONE_SURROGATE) within = this.#addLoneSurrogate(piece, c, into, live)
      else if (piece.length <= LONG_PIECE_UNITS) within = this.#addPiece(piece, c, into, live)
      else within = this.#addLongPiece(piece, c, into, live)
      if (!within) return false
    }
    return true
  }

  /**
   * A lone surrogate is one o200k token (TextEncoder makes it U+FFFD) but 3 in a tokenizer that
   * encodes it as its three WTF-8 bytes (Gemma 3 does): such a piece is charged its bytes, each lone
   * surrogate 3, which covers any byte-level tokenizer. Its o200k figure is no floor: none is added.
   */
  #addLoneSurrogate(piece: string, c: number, into: Tally, live: boolean): boolean {
    const bytes = utf8Length(piece)
    into.raw[c] = (into.raw[c] ?? 0) + bytes
    into.o200k[c] = (into.o200k[c] ?? 0) + bytes
    return this.#check(c, bytes, into, live)
  }

  /** A pre-token over {@link LONG_PIECE_UNITS}: charged its bytes (ASCII letters) or in chunks. */
  #addLongPiece(piece: string, c: number, into: Tally, live: boolean): boolean {
    this.exact = false
    if (c === LATIN) {
      // A run of ASCII letters longer than any word (random letters, `aaaa…`): its bytes are a sound
      // charge (no byte-level BPE has more tokens than bytes) and cost no merging, and such a run is
      // the cheapest way to make a tokenizer burn CPU. Its o200k figure (what the lower estimate
      // scales) stays a lower count: one token per chunk.
      const bytes = utf8Length(piece)
      into.raw[c] = (into.raw[c] ?? 0) + bytes
      into.o200k[c] = (into.o200k[c] ?? 0) + Math.ceil(piece.length / LONG_PIECE_UNITS)
      return this.#check(c, bytes, into, live)
    }
    for (let start = 0, end = 0; start < piece.length; start = end) {
      end = chunkEnd(piece, start)
      if (!this.#addChunk(piece.slice(start, end), c, into, live)) return false
    }
    return true
  }

  /** Adds one o200k-sized pre-token to `into`. */
  #addPiece(text: string, c: number, into: Tally, live: boolean): boolean {
    const id = this.#tokenizer.singleToken(text)
    if (id !== undefined) return this.#addToken(id, c, into, live)
    return this.#addMerged(this.#merge(text, false), c, into, live)
  }

  /** Adds one chunk of a long pre-token to `into`: its merge is remembered, long runs repeat. */
  #addChunk(text: string, c: number, into: Tally, live: boolean): boolean {
    const id = this.#tokenizer.singleToken(text)
    if (id !== undefined) return this.#addToken(id, c, into, live)
    return this.#addMerged(this.#memo.get(text) ?? this.#merge(text, true), c, into, live)
  }

  /** Adds a piece that is one o200k token. */
  #addToken(id: number, c: number, into: Tally, live: boolean): boolean {
    const { expansion, unknown } = this.#family
    const cost = expansion[id] ?? unknown
    into.raw[c] = (into.raw[c] ?? 0) + cost
    into.o200k[c] = (into.o200k[c] ?? 0) + 1
    into.floor[c] = (into.floor[c] ?? 0) + 1
    return this.#check(c, cost, into, live)
  }

  /** Adds a merged piece's packed figures (family cost, o200k tokens; see `#merge`). */
  #addMerged(packed: number, c: number, into: Tally, live: boolean): boolean {
    const tokens = packed % PACK
    const cost = Math.floor(packed / PACK)
    into.raw[c] = (into.raw[c] ?? 0) + cost
    into.o200k[c] = (into.o200k[c] ?? 0) + tokens
    into.floor[c] = (into.floor[c] ?? 0) + tokens
    return this.#check(c, cost, into, live)
  }

  /** Merges a piece with o200k's BPE: its tokens and family cost, packed; a chunk's is remembered. */
  #merge(text: string, chunk: boolean): number {
    const { expansion, unknown } = this.#family
    const ids = this.#tokenizer.encodePiece(text)
    let cost = 0
    for (const tokenId of ids) cost += expansion[tokenId] ?? unknown
    const packed = cost * PACK + ids.length
    if (chunk) {
      if (this.#memo.size >= CHUNK_MEMO_ENTRIES) this.#memo.clear()
      this.#memo.set(text, packed)
    }
    return packed
  }

  /** After adding `cost` of class `c`: on a live scan, whether the figure is still within the limit. */
  #check(c: number, cost: number, into: Tally, live: boolean): boolean {
    if (!live) return true
    this.charge(c, cost)
    return !this.over(into.raw)
  }
}

/**
 * Scans `texts` as sent straight into `total` (one hot loop, live limit), returning each text's own
 * share (for the NFC pass), or undefined once the limit was passed. A text `known` already has its
 * final figures added as they are.
 */
async function scanAsSent(
  scanner: FamilyScanner,
  texts: readonly string[],
  total: Tally,
  known: TextFacts<TextTally> | undefined,
): Promise<Share[] | undefined> {
  const shares: Share[] = []
  for (const text of texts) {
    const remembered = known?.get(text)
    if (remembered) {
      addTally(total, remembered)
      for (let c = 0; c < CLASS_COUNT; c++) scanner.charge(c, remembered.raw[c] ?? 0)
      scanner.exact &&= remembered.exact
      shares.push(undefined)
      if (scanner.over(total.raw)) return undefined
      continue
    }
    const before = copyTally(total)
    const exactBefore = scanner.exact
    scanner.exact = true
    const within = await scanner.scanText(text, total, true)
    const exact = scanner.exact
    scanner.exact = exactBefore && exact
    const share = tally()
    for (let c = 0; c < CLASS_COUNT; c++) {
      share.raw[c] = (total.raw[c] ?? 0) - (before.raw[c] ?? 0)
      share.o200k[c] = (total.o200k[c] ?? 0) - (before.o200k[c] ?? 0)
      share.floor[c] = (total.floor[c] ?? 0) - (before.floor[c] ?? 0)
    }
    shares.push({ tally: share, exact })
    if (!within) return undefined
  }
  return shares
}

function addTally(into: Tally, from: Tally): void {
  for (let c = 0; c < CLASS_COUNT; c++) {
    into.raw[c] = (into.raw[c] ?? 0) + (from.raw[c] ?? 0)
    into.o200k[c] = (into.o200k[c] ?? 0) + (from.o200k[c] ?? 0)
    into.floor[c] = (into.floor[c] ?? 0) + (from.floor[c] ?? 0)
  }
}

/**
 * Scans again, as NFC, every text that NFC changes, charging each class the larger figure and the
 * smaller floor. False when that passes the limit. Run only once the prompt as sent fits, so the
 * cost of normalizing is bounded by what fitted. Each text's final figures are kept in `known`.
 */
async function addNfcVariants(
  scanner: FamilyScanner,
  { texts, shares }: { texts: readonly string[]; shares: readonly Share[] },
  total: Tally,
  known: TextFacts<TextTally> | undefined,
): Promise<boolean> {
  for (let t = 0; t < texts.length; t++) {
    const share = shares[t]
    if (share === undefined) continue
    const text = texts[t] ?? ''
    const sent = share.tally
    const nfc = nfcForm(text)
    if (nfc !== text) {
      const variant = tally()
      await scanner.scanText(nfc, variant, false)
      for (let c = 0; c < CLASS_COUNT; c++) {
        const extra = (variant.raw[c] ?? 0) - (sent.raw[c] ?? 0)
        if (extra > 0) {
          total.raw[c] = (total.raw[c] ?? 0) + extra
          sent.raw[c] = (sent.raw[c] ?? 0) + extra
          scanner.charge(c, extra)
        }
        const less = (variant.floor[c] ?? 0) - (sent.floor[c] ?? 0)
        if (less < 0) {
          total.floor[c] = (total.floor[c] ?? 0) + less
          sent.floor[c] = (sent.floor[c] ?? 0) + less
        }
      }
    }
    known?.keep(text, { ...sent, exact: share.exact }, TEXT_TALLY_BYTES)
    if (scanner.over(total.raw)) return false
  }
  return true
}

/**
 * Scans `texts` with o200k and the family table, attributing each pre-token to a script class.
 * With a `limit`, stops as soon as Σ_class ceil(bound × charge[class]) passes it: every pre-token
 * (or chunk of a long one, ≤ LONG_PIECE_UNITS units) adds at least one token, so at most about
 * `limit` of them are merged, however long the prompt.
 *
 * @example
 * const scan = await scanFamily(pieces.texts, charge, ceiling - overhead)
 * if (!scan.within) reject()
 */
export async function scanFamily(
  texts: readonly string[],
  charge?: Float64Array,
  limit = Number.POSITIVE_INFINITY,
  known?: TextFacts<TextTally>,
): Promise<FamilyScan> {
  const [tokenizer, family] = await Promise.all([pieceTokenizer(), loadFamily()])
  const scanner = new FamilyScanner(tokenizer, family, charge, limit)
  const total = tally()
  const shares = await scanAsSent(scanner, texts, total, known)
  const within =
    shares !== undefined && (await addNfcVariants(scanner, { texts, shares }, total, known))
  return finish(total, within, { charge, exact: scanner.exact, family })
}

/** The scan's figures per class and in all, from its tally. */
function finish(
  total: Tally,
  within: boolean,
  {
    charge,
    exact,
    family,
  }: { charge: Float64Array | undefined; exact: boolean; family: FamilyData },
): FamilyScan {
  const classes: Partial<Record<ScriptClass, ClassFigures>> = {}
  let bound = 0
  let lower = 0
  let o200k = 0
  for (let c = 0; c < CLASS_COUNT; c++) {
    const raw = total.raw[c] ?? 0
    const tokens = total.o200k[c] ?? 0
    if (raw === 0 && tokens === 0) continue
    const figures: ClassFigures = {
      bound: classBound(raw, family.safety[c] ?? 1),
      lower: Math.floor(Math.max(0, total.floor[c] ?? 0) * (family.lower[c] ?? 0)),
      o200k: tokens,
    }
    classes[SCRIPT_CLASSES[c] ?? 'other'] = figures
    bound += figures.bound
    lower += figures.lower
    o200k += tokens
  }
  return {
    bound,
    lower,
    o200k,
    exact: exact && within,
    classes,
    within,
    charged: charged(total.raw, family.safety, charge),
  }
}

/**
 * The family estimate of `texts`: a bound at least as high as any reference tokenizer's count, a
 * lower figure none goes below, and o200k's own count, per script class. Loads o200k on first use.
 *
 * @example
 * const e = await estimateTexts(['user', 'ვინაიდან ადამიანთა ოჯახის'])
 * e.bound >= e.o200k // true; e.classes.georgian?.bound is most of it
 */
export async function estimateTexts(
  texts: readonly string[],
  known?: TextFacts<TextTally>,
): Promise<PromptEstimate> {
  const {
    within: _within,
    charged: _charged,
    ...estimate
  } = await scanFamily(texts, undefined, Number.POSITIVE_INFINITY, known)
  return estimate
}
