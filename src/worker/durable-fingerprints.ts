/**
 * @module The Worker's fingerprint store: the FingerprintLog Durable Object, one instance per model.
 */
import type { FingerprintBatch, FingerprintStore } from '../fingerprint'
import type { FingerprintLog } from './fingerprint-log'

/**
 * Publishes to and reads from the model's FingerprintLog; cursors are its sequence numbers.
 *
 * @example
 * createGuard({ secret, foreignContent: { store: new DurableFingerprints(env.FINGERPRINTS) } })
 */
export class DurableFingerprints implements FingerprintStore {
  readonly #namespace: DurableObjectNamespace<FingerprintLog>

  constructor(namespace: DurableObjectNamespace<FingerprintLog>) {
    this.#namespace = namespace
  }

  #stub(model: string) {
    return this.#namespace.get(this.#namespace.idFromName(`model:${model}`))
  }

  async publish(batch: FingerprintBatch): Promise<void> {
    await this.#stub(batch.model).publish(batch)
  }

  async since(
    model: string,
    cursor: string | undefined,
  ): Promise<{ batches: FingerprintBatch[]; cursor: string }> {
    const after = cursor === undefined ? undefined : Number(cursor)
    const read = await this.#stub(model).since(model, Number.isInteger(after) ? after : undefined)
    return { batches: read.batches, cursor: String(read.cursor) }
  }
}
