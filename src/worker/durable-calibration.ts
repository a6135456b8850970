/**
 * @module The Worker's calibration store: the GuardState Durable Object, with a short per-isolate cache.
 */

import type {
  CalibrationReport,
  CalibrationSnapshot,
  CalibrationStore,
  TimingSample,
  TokenObservation,
} from '../core'
import type { GuardState } from './state'
import type { MarginPoint, MarginSource, SampleQuery } from './telemetry/types'

/** How long an isolate reuses a snapshot before asking the Durable Object again, ms. */
const SNAPSHOT_TTL_MS = 10_000

/**
 * Reads snapshots through a 10-second cache (a Durable Object round trip per request would add latency
 * to every call) and sends observations straight to the object.
 *
 * @example
 * new Guard({ secret, calibration: new DurableCalibration(env.GUARD_STATE) })
 */
export class DurableCalibration implements CalibrationStore, MarginSource {
  readonly #namespace: DurableObjectNamespace<GuardState>
  readonly #cache = new Map<string, { at: number; snapshot: CalibrationSnapshot }>()
  readonly #now: () => number

  constructor(namespace: DurableObjectNamespace<GuardState>, options: { now?: () => number } = {}) {
    this.#namespace = namespace
    this.#now = options.now ?? (() => Date.now())
  }

  #stub() {
    return this.#namespace.get(this.#namespace.idFromName('global'))
  }

  async snapshot(model: string): Promise<CalibrationSnapshot> {
    const cached = this.#cache.get(model)
    if (cached && this.#now() - cached.at < SNAPSHOT_TTL_MS) return cached.snapshot
    const snapshot: CalibrationSnapshot = await this.#stub().snapshot(model)
    this.#cache.set(model, { at: this.#now(), snapshot })
    return snapshot
  }

  async observeTokens(model: string, observation: TokenObservation): Promise<void> {
    await this.#stub().observeTokens(model, observation)
    // A raised drift must apply at once in this isolate, not after the cache expires.
    this.#cache.delete(model)
  }

  async observeTiming(model: string, sample: TimingSample): Promise<void> {
    await this.#stub().observeTiming(model, sample)
  }

  /** The learned margins over time (see GuardState.marginHistory), for the console. */
  async marginHistory(query: Omit<SampleQuery, 'limit'> = {}): Promise<MarginPoint[]> {
    return await this.#stub().marginHistory(query)
  }

  /** Every model's calibration as operators read it. */
  async report(): Promise<Record<string, CalibrationReport>> {
    return await this.#stub().all()
  }
}
