/**
 * @module The second opinion before an answer is withheld for foreign content alone.
 *
 * A run of another tenant's fingerprints is evidence that the answer carries that tenant's prompt
 * text — or that the model wrote what it knows by heart (a scaffold, a classic, a footer) and one
 * other tenant happened to paste it. No list of texts tells the two apart; the model can. The guard
 * asks it to continue the answer's own text from just before the run, in a short clean-room request
 * (src/plugins/foreign-content/recall.ts): nothing of the source's text but the run's first shingle, the other matches
 * cut out, too short to have middle pages to go stale, with its own canary verified. What the model
 * writes again of the run it knows; a stale read cannot be reproduced from a prompt that does not
 * hold it. Only what it recalled is excused: private values inside known text still make a run.
 */

import type { Recall } from '../../core'
import type { ForeignContent } from './content-watch'

/** What the second opinion needs of an answer's watch (./content-check.ts `ContentHold`). */
export interface OpinionHold {
  evidence(headPrints?: number): ForeignContent | undefined
  cue(found: ForeignContent, chars: number): { text: string; head: string } | undefined
  excuse(prints: ReadonlySet<number>, found: ForeignContent): 'cleared' | 'partial' | 'none'
  /** Second opinions asked for this answer so far. */
  opinions: number
}

/** Second opinions one answer may ask for before its evidence stands. */
const MAX_OPINIONS = 3

/**
 * The run's fingerprints given as the cue's end: two, then four when the model did not write most of
 * the run again from two (a phrase many texts share — a manual's `--help` line, a generated stanza —
 * does not tell it which text it is in). Both are short of the k = 6 of evidence.
 */
const HEADS = [2, 4] as const

/**
 * The evidence that still stands once the model has been asked about it (undefined: none does). At
 * most {@link MAX_OPINIONS} per answer; without a second opinion to ask (off, over its budget, the
 * answer's text not kept) the evidence stands as found.
 *
 * @example
 * const found = await secondOpinion(ctx, hold)
 * if (found) quarantine(found)
 */
export async function secondOpinion(
  ctx: { recall: Recall | undefined },
  hold: OpinionHold,
): Promise<ForeignContent | undefined> {
  const recall = ctx.recall
  let head = 0
  for (;;) {
    const found = hold.evidence(HEADS[head])
    if (found === undefined || recall === undefined) return found
    if (hold.opinions >= MAX_OPINIONS) return found
    const cue = hold.cue(found, recall.cueChars)
    if (cue === undefined) return found
    hold.opinions++
    const recalled = await recall.ask(cue, found.source)
    if (recalled === undefined) return found
    // Cleared: what stands of the run (if anything) is asked about from its new start.
    if (hold.excuse(recalled, found) === 'cleared') head = 0
    else if (++head === HEADS.length) return hold.evidence()
  }
}
