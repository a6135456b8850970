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
import { chunkEnd, LONG_PIECE_UNITS, pieceTokenizer } from './count'
import type { ClassFactor } from './family-table'
import { CLASS_MASK, LONE_SURROGATE, pieceFacts, SCRIPT_CLASSES, type ScriptClass } from './script'
import { utf8Length } from './utf8'

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

/** Chunk costs remembered within one scan: a repeated run (`aaaa…`, a pasted block) merges once. */
const CHUNK_MEMO_ENTRIES = 4_096

/** The decoded family table and its per-class factors (see family-table.ts). */
export interface FamilyData {
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

function base64Bytes(text: string): Uint8Array {
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

async function decodeFamily(): Promise<FamilyData> {
  // Imported on first count, like o200k itself: the byte path never evaluates or decodes it.
  const family = await import('./family-table')
  const packed = base64Bytes(family.FAMILY_NIBBLES)
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

/** The result of {@link scanFamily}. */
export interface FamilyScan extends PromptEstimate {
  /** False when the scan stopped because the charged figure passed the limit. */
  within: boolean
  /** Σ over classes of `ceil(bound × charge)`: the charged figure compared with the limit. */
  charged: number
}

/**
 * Tokens added to every class present, for merges across o200k token boundaries that cost a family
 * tokenizer a token or two more than the parts (Qwen3 splits "asjonal" into 3, o200k's two tokens
 * into 1 each). Over a long text the table's slack absorbs them, and the per-class safety factor
 * covers the rest; in a short text a single one is a large share (measured: at most 2 tokens in
 * windows under 100 o200k tokens of the corpus).
 */
export const CLASS_SLACK = 2

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
): Promise<FamilyScan> {
  const [tokenizer, family] = await Promise.all([pieceTokenizer(), loadFamily()])
  const { split, singleToken, encodePiece } = tokenizer
  const { expansion, unknown, safety } = family
  const weight = new Float64Array(CLASS_COUNT)
  for (let c = 0; c < CLASS_COUNT; c++) weight[c] = (safety[c] ?? 1) * (charge?.[c] ?? 1)
  const over = (raw: Float64Array) => running > limit && charged(raw, safety, charge) > limit

  const total = tally()
  let exact = true
  let running = 0
  // Per text, what the as-sent pass charged, so an NFC variant adds only what it costs beyond it.
  const perText: Tally[] = []

  // Adds one o200k-sized piece of text (a pre-token, or a chunk of a long one) to `into`; false when
  // the live figure passed the limit.
  const memo = new Map<string, number>()
  const add = (text: string, c: number, into: Tally, live: boolean, chunk = false): boolean => {
    const id = singleToken(text)
    let tokens = 1
    let cost: number
    if (id !== undefined) cost = expansion[id] ?? unknown
    else {
      // A chunk's tokens and cost packed in one number (cost < 2^20 per 32-unit chunk).
      const known = chunk ? memo.get(text) : undefined
      if (known !== undefined) {
        tokens = known % 1_048_576
        cost = Math.floor(known / 1_048_576)
      } else {
        const ids = encodePiece(text)
        tokens = ids.length
        cost = 0
        for (const tokenId of ids) cost += expansion[tokenId] ?? unknown
        if (chunk) {
          if (memo.size >= CHUNK_MEMO_ENTRIES) memo.clear()
          memo.set(text, cost * 1_048_576 + tokens)
        }
      }
    }
    into.raw[c] = (into.raw[c] ?? 0) + cost
    into.o200k[c] = (into.o200k[c] ?? 0) + tokens
    into.floor[c] = (into.floor[c] ?? 0) + tokens
    if (!live) return true
    running += cost * (weight[c] ?? 1)
    // The float running figure is a fast pre-check; the decision is the exact per-class sum.
    return !over(into.raw)
  }

  const scanText = (text: string, into: Tally, live: boolean): boolean => {
    for (const match of text.matchAll(split)) {
      const piece = match[0]
      const facts = pieceFacts(piece)
      const c = facts & CLASS_MASK
      if (facts & LONE_SURROGATE) {
        // A lone surrogate is one o200k token (TextEncoder makes it U+FFFD) but 3 in a tokenizer
        // that encodes it as its three WTF-8 bytes (Gemma 3 does): such a piece is charged its
        // bytes, each lone surrogate 3, which covers any byte-level tokenizer.
        const bytes = utf8Length(piece)
        into.raw[c] = (into.raw[c] ?? 0) + bytes
        into.o200k[c] = (into.o200k[c] ?? 0) + bytes
        if (live) {
          running += bytes * (weight[c] ?? 1)
          if (over(into.raw)) return false
        }
        continue
      }
      if (piece.length <= LONG_PIECE_UNITS) {
        if (!add(piece, c, into, live)) return false
        continue
      }
      exact = false
      if (c === LATIN) {
        // A run of ASCII letters longer than any word (random letters, `aaaa…`): its bytes are a
        // sound charge (no byte-level BPE has more tokens than bytes) and cost no merging — such a
        // run is the cheapest way to make a tokenizer burn CPU (1.7 s per 8 MB rejected when merged).
        // Its o200k figure (what the lower estimate scales) stays a lower count: one token per chunk.
        const bytes = utf8Length(piece)
        into.raw[c] = (into.raw[c] ?? 0) + bytes
        into.o200k[c] = (into.o200k[c] ?? 0) + Math.ceil(piece.length / LONG_PIECE_UNITS)
        if (live) {
          running += bytes * (weight[c] ?? 1)
          if (over(into.raw)) return false
        }
        continue
      }
      for (let start = 0, end = 0; start < piece.length; start = end) {
        end = chunkEnd(piece, start)
        if (!add(piece.slice(start, end), c, into, live, true)) return false
      }
    }
    return true
  }

  for (const text of texts) {
    // Scanned straight into the total (one hot loop, live limit); the text's own share is the
    // difference, kept for the NFC pass below (32 classes: cheap).
    const before = {
      raw: total.raw.slice(),
      o200k: total.o200k.slice(),
      floor: total.floor.slice(),
    }
    const within = scanText(text, total, true)
    const mine = tally()
    for (let c = 0; c < CLASS_COUNT; c++) {
      mine.raw[c] = (total.raw[c] ?? 0) - (before.raw[c] ?? 0)
      mine.o200k[c] = (total.o200k[c] ?? 0) - (before.o200k[c] ?? 0)
      mine.floor[c] = (total.floor[c] ?? 0) - (before.floor[c] ?? 0)
    }
    perText.push(mine)
    if (!within) return finish(total, false, charge, exact, family)
  }

  // Only once the prompt as sent fits: a text that NFC changes is scanned as NFC too (the cost of
  // normalizing is then bounded by what fitted), and each class is charged the larger figure.
  for (let t = 0; t < texts.length; t++) {
    const text = texts[t] ?? ''
    const nfc = text.normalize('NFC')
    if (nfc === text) continue
    const sent = perText[t] ?? tally()
    const variant = tally()
    scanText(nfc, variant, false)
    for (let c = 0; c < CLASS_COUNT; c++) {
      const extra = (variant.raw[c] ?? 0) - (sent.raw[c] ?? 0)
      if (extra > 0) {
        total.raw[c] = (total.raw[c] ?? 0) + extra
        running += extra * (weight[c] ?? 1)
      }
      const less = (variant.floor[c] ?? 0) - (sent.floor[c] ?? 0)
      if (less < 0) total.floor[c] = (total.floor[c] ?? 0) + less
    }
    if (over(total.raw)) return finish(total, false, charge, exact, family)
  }
  return finish(total, true, charge, exact, family)
}

function finish(
  total: Tally,
  within: boolean,
  charge: Float64Array | undefined,
  exact: boolean,
  family: FamilyData,
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
export async function estimateTexts(texts: readonly string[]): Promise<PromptEstimate> {
  const { within: _within, charged: _charged, ...estimate } = await scanFamily(texts)
  return estimate
}
