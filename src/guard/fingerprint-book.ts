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
 * A prompt is printed right after its upstream call is made, so the hashing runs while the engine
 * prefills; it is recorded before its answer is read, because from the moment it is sent its pages
 * can turn up in another tenant's answer. A shared store is read before each answer is judged, so a
 * prompt guarded in another isolate a moment ago is already in this one's table.
 */

import type { PrintedPrompt } from '../attempt/context'
import { type CanaryKey, contentSeed } from '../canary'
import {
  answersOf,
  ContentWatch,
  type FingerprintKey,
  FingerprintTable,
  fingerprintKey,
  printPrompt,
} from '../fingerprint'
import type { ResolvedForeignContent } from './options'

/** The isolate's fingerprint table and its link to the shared store. */
export class FingerprintBook {
  readonly table: FingerprintTable
  readonly #settings: ResolvedForeignContent
  readonly #key: () => Promise<CanaryKey>
  readonly #now: () => number
  #fingerprintKey: Promise<FingerprintKey> | undefined
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
   * Prints and records one prompt (its texts: see src/plan/prompt-texts.ts) for `tenant`, publishes
   * it, and starts this request's read of the store.
   *
   * @example
   * const printed = await book.record(model, tenant, texts, ctx.waitUntil)
   * const watch = await printed.watch()
   */
  async record(
    model: string,
    tenant: string,
    texts: readonly string[],
    waitUntil: ((promise: Promise<unknown>) => void) | undefined,
  ): Promise<PrintedPrompt> {
    const key = await this.#hashKey()
    const read = Promise.all([this.#readStore(model), this.#readStore(answersOf(model))])
    const print = printPrompt(key, texts, this.#settings.params)
    this.#publish(model, tenant, print.selected, waitUntil)
    const params = this.#settings.params
    const answers = answersOf(model)
    return {
      watch: async () => {
        await read
        return new ContentWatch({
          key,
          table: this.table,
          model,
          tenant,
          own: print,
          now: this.#now,
          params,
          answers,
          publicPrints: this.#publicPrints(key),
        })
      },
      learn: (watch) => this.#publish(answers, tenant, watch.selections(), waitUntil),
    }
  }

  /** Records fingerprints under `model` (a model, or its answers) here and in the shared store. */
  #publish(
    model: string,
    tenant: string,
    hashes: number[],
    waitUntil: ((promise: Promise<unknown>) => void) | undefined,
  ): void {
    if (hashes.length === 0) return
    const at = this.#now()
    this.table.add(model, tenant, hashes, at)
    const { store } = this.#settings
    if (!store) return
    const published = store
      .publish({ model, tenant, at, hashes })
      .catch((error: unknown) => this.#storeFailed('publish', error))
    waitUntil?.(published)
  }

  #hashKey(): Promise<FingerprintKey> {
    this.#fingerprintKey ??= this.#key().then(async (key) => fingerprintKey(await contentSeed(key)))
    return this.#fingerprintKey
  }

  /** The operator's public texts as fingerprints, printed on first use. */
  #publicPrints(key: FingerprintKey): ReadonlySet<number> {
    this.#public ??= new Set(
      printPrompt(key, this.#settings.publicTexts, this.#settings.params).selected,
    )
    return this.#public
  }

  /**
   * This request's read of the store: what other isolates published since this isolate's cursor.
   * Never shared with another request — in workerd a request must not await I/O another request
   * started (it may never resolve once that request has ended) — so concurrent requests may read the
   * same batches twice, which adds nothing. Never rejects: a store that fails leaves this isolate's own
   * table (logged), because an outage of the shared log must not become an outage of every answer.
   */
  async #readStore(model: string): Promise<void> {
    const { store } = this.#settings
    if (!store) return
    try {
      const { batches, cursor } = await store.since(model, this.#cursors.get(model))
      for (const batch of batches) this.table.add(batch.model, batch.tenant, batch.hashes, batch.at)
      this.#cursors.set(model, cursor)
    } catch (error) {
      this.#storeFailed('since', error)
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
