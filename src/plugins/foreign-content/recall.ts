/**
 * @module The second opinion's request (src/plugins/foreign-content/second-opinion.ts says why it is asked): a short,
 * clean-room continuation of an answer's own text, sent through the guard like any request — its
 * canary echoed, its timing checked, any other request's canary in it withheld — under a tenant of its
 * own (a fresh cache salt or prefix marker), never printed into the foreign-content book, and bounded
 * per source tenant so that nobody can make the guard call the engine at will by pasting what the
 * model is likely to write.
 */

import type { Recall, RecallOptions } from '../../core'
import { CANARY_PATTERN, readTexts } from '../../core'

/** What the model is asked: its own continuation of the cue, word for word, and nothing else. */
const INSTRUCTION =
  'Continue the <text> word for word from where it stops. Write only the continuation, or "unknown".'

/**
 * Characters of the request's own question given as the cue's context. With the instruction, the
 * default 160-character cue and the echo directive, a second opinion is about 150 tokens: no page
 * lies between the pages that hold its first and last tokens at 64-token pages (docs/fingerprints.md).
 */
const QUESTION_CHARS = 120

/**
 * A cue no answer continues: the second opinion's control. What the model writes after it as well is
 * not recall of the answer's cue — an engine that answers the same whatever it is asked (stale reads
 * that repeat, a cache keyed on the wrong thing) clears nothing.
 */
const DECOY = {
  text: 'The ledger of the lighthouse at Kerrow Point, kept by its third keeper, lists ',
  head: 'four lamps, eleven coils of rope and a barometer that',
}

/** Sources the budget remembers at once (the least recently charged are forgotten first). */
const MAX_SOURCES = 10_000

/**
 * The chat inputs of one second opinion: the instruction and the cue. Canaries in the cue (the
 * answer's echo of its own) are cut: the engine's copy of one would read as another request's.
 */
function recallInputs(
  cue: { text: string; head: string },
  maxTokens: number,
  question = '',
): Record<string, unknown> {
  const text = `${cue.text}${cue.head}`.replace(CANARY_PATTERN, '').trimStart()
  const asked = question.replace(CANARY_PATTERN, '').trim().slice(0, QUESTION_CHARS)
  const context = asked === '' ? '' : `The text was written in answer to: ${asked}\n\n`
  return {
    messages: [
      { role: 'system', content: INSTRUCTION },
      { role: 'user', content: `${context}<text>${text}</text>` },
    ],
    max_tokens: maxTokens,
    temperature: 0,
  }
}

/**
 * Second opinions per source tenant and model: a bucket of `perSourcePerHour`, refilled evenly over
 * the hour. Bounded in memory; a source forgotten starts with a full bucket, which only ever allows
 * what its own budget would have.
 */
export class RecallBudget {
  readonly #perHour: number
  readonly #now: () => number
  readonly #buckets = new Map<string, { tokens: number; at: number }>()

  constructor(perHour: number, now: () => number) {
    this.#perHour = perHour
    this.#now = now
  }

  /**
   * Takes one second opinion from the source's bucket; false when it is empty.
   *
   * @example
   * if (!budget.take(model, source)) return undefined
   */
  take(model: string, source: string): boolean {
    const key = `${model}\u0000${source}`
    const now = this.#now()
    const bucket = this.#buckets.get(key) ?? { tokens: this.#perHour, at: now }
    const refill = ((now - bucket.at) / 3_600_000) * this.#perHour
    bucket.tokens = Math.min(this.#perHour, bucket.tokens + Math.max(0, refill))
    bucket.at = now
    this.#buckets.delete(key)
    this.#buckets.set(key, bucket)
    if (this.#buckets.size > MAX_SOURCES) {
      this.#buckets.delete(this.#buckets.keys().next().value!)
    }
    if (bucket.tokens < 1) return false
    bucket.tokens--
    return true
  }
}

/**
 * The request's own last question (its stand-ins, never its secrets): what tells the model which of
 * the texts it knows an answer recites. The request's own text: no other tenant's is in it.
 *
 * @example
 * lastQuestion({ messages: [{ role: 'user', content: 'Recite the Gettysburg Address.' }] })
 */
export function lastQuestion(inputs: Record<string, unknown>): string {
  const messages = Array.isArray(inputs.messages) ? (inputs.messages as unknown[]) : []
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown } | null
    if (m?.role !== 'user') continue
    if (typeof m.content === 'string') return m.content
    if (Array.isArray(m.content)) {
      return m.content
        .map((part) => (part as { text?: unknown } | null)?.text)
        .filter((text): text is string => typeof text === 'string')
        .join('\n')
    }
  }
  return typeof inputs.prompt === 'string' ? inputs.prompt : ''
}

/** What a second opinion needs of the guard: a clean request run through it, and the print key. */
export interface RecallHost {
  /** Runs a second opinion's request through the guard (never printed, never asked again). */
  ask(tenant: string, inputs: Record<string, unknown>): Promise<unknown>
  /** The fingerprints of every shingle of `said` that `given` does not hold. */
  recalled(said: readonly string[], given: readonly string[]): Set<number>
  budget: RecallBudget
  model: string
  requestId: string
  /** The request's own last question (see {@link lastQuestion}). */
  question: string
}

/**
 * The second opinion of one request's answers.
 *
 * @example
 * const recall = recallFor(host, settings)
 * const recalled = await recall.ask(cue, 'globex')
 */
export function recallFor(host: RecallHost, settings: Required<RecallOptions>): Recall {
  let asked = 0
  const continuation = async (
    tenant: string,
    cue: { text: string; head: string },
  ): Promise<Set<number>> => {
    // The control gets the question too: what the question alone makes the model write is not recall.
    const inputs = recallInputs(cue, settings.maxTokens, host.question)
    const { texts } = readTexts(await host.ask(tenant, inputs))
    // Read on from the head: a shingle that joins the cue's last words to the model's first is the
    // model's writing too, and tells whether it went on from exactly where the cue stops.
    const said = [`${cue.head}${texts.content ?? ''}`, texts.reasoning ?? '']
    for (const [channel, text] of Object.entries(texts)) {
      if (channel !== 'content' && channel !== 'reasoning') said.push(text ?? '')
    }
    return host.recalled(
      said,
      (inputs.messages as { content: string }[]).map((m) => m.content),
    )
  }
  return {
    cueChars: settings.cueChars,
    ask: async (cue, source) => {
      if (!host.budget.take(host.model, source)) return undefined
      // Tenants of their own: no cache shared with anyone, and an incident (if any) of their own.
      const tenant = `guard-recall:${host.requestId}:${++asked}`
      try {
        const [recalled, control] = await Promise.all([
          continuation(tenant, cue),
          continuation(`${tenant}:control`, DECOY),
        ])
        for (const print of control) recalled.delete(print)
        return recalled
      } catch {
        // Withheld, refused or failed: no opinion, and the evidence stands.
        return undefined
      }
    },
  }
}
