/**
 * @module The option groups of the evidence plug-ins as a user writes them (`content`,
 * `secrets`) and the shared fingerprint store's shape: types only. The core carries each group to its
 * plug-in unread; the plug-in validates and resolves it.
 */

/** The fingerprints of one prompt (or several of one tenant and model), as published. */
export interface FingerprintBatch {
  model: string
  tenant: string
  /** When the prompt was sent (ms since the epoch): the table's ttl counts from it. */
  at: number
  /** `PromptPrint.selected`: keyed PRF outputs, never text. */
  hashes: number[]
}

/**
 * A shared log of batches, per model: a leak stays within one model's engine pool, so an isolate
 * answering for a model reads only that model's log (the Worker shards its Durable Object the same
 * way). `since(model, undefined)` returns the newest batches the store still holds (bounded); an
 * isolate then passes the returned cursor to get only what is newer. Batches an isolate published
 * itself may come back: adding a batch twice to a table changes nothing.
 *
 * @example
 * await store.publish({ model, tenant, at: Date.now(), hashes: print.selected })
 * const { batches, cursor: next } = await store.since(model, cursor)
 * for (const b of batches) table.add(b.model, b.tenant, b.hashes, b.at)
 */
export interface FingerprintStore {
  publish(batch: FingerprintBatch): Promise<void>
  since(model: string, cursor: string | undefined): Promise<StoreRead>
}

/** One read of a {@link FingerprintStore}. */
export interface StoreRead {
  batches: FingerprintBatch[]
  cursor: string
  /**
   * Parts of the store this read could not reach (a sharded store's shard numbers): their batches
   * were not read, so an answer judged now cannot see them. Absent when everything was read.
   */
  unavailable?: number[]
}

/** What happens to one kind of secret in a prompt. */
export type SecretPolicy = 'off' | 'detect' | 'substitute'

/** How sure a detector's finding is: `high` when a checksum or a published format confirms it. */
export type SecretConfidence = 'high' | 'medium'

/** Policies by confidence, then by kind (a kind's own entry wins). */
export interface SecretRules {
  /** Detectors whose every finding a checksum or a published format confirms. */
  high?: SecretPolicy
  /** Detectors that rest on structure and context (SSNs, keyword-gated keys, operator patterns). */
  medium?: SecretPolicy
  /** Per kind, e.g. `{ 'us-ssn': 'substitute' }`; operator patterns by their `name`. */
  kinds?: Record<string, SecretPolicy>
}

/** The `secrets` option of the guard. */
export interface SecretsOptions extends SecretRules {
  /** Operator-supplied patterns (validated: see src/plugins/secrets/operator-pattern.ts). */
  patterns?: readonly OperatorPattern[]
  /** Per-model rules, over the rules above (a model's `kinds` entry, then its confidence, win). */
  models?: Record<string, SecretRules>
}

/** One operator pattern: a name (its kind), the regex source and flags, its confidence. */
export interface OperatorPattern {
  /** The kind it reports: lowercase letters, digits and dashes, 2–40 characters. */
  name: string
  /** The regex source (no slashes), e.g. `ACME-[0-9]{8}-[A-Z]{4}`. */
  pattern: string
  /** Flags among `i`, `m`, `s`, `u`. @default '' */
  flags?: string
  /** @default 'medium' */
  confidence?: SecretConfidence
}
