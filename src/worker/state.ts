/**
 * @module GuardState: the Durable Object that shares calibration across every isolate of the Worker.
 */
import { DurableObject } from 'cloudflare:workers'
import type { TimingSample } from '../calibration/baseline'
import type { CalibrationSnapshot } from '../calibration/learned'
import {
  type CalibrationReport,
  calibrate,
  describeCalibration,
  type ModelCalibration,
  readCalibration,
  snapshotOf,
  type TokenObservation,
} from '../calibration/learned'

/**
 * One instance (named `global`) holds every model's learned margins and timing baselines in its
 * storage. Each model's state is bounded (a few KB per script class); observations are applied one at
 * a time (a Durable Object is single-threaded), so no sample is lost to a race.
 */
export class GuardState extends DurableObject {
  async snapshot(model: string): Promise<CalibrationSnapshot> {
    return snapshotOf(await this.#load(model), Date.now())
  }

  async observeTokens(model: string, observation: TokenObservation): Promise<void> {
    const state = await this.#load(model)
    await this.#save(model, calibrate(state, { kind: 'tokens', ...observation, at: Date.now() }))
  }

  async observeTiming(model: string, sample: TimingSample): Promise<void> {
    await this.#save(model, calibrate(await this.#load(model), { kind: 'timing', ...sample }))
  }

  /** Every model's calibration as operators read it, for the admin stats route. */
  async all(): Promise<Record<string, CalibrationReport>> {
    const out: Record<string, CalibrationReport> = {}
    const entries = await this.ctx.storage.list<ModelCalibration>({ prefix: 'model:' })
    for (const [key, state] of entries) {
      out[key.slice('model:'.length)] = describeCalibration(readCalibration(state), Date.now())
    }
    return out
  }

  async #load(model: string): Promise<ModelCalibration> {
    return readCalibration(await this.ctx.storage.get<ModelCalibration>(`model:${model}`))
  }

  async #save(model: string, state: ModelCalibration): Promise<void> {
    await this.ctx.storage.put(`model:${model}`, state)
  }
}
