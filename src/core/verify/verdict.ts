/**
 * @module One verdict from every signal: release, retry, or quarantine — with reasons and a score.
 *
 * | signal (alone)                                   | action     | why                                            |
 * |--------------------------------------------------|------------|------------------------------------------------|
 * | foreign canary (verifies, not this request's)     | quarantine | proof: another request's prompt is in the answer |
 * | another request's secret stand-in (MAC verifies)  | quarantine | the same proof (src/plugins/secrets): never restored    |
 * | another tenant's recent prompt text in the answer | quarantine | a run of its fingerprints no chance quote or     |
 * |   (a run of its fingerprints, not in this prompt)  |            | boilerplate makes (docs/fingerprints.md)         |
 * | first token faster than any real prefill         | quarantine | the prompt was not read (placeholder path)      |
 * | reported prompt tokens below the lower estimate  | quarantine | the engine read less than was sent (truncation) |
 * | echo missing + any signal above                  | quarantine | two independent signs                           |
 * | echo missing + cache report the tenant's history | quarantine | two signs: under per-tenant cache isolation the |
 * |   does not explain (only it excused the timing)  |            | report alone is not proof (the tenant's earlier |
 * |                                                  |            | prompts may have gone through another isolate)  |
 * | that cache report alone                          | release    | noted as `cache_unexplained` in the verdict log |
 * | echo missing, nothing else wrong                 | retry      | a lone instruction slip is common (≈2%); a     |
 * |                                                  |            | retry is cheap and, unlike releasing, never     |
 * |                                                  |            | lets a stale or truncated answer out            |
 * | echo missing again after the allowed retries     | quarantine | systematic: truncation or stale pages repeat    |
 * | echo missing after bytes were released (`async`)  | quarantine | no retry can take the released bytes back       |
 * | output limit reached before the echo could come  | refuse     | unverifiable, and a retry would end the same    |
 * |                                                  |            | way: withheld, a 400 telling the client to      |
 * |                                                  |            | raise max_tokens — a client error, no incident  |
 * | echo verified or not required, nothing else      | release    |                                                 |
 *
 * Observe mode (the operator's `observe` option, never a request's): a quarantine above whose every
 * reason is a judgement of an observed check (content, timing, echo) becomes a release marked
 * `observed`, recorded as the incident it would have been. Proof is never observed.
 *
 * The score (0–1) orders incidents for review: it is the strongest single piece of evidence, not a
 * threshold — any quarantine rule above is sufficient on its own.
 */
import type {
  ObservableCheck,
  Observe,
  Reason,
  Signals,
  Verdict,
} from '../vocabulary/verdict-types'

export type { EchoOutcome, Reason, Signals, Verdict } from '../vocabulary/verdict-types'

const WEIGHT: Record<Reason, number> = {
  foreign_canary: 1,
  foreign_stand_in: 1,
  foreign_content: 0.95,
  ttft_impossible: 0.9,
  usage_undercount: 0.8,
  echo_missing_repeatedly: 0.6,
  echo_missing: 0.4,
  echo_cut_off: 0.3,
  cache_unexplained: 0.5,
}

/**
 * The engine reports reading fewer tokens than the guard's lower estimate: no tokenizer of the model's
 * generation counts the prompt that low (see src/core/ceiling/estimate.ts), while silent truncation drops
 * far more (a prompt cut to a 681,280-token pool from a 1,048,576-token window keeps 65% of it).
 */
/** The check each reason belongs to; proof and the client's own limit are never observed. */
const CHECK: Record<Reason, ObservableCheck | undefined> = {
  foreign_canary: undefined,
  foreign_stand_in: undefined,
  foreign_content: 'content',
  ttft_impossible: 'timing',
  usage_undercount: 'timing',
  cache_unexplained: 'timing',
  echo_missing: 'echo',
  echo_missing_repeatedly: 'echo',
  echo_cut_off: undefined,
}

/**
 * Combines the signals into one verdict (see the module table). Under `observe`, a quarantine whose
 * every reason belongs to an observed check is released instead, marked `observed`; one enforced
 * reason among them (proof above all) keeps it withheld.
 *
 * @example
 * decide({ echo: 'echoed', foreignCanaries: 0, attempt: 1, retries: 1 }).action // 'release'
 */
export function decide(signals: Signals, observe?: Observe): Verdict {
  const verdict = enforced(signals)
  if (!observe || verdict.action !== 'quarantine') return verdict
  const observed = verdict.reasons.every((reason) => {
    const check = CHECK[reason]
    return check !== undefined && observe[check]
  })
  return observed ? { ...verdict, action: 'release', observed: true } : verdict
}

/** The verdict with every check enforced. */
function enforced(signals: Signals): Verdict {
  const hard: Reason[] = []
  if (signals.foreignCanaries > 0) hard.push('foreign_canary')
  if ((signals.foreignStandIns ?? 0) > 0) hard.push('foreign_stand_in')
  if (signals.foreignContent) hard.push('foreign_content')
  if (signals.timing?.impossible) hard.push('ttft_impossible')
  if (signals.usage && signals.usage.reported < signals.usage.lower) {
    hard.push('usage_undercount')
  }
  if (hard.length > 0) {
    const reasons = signals.echo === 'missing' ? [...hard, 'echo_missing' as const] : hard
    return { action: 'quarantine', reasons, score: score(reasons) }
  }
  const soft: Reason[] = signals.timing?.unexplainedCachedTokens ? ['cache_unexplained'] : []
  if (soft.length > 0 && signals.echo === 'missing') {
    const reasons: Reason[] = [...soft, 'echo_missing']
    return { action: 'quarantine', reasons, score: score(reasons) }
  }
  if (signals.echo === 'cut-off') {
    // Unverifiable, and a retry would be cut off the same way: withhold, and tell the client why. Not
    // an incident: nothing points at a leak, and `max_tokens: 1` must not flood the review queue.
    return { action: 'refuse', reasons: ['echo_cut_off'], score: WEIGHT.echo_cut_off }
  }
  if (signals.echo === 'missing') {
    if (signals.phase === 'released') {
      return { action: 'quarantine', reasons: ['echo_missing'], score: WEIGHT.echo_missing }
    }
    if (signals.attempt <= signals.retries) {
      return { action: 'retry', reasons: ['echo_missing'], score: WEIGHT.echo_missing }
    }
    const reasons: Reason[] = ['echo_missing_repeatedly']
    return { action: 'quarantine', reasons, score: score(reasons) }
  }
  return { action: 'release', reasons: soft, score: soft.length > 0 ? score(soft) : 0 }
}

/**
 * The verdict on what a stream shows after its first bytes left: another request's canary, stand-in
 * or prompt text, or the echo an `async` release was owed and never got.
 *
 * @example
 * decideReleased({ foreignCanaries: 1 }) // quarantine, ['foreign_canary']
 * decideReleased({ echo: 'missing' }) // quarantine, ['echo_missing']: too late to retry
 */
export function decideReleased(
  found: Partial<Pick<Signals, 'echo' | 'foreignCanaries' | 'foreignStandIns' | 'foreignContent'>>,
  observe?: Observe,
): Verdict {
  return decide(
    { echo: 'echoed', foreignCanaries: 0, ...found, attempt: 1, retries: 0, phase: 'released' },
    observe,
  )
}

function score(reasons: Reason[]): number {
  return Math.max(0, ...reasons.map((r) => WEIGHT[r]))
}
