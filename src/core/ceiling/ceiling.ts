/**
 * @module The token-ceiling decision: does this prompt fit the model's real KV pool, with margins?
 *
 * A prompt over the ceiling is rejected, never truncated: an engine's "make it fit" path is what reads
 * other requests' cache pages, and a truncated prompt asks a different question behind a 200.
 * What is bounded is the MODEL's tokens, not o200k's: each script class is charged the family bound
 * (estimate.ts) plus its margin (the operator's floor, or what calibration learned for that class).
 *
 * Bounds, cheapest first:
 * 1. **Bytes.** Every byte-level BPE token (special tokens excluded: we count them as text) decodes
 *    to at least one byte, so tokens ≤ UTF-8 bytes — for every tokenizer of the family, with two
 *    exceptions handled here: Qwen3 normalizes to NFC first, which can lengthen a text (so a text
 *    that NFC changes is charged the larger of both byte counts), and a lone surrogate, 3 bytes to
 *    `TextEncoder`, stays 3 WTF-8 bytes. If the bytes already fit, the decision is made without
 *    loading the tokenizer. UTF-8 bytes are at least the UTF-16 length, so a text whose length is
 *    already over the limit is not measured at all.
 * 2. **Family estimate with early exit**: o200k's tokens through the family table, per class, with
 *    the class margins; counting stops as soon as the charged figure passes the ceiling, so its cost
 *    is bounded by the ceiling, not by the prompt.
 * No sound bound between these two saves enough to be worth it (the rule: docs/how-it-decides.md,
 * "The ceiling holds in every language").
 */
import type { TextFacts } from '../memo/text-memo'
import { type ClassFigures, loadFamily, scanFamily, type TextTally } from './estimate'
import { type PromptPieces, templateOverhead } from './prompt'
import { addClassBytes, NFC_STABLE_BELOW, SCRIPT_CLASSES, type ScriptClass } from './script'

/** The margin per script class, as a fraction (0.05 = 5%) on top of the family bound. */
export type Margins = (cls: ScriptClass) => number

/** What the ceiling decided and why. */
interface CeilingDecision {
  /** Whether the prompt plus margins fits the ceiling (false → reject before any upstream call). */
  fits: boolean
  /**
   * The token figure before margins: the family bound (`count`), the UTF-8 bytes (`bytes`, an upper
   * bound), or, for `early-exit`, the family bound of the text read when counting stopped (more
   * text followed).
   */
  estimatedTokens: number
  /** `Σ_class ceil(figure × (1 + margin)) + templateOverhead + guardTokens` — compared with the ceiling. */
  adjustedTokens: number
  /** The ceiling compared against (prompt tokens, output reserve already taken off). */
  ceiling: number
  /** How the decision was reached (cheapest first). */
  method: 'bytes' | 'count' | 'early-exit'
  /** Whether `estimatedTokens` is the complete family estimate (every pre-token counted whole). */
  exact: boolean
  /**
   * Per script class present: on the count path the family figures, on the bytes path the class's
   * UTF-8 bytes as `bound` (`lower` and `o200k` 0: nothing was counted).
   */
  classes: Partial<Record<ScriptClass, ClassFigures>>
  /** The classes that contribute most to `adjustedTokens`, largest first (for the error message). */
  drivers: ScriptClass[]
}

/**
 * The prompt-token ceiling for a model: the smaller of its advertised window and its real KV pool
 * (which can be far smaller than the window), less the output reserve.
 *
 * @example
 * ceilingFor({ contextWindow: 1_048_576, kvPoolTokens: 681_280 }, 4_096) // 677_184
 */
export function ceilingFor(
  profile: { contextWindow: number; kvPoolTokens: number },
  outputReserve: number,
): number {
  return Math.min(profile.contextWindow, profile.kvPoolTokens) - outputReserve
}

/**
 * `1 + margin` per class id, validated: a margin that is not a finite number ≥ 0 is a bug in the
 * caller (calibration or options), so it throws rather than guessing.
 */
function charges(margins: Margins): Float64Array {
  // A loop, not `Float64Array.from(SCRIPT_CLASSES, …)`: that iterates through the generic protocol,
  // which showed in a profile of 1k-token requests.
  const charge = new Float64Array(SCRIPT_CLASSES.length)
  for (let c = 0; c < SCRIPT_CLASSES.length; c++) {
    const name = SCRIPT_CLASSES[c]!
    const margin = margins(name)
    if (!Number.isFinite(margin) || margin < 0) {
      throw new RangeError(`margin for ${name} must be a finite number ≥ 0, got ${margin}`)
    }
    charge[c] = 1 + margin
  }
  return charge
}

/** Σ over classes of `ceil(figure × charge)`. */
function chargedTotal(figures: Float64Array, charge: Float64Array): number {
  let total = 0
  for (let c = 0; c < figures.length; c++) {
    const figure = figures[c] ?? 0
    if (figure > 0) total += Math.ceil(figure * (charge[c] ?? 1))
  }
  return total
}

/** Share of the charged text figure below which a class is not named as a driver. */
const DRIVER_SHARE = 0.1

function driversOf(
  classes: Partial<Record<ScriptClass, ClassFigures>>,
  charge: Float64Array,
): ScriptClass[] {
  const charged: { name: ScriptClass; tokens: number }[] = []
  for (let c = 0; c < SCRIPT_CLASSES.length; c++) {
    const name = SCRIPT_CLASSES[c]!
    const bound = classes[name]?.bound
    if (bound === undefined) continue
    const tokens = Math.ceil(bound * (charge[c] ?? 1))
    if (tokens > 0) charged.push({ name, tokens })
  }
  const total = charged.reduce((sum, entry) => sum + entry.tokens, 0)
  charged.sort((a, b) => b.tokens - a.tokens)
  const named = charged.filter((entry, i) => i === 0 || entry.tokens >= total * DRIVER_SHARE)
  return named.slice(0, 3).map((entry) => entry.name)
}

/**
 * UTF-8 bytes per class of every text; a text that NFC changes counts the larger of its own and its
 * NFC form's bytes per class (Qwen3 tokenizes the NFC form, which can be up to 3× longer).
 */
function classBytes(texts: readonly string[]): Float64Array {
  const total = new Float64Array(SCRIPT_CLASSES.length)
  for (const text of texts) {
    const sent = new Float64Array(SCRIPT_CLASSES.length)
    let normalized = sent
    if (addClassBytes(text, sent) >= NFC_STABLE_BELOW) {
      const nfc = text.normalize('NFC')
      if (nfc !== text) {
        normalized = new Float64Array(SCRIPT_CLASSES.length)
        addClassBytes(nfc, normalized)
      }
    }
    for (let c = 0; c < total.length; c++) {
      total[c] = (total[c] ?? 0) + Math.max(sent[c] ?? 0, normalized[c] ?? 0)
    }
  }
  return total
}

/**
 * Decides whether `pieces` fits `ceiling` with a margin per script class on top of the family
 * bound, cheapest bound first; the tokenizer is loaded only when bytes cannot decide, and counting
 * stops as soon as the charged figure passes the ceiling. `known` gives, when the count is needed,
 * what is remembered of the texts (src/core/memo): a text's figures are the same remembered or counted.
 *
 * @example
 * const margins: Margins = (cls) => Math.max(profile.tokenizerDrift, learned[cls] ?? 0)
 * const d = await decideCeiling(promptPieces(inputs), ceilingFor(profile, reserve), margins)
 * if (!d.fits) throw new GuardError('context_length_exceeded', `mostly ${d.drivers[0]} text`)
 */
export async function decideCeiling(
  pieces: PromptPieces,
  ceiling: number,
  margins: Margins,
  known?: () => Promise<TextFacts<TextTally> | undefined>,
): Promise<CeilingDecision> {
  if (!Number.isFinite(ceiling)) throw new RangeError(`ceiling must be finite, got ${ceiling}`)
  const charge = charges(margins)
  // The guard's own additions are charged as their byte bound (see PromptPieces.guardTokens).
  const overhead = templateOverhead(pieces) + (pieces.guardTokens ?? 0)
  const limits = { ceiling, overhead, charge }
  const decide = (figures: DecisionFigures) => decision(figures, limits)
  // Only the fixed overhead would already overflow: no count can change the answer.
  if (overhead > ceiling) {
    return decide({
      estimatedTokens: 0,
      charged: 0,
      method: 'early-exit',
      exact: false,
      classes: {},
    })
  }
  let smallest = Number.POSITIVE_INFINITY
  for (const c of charge) smallest = Math.min(smallest, c)
  let units = 0
  for (const text of pieces.texts) units += text.length
  // bytes ≥ UTF-16 units, so a longer text cannot pass the byte bound: skip measuring it.
  if (Math.ceil(units * smallest) + overhead <= ceiling) {
    const bytes = classBytes(pieces.texts)
    const charged = chargedTotal(bytes, charge)
    if (charged + overhead <= ceiling) {
      const { classes, total } = byteClasses(bytes)
      return decide({
        estimatedTokens: total,
        charged,
        method: 'bytes',
        exact: total === 0,
        classes,
      })
    }
  }
  const scan = await scanFamily(pieces.texts, charge, ceiling - overhead, await known?.())
  return decide({
    estimatedTokens: scan.bound,
    charged: scan.charged,
    method: scan.within ? 'count' : 'early-exit',
    exact: scan.exact,
    classes: scan.classes,
  })
}

/** A decision's figures before the template overhead: `charged` is the estimate with its margins. */
type DecisionFigures = Pick<CeilingDecision, 'estimatedTokens' | 'method' | 'exact' | 'classes'> & {
  charged: number
}

/** The decision of `figures` against the ceiling, the overhead added. */
function decision(
  { estimatedTokens, charged, method, exact, classes }: DecisionFigures,
  { ceiling, overhead, charge }: { ceiling: number; overhead: number; charge: Float64Array },
): CeilingDecision {
  const adjustedTokens = charged + overhead
  return {
    fits: method !== 'early-exit' && adjustedTokens <= ceiling,
    estimatedTokens,
    adjustedTokens,
    ceiling,
    method,
    exact,
    classes,
    drivers: driversOf(classes, charge),
  }
}

/** The byte bound's figures per class present, and their total. */
function byteClasses(bytes: ArrayLike<number>): {
  classes: Partial<Record<ScriptClass, ClassFigures>>
  total: number
} {
  const classes: Partial<Record<ScriptClass, ClassFigures>> = {}
  let total = 0
  for (let c = 0; c < bytes.length; c++) {
    const b = bytes[c] ?? 0
    if (b > 0) classes[SCRIPT_CLASSES[c] ?? 'other'] = { bound: b, lower: 0, o200k: 0 }
    total += b
  }
  return { classes, total }
}

/**
 * How much finer than English the reference family splits a class's text: the family bound per o200k
 * token on ordinary text of that class over English's (both measured by scripts/measure-tokenizers).
 *
 * @example
 * await finerThanEnglish('georgian') // ≈ 6.8
 */
export async function finerThanEnglish(cls: ScriptClass): Promise<number> {
  const family = await loadFamily()
  return (family.typical[SCRIPT_CLASSES.indexOf(cls)] ?? 1) / family.english
}
