/**
 * @module GuardState: the Durable Object that shares calibration across every isolate of the Worker.
 */
import { DurableObject } from 'cloudflare:workers'
import { calibrate, emptyCalibration, type ModelCalibration, snapshotOf } from '../calibration'
import type { CalibrationSnapshot } from '../options'

/**
 * One instance (named `global`) holds every model's learned drift and timing baseline in its storage.
 * Each model's state is a few KB; observations are applied one at a time (a Durable Object is single-
 * threaded), so no sample is lost to a race.
 */
export class GuardState extends DurableObject {
  async snapshot(model: string): Promise<CalibrationSnapshot> {
    return snapshotOf(await this.#load(model))
  }

  async observeTokens(model: string, estimated: number, actual: number): Promise<void> {
    await this.#save(
      model,
      calibrate(await this.#load(model), { kind: 'tokens', estimated, actual, at: Date.now() }),
    )
  }

  async observeTiming(model: string, uncachedTokens: number, ttftMs: number): Promise<void> {
    await this.#save(
      model,
      calibrate(await this.#load(model), { kind: 'timing', uncachedTokens, ttftMs }),
    )
  }

  /** Every model's snapshot, for the admin stats route. */
  async all(): Promise<Record<string, CalibrationSnapshot>> {
    const out: Record<string, CalibrationSnapshot> = {}
    const entries = await this.ctx.storage.list<ModelCalibration>({ prefix: 'model:' })
    for (const [key, state] of entries) out[key.slice('model:'.length)] = snapshotOf(state)
    return out
  }

  async #load(model: string): Promise<ModelCalibration> {
    return (await this.ctx.storage.get<ModelCalibration>(`model:${model}`)) ?? emptyCalibration()
  }

  async #save(model: string, state: ModelCalibration): Promise<void> {
    await this.ctx.storage.put(`model:${model}`, state)
  }
}
