/**
 * @module The guard's book of recent prompts for the foreign-content check: each guarded prompt's
 * fingerprints go into the isolate's table (and, with a store, to every other isolate), and each
 * answer is watched against what every other tenant sent.
 *
 * Released, echo-verified answers are recorded too, under the model's answers (`answersOf`): words the
 * model has said to one tenant are its own words when they turn up in another's answer, so a tenant
 * that stuffs its prompts with what the model commonly says cannot get other tenants' answers withheld
 * (once anyone has been told those words).
 *
 * A prompt is registered the moment its upstream call is made — from then on its pages can turn up in
 * another tenant's answer — and printed once the call has left (the hashing runs while the engine
 * prefills instead of delaying the send) or as soon as any answer is checked, whichever is first: no
 * lookup ever misses a prompt whose call was made before it. A shared store is read before each answer
 * is judged, so a prompt guarded in another isolate a moment ago is already in this one's table.
 */

import { type CanaryKey, contentSeed, memoSlot, type RequestMemo, type StoreGap } from '../../core'
import type { ResolvedForeignContent } from './content-settings'
import { answersOf, ContentWatch } from './content-watch'
import { type FingerprintKey, fingerprintKey } from './hash'
import { type PromptPrint, printPrompt, type TextPrint } from './prompt-print'
import { PUBLIC_UDHR } from './public-udhr'
import { FingerprintTable } from './table'

/** A remembered text's print (src/core/memo). */
const PRINTS = memoSlot<TextPrint>('print')

/** When a remembered text's fingerprints last went into this isolate's table, per model. */
type AddedMarks = Map<string, { at: number; rotations: number }>
const ADDED = memoSlot<AddedMarks>('added')

/**
 * How recently a resent text's fingerprints must have gone into the table to be left there as they
 * are, at most: they stay visible for the ttl from then, so at least ttl − this from the last send.
 */
const MAX_REFRESH_MS = 60_000

/** One request's prompt in the book (the plug-in's face wraps it for the core: ../fingerprint/content-plugin.ts). */
export interface BookPrompt {
  /** A fresh watch over one answer, once the shared store has been read for this request. */
  watch(): Promise<ContentWatch>
  /** A released, echo-verified answer: its words become known as the model's (see `answersOf`). */
  learn(watch: ContentWatch): void
  /** What this request's read of the shared store missed (said in the verdict, never excused). */
  gap(): Promise<StoreGap>
}

/** Whose prompt is printed (a model, or its answers), and the host's `waitUntil` for store writes. */
interface PrintOwner {
  model: string
  tenant: string
  waitUntil: ((promise: Promise<unknown>) => void) | undefined
}

/** A prompt to print: its texts (read on first need), the tenant's memo, its own assistant turns. */
interface PromptSource {
  texts: () => readonly string[]
  memo?: RequestMemo | undefined
  said?: () => readonly string[]
}

/** The isolate's fingerprint table and its link to the shared store. */
export class FingerprintBook {
  readonly table: FingerprintTable
  readonly #settings: ResolvedForeignContent
  readonly #key: () => Promise<CanaryKey>
  readonly #now: () => number
  #fingerprintKey: Promise<FingerprintKey> | undefined
  #printKey: FingerprintKey | undefined
  #public: ReadonlySet<number> | undefined
  /** Per model: how far this isolate has read the store. */
  readonly #cursors = new Map<string, string>()
  /** When a store failure was last logged (at most one line a minute). */
  #warnedAt = Number.NEGATIVE_INFINITY

  constructor(settings: ResolvedForeignContent, key: () => Promise<CanaryKey>, now: () => number) {
    this.#settings = settings
    this.#key = key
    this.#now = now
    this.table = new FingerprintTable(settings.table)
  }

  /**
   * Derives the key prompts are printed with (once per isolate; before `print`).
   *
   * @example
   * await book.ready()
   */
  async ready(): Promise<void> {
    this.#printKey ??= await this.#hashKey()
  }

  /**
   * Registers one prompt (its texts: see src/core/plan/prompt-texts.ts) of `tenant`, whose call is out. It
   * is printed and put in this isolate's table when the returned function is first called, or before
   * any answer's next lookup here, whichever comes first (`FingerprintTable.defer`): the caller can let
   * the call leave before the hashing runs, and no answer is ever checked without it. The store's read
   * starts now and its publish on the first call of the returned function: both are this request's
   * I/O, never started by another request's lookup (workerd ties I/O to the request that starts it).
   * With the request's `memo`, a text of the tenant's that was printed before is taken from there
   * (once the memo is ready: a print forced before that is made afresh, which is slower and the same).
   *
   * `said` gives the request's assistant turns: its own text for the answer's check, never the
   * tenant's in the table.
   *
   * @example
   * await book.ready()
   * const owner = { model, tenant, waitUntil: ctx.waitUntil }
   * const printed = book.print(owner, { texts: () => promptTexts(inputs), memo })
   * setTimeout(printed, 0)
   * const watch = await printed().watch()
   */
  print(owner: PrintOwner, prompt: PromptSource): () => BookPrompt {
    const { model } = owner
    const { texts, memo, said = () => [] } = prompt
    const key = this.#printKey
    if (key === undefined) throw new Error('FingerprintBook: print before ready()')
    const read = Promise.all([this.#readStore(model), this.#readStore(answersOf(model))]).then(
      ([prompts, answers]) => joinGaps(prompts, answers),
    )
    const local = this.table.defer(() => {
      const print = printPrompt(key, texts(), this.#settings.params, memo?.facts(PRINTS))
      const at = this.#now()
      return { print, at, added: this.#record(owner, print, at, memo) }
    })
    let printed: BookPrompt | undefined
    return () => {
      if (printed) return printed
      const { print, at, added } = local()
      this.#share(owner, added, at)
      printed = this.#printed(key, owner, ownText(key, print, said(), this.#settings), read)
      return printed
    }
  }

  /**
   * Puts a prompt's fingerprints in the table, but a remembered text's that went in a moment ago (and
   * are still held) are left as they are: a conversation resends its history every turn, and adding
   * it again would only move its time. Returns what was added (what other isolates must be told).
   */
  #record(
    { model, tenant }: PrintOwner,
    print: PromptPrint,
    at: number,
    memo: RequestMemo | undefined,
  ): number[] {
    const marks = memo?.facts(ADDED)
    const refreshMs = Math.min(MAX_REFRESH_MS, this.#settings.table.ttlMs / 60)
    const added: number[] = []
    for (const group of print.groups) {
      if (group.selected.length === 0) continue
      const text = group.text
      const mark = text === undefined ? undefined : marks?.get(text)?.get(model)
      if (mark && mark.rotations === this.table.rotations && at - mark.at < refreshMs) continue
      this.table.add(model, tenant, group.selected, at)
      for (const hash of group.selected) added.push(hash)
      if (text === undefined || !marks) continue
      const entry = marks.get(text)
      const next = { at, rotations: this.table.rotations }
      if (entry) entry.set(model, next)
      else marks.keep(text, new Map([[model, next]]), 64 + 2 * model.length)
    }
    return added
  }

  #printed(
    key: FingerprintKey,
    { model, tenant, waitUntil }: PrintOwner,
    own: Pick<PromptPrint, 'contains'>,
    read: Promise<StoreGap>,
  ): BookPrompt {
    const params = this.#settings.params
    const answers = answersOf(model)
    return {
      gap: () => read,
      watch: async () => {
        await read
        return new ContentWatch({
          key,
          table: this.table,
          model,
          tenant,
          own,
          now: this.#now,
          params,
          answers,
          publicPrints: this.#publicPrints(key),
        })
      },
      learn: (watch) => {
        const hashes = watch.selections()
        const at = this.#add(answers, tenant, hashes)
        this.#share({ model: answers, tenant, waitUntil }, hashes, at)
      },
    }
  }

  /** Records fingerprints under `model` (a model, or its answers) in this isolate's table; when. */
  #add(model: string, tenant: string, hashes: number[]): number {
    const at = this.#now()
    if (hashes.length !== 0) this.table.add(model, tenant, hashes, at)
    return at
  }

  /** Publishes fingerprints recorded here to the shared store, for every other isolate. */
  #share({ model, tenant, waitUntil }: PrintOwner, hashes: number[], at: number): void {
    const { store } = this.#settings
    if (!store || hashes.length === 0) return
    const published = store
      .publish({ model, tenant, at, hashes })
      .catch((error: unknown) => this.#storeFailed('publish', error))
    waitUntil?.(published)
  }

  /**
   * The fingerprints of every shingle of `said` that `given` does not hold: what a model wrote of its
   * own in a second opinion (src/plugins/foreign-content/recall.ts), to excuse in an answer's watch. After `ready()`.
   *
   * @example
   * const recalled = book.recalled([continuation], [cue])
   */
  recalled(said: readonly string[], given: readonly string[]): Set<number> {
    const key = this.#printKey
    if (key === undefined) throw new Error('FingerprintBook: recalled before ready()')
    // A window of one selects every shingle.
    const every = { n: this.#settings.params.n, w: 1 }
    const cued = new Set(printPrompt(key, given, every).selected)
    const out = new Set<number>()
    for (const print of printPrompt(key, said, every).selected) if (!cued.has(print)) out.add(print)
    return out
  }

  #hashKey(): Promise<FingerprintKey> {
    this.#fingerprintKey ??= this.#key().then(async (key) => fingerprintKey(await contentSeed(key)))
    return this.#fingerprintKey
  }

  /**
   * The public texts as fingerprints: the operator's and the built-in licences (`publicTexts`) and the
   * built-in UDHR. Printed when an answer first asks about a selection another tenant sent (300k
   * characters, once per isolate), not before: answers that match nobody never pay it.
   */
  #publicPrints(key: FingerprintKey): Pick<ReadonlySet<number>, 'has'> {
    return {
      has: (fingerprint) => {
        this.#public ??= new Set(
          printPrompt(key, [...this.#settings.publicTexts, ...PUBLIC_UDHR], this.#settings.params)
            .selected,
        )
        return this.#public.has(fingerprint)
      },
    }
  }

  /**
   * This request's read of the store: what other isolates published since this isolate's cursor.
   * Never shared with another request — in workerd a request must not await I/O another request
   * started (it may never resolve once that request has ended) — so concurrent requests may read the
   * same batches twice, which adds nothing. Never rejects: a store that fails leaves this isolate's own
   * table (logged), because an outage of the shared log must not become an outage of every answer.
   */
  async #readStore(model: string): Promise<StoreGap> {
    const { store } = this.#settings
    if (!store) return undefined
    try {
      const { batches, cursor, unavailable } = await store.since(model, this.#cursors.get(model))
      for (const batch of batches) this.table.add(batch.model, batch.tenant, batch.hashes, batch.at)
      this.#cursors.set(model, cursor)
      return unavailable && unavailable.length > 0 ? { shards: unavailable } : undefined
    } catch (error) {
      this.#storeFailed('since', error)
      return { down: true }
    }
  }

  #storeFailed(operation: string, error: unknown): void {
    const now = this.#now()
    if (now - this.#warnedAt < 60_000) return
    this.#warnedAt = now
    console.error(
      JSON.stringify({
        event: 'ai_guard_fingerprint_store_failed',
        operation,
        error: error instanceof Error ? error.message : String(error),
      }),
    )
  }
}

/**
 * What an answer may quote as its own: the prompt's texts, and what the model said earlier in the
 * conversation (never stored, so printed apart and only for its shingles).
 */
function ownText(
  key: FingerprintKey,
  print: PromptPrint,
  said: readonly string[],
  settings: ResolvedForeignContent,
): Pick<PromptPrint, 'contains'> {
  if (said.length === 0) return print
  const earlier = printPrompt(key, said, settings.params)
  return { contains: (hash) => print.contains(hash) || earlier.contains(hash) }
}

/** One request's two reads (prompts, answers) as one gap: down if either was, else the shards missed. */
function joinGaps(a: StoreGap, b: StoreGap): StoreGap {
  if ((a && 'down' in a) || (b && 'down' in b)) return { down: true }
  const of = (gap: StoreGap) => (gap && 'shards' in gap ? gap.shards : [])
  const shards = [...new Set([...of(a), ...of(b)])].sort((x, y) => x - y)
  return shards.length > 0 ? { shards } : undefined
}
