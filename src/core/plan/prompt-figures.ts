/**
 * @module What verification may need of a prompt beyond the ceiling's decision — the family estimate,
 * the tenant's prefix record, the memo's digests — each computed once, on first need. Lazy on purpose:
 * a prompt the byte bound admitted is counted only if its verdict reads the count (a maximal English
 * prompt: byte bound 8.0 ms, family estimate 94.6 ms, median; bench/results/prompt-cpu.json).
 */
import { estimateTexts, type PromptEstimate, type TextTally } from '../ceiling/estimate'
import type { PromptPieces } from '../ceiling/prompt'
import type { ScriptClass } from '../ceiling/script'
import { memoSlot, type RequestMemo, type TextFacts } from '../memo/text-memo'
import { PrefixRecord } from '../timing/prefix-record'
import type { PlanEstimate, PrefixLookup } from '../vocabulary/request-facts'
import type { Admission } from './preflight'

/** A remembered text's family count (src/core/memo). */
const TALLIES = memoSlot<TextTally>('family tally')

/**
 * The memo's reading of a prompt's long texts: their digests (taken once), then what this tenant's
 * earlier requests computed of them. Made before the ceiling decides, which may read it.
 *
 * @example
 * const memory = new PromptMemory(memo, pieces)
 * const admission = await admit({ …, known: memory.known })
 */
export class PromptMemory {
  readonly #memo: RequestMemo | undefined
  readonly #texts: readonly string[]
  #remembered: Promise<void> | undefined
  /** The remembered family counts, once the digests are taken; undefined when nothing is remembered. */
  readonly known: (() => Promise<TextFacts<TextTally>>) | undefined

  constructor(memo: RequestMemo | undefined, pieces: PromptPieces) {
    this.#memo = memo
    this.#texts = pieces.texts
    this.known = memo && (() => this.remembered().then(() => memo.facts(TALLIES)))
  }

  /** Digests the prompt's long texts for the memo (once: after the call has left, or when first needed). */
  remembered(): Promise<void> {
    this.#remembered ??= this.#memo?.know(this.#texts) ?? Promise.resolve()
    return this.#remembered
  }
}

/** Where a prompt's prefix record is kept, and the key of this tenant's record for its model. */
interface PrefixPlace {
  prefixes: PrefixRecord
  key: string
}

/**
 * A request's lazily computed figures: the family estimate (unless the ceiling already counted) and
 * the tenant's prefix record, each once, on first need.
 *
 * @example
 * const figures = new PromptFigures({ admission, pieces, memory }, { prefixes, key })
 * const { lower } = await figures.estimate()
 */
export class PromptFigures {
  readonly #admission: Admission
  readonly #pieces: PromptPieces
  readonly #memory: PromptMemory
  readonly #place: PrefixPlace
  #estimate: Promise<PlanEstimate> | undefined
  #prefix: Promise<PrefixLookup> | undefined

  constructor(
    prompt: { admission: Admission; pieces: PromptPieces; memory: PromptMemory },
    place: PrefixPlace,
  ) {
    this.#admission = prompt.admission
    this.#pieces = prompt.pieces
    this.#memory = prompt.memory
    this.#place = place
  }

  /** Digests the prompt's long texts for the memo (see {@link PromptMemory.remembered}). */
  remembered(): Promise<void> {
    return this.#memory.remembered()
  }

  /** The family estimate, template overhead included (counted once, on first need). */
  estimate(): Promise<PlanEstimate> {
    this.#estimate ??= this.#count()
    return this.#estimate
  }

  /** The tenant's prefix record for this prompt (hashed once, on first need). */
  prefix(): Promise<PrefixLookup> {
    this.#prefix ??= this.#lookup()
    return this.#prefix
  }

  async #count(): Promise<PlanEstimate> {
    const admission = this.#admission
    let e = admission.estimate
    if (!e) e = await estimateTexts(this.#pieces.texts, await this.#memory.known?.())
    return { ...e, overhead: admission.overhead, dominant: dominantClass(e) }
  }

  /** What the tenant's own verified prompts say the engine may have cached of this one. */
  async #lookup(): Promise<PrefixLookup> {
    const texts = this.#pieces.texts
    // One text is digested as it is: joining even one copies it whole (3 MB for a maximal prompt).
    const digest = await PrefixRecord.digest(texts.length === 1 ? texts[0]! : texts.join('\n'))
    const found = this.#place.prefixes.lookup(this.#place.key, digest)
    const cachedTokens =
      found.matchedChars === 0
        ? 0
        : Math.floor(((await this.estimate()).lower * found.matchedChars) / found.totalChars)
    return { digest, cachedTokens }
  }
}

function dominantClass(estimate: PromptEstimate): ScriptClass {
  let best: ScriptClass = 'latin'
  let most = -1
  for (const [cls, figures] of Object.entries(estimate.classes) as [
    ScriptClass,
    { bound: number },
  ][]) {
    if (figures.bound > most) {
      most = figures.bound
      best = cls
    }
  }
  return best
}
