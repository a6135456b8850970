/**
 * @module GuardState: the Durable Object that shares calibration across every isolate of the Worker.
 */
import { DurableObject } from 'cloudflare:workers'
import type { CalibrationSnapshot, TimingSample } from '../core'
import {
  type CalibrationReport,
  calibrate,
  describeCalibration,
  learnedMargins,
  type ModelCalibration,
  readCalibration,
  snapshotOf,
  type TokenObservation,
} from '../core'
import type { MarginPoint, SampleQuery } from './telemetry/types'

/** Points of margin history kept per model; the oldest go first. */
const MARGIN_HISTORY_POINTS = 512

/** One stored point of a model's margin history (the model is the storage key's). */
type StoredPoint = Omit<MarginPoint, 'model'>

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
    const at = Date.now()
    const next = calibrate(await this.#load(model), { kind: 'tokens', ...observation, at })
    await this.#save(model, next)
    await this.#noteMargins(model, learnedMargins(next.drift, at), at)
  }

  /**
   * Each model's learned margins over time (the console's "tokenizer factors per script class"),
   * oldest first: a point whenever a class's margin moved noticeably, and for every class that has a
   * history one more point, now, with its margin now (a relaxing margin decays between points).
   */
  async marginHistory(query: Omit<SampleQuery, 'limit'> = {}): Promise<MarginPoint[]> {
    const now = Date.now()
    const histories = await this.#histories(query.model)
    const out: MarginPoint[] = []
    for (const [key, points] of histories) {
      const model = key.slice('history:'.length)
      const current = learnedMargins((await this.#load(model)).drift, now)
      const classes = new Set(points.map((p) => p.script))
      const all = [
        ...points,
        ...[...classes].map((script) => ({
          at: now,
          script,
          margin: current[script as keyof typeof current] ?? 0,
        })),
      ]
      for (const point of all) {
        if (query.since !== undefined && point.at < query.since) continue
        if (query.until !== undefined && point.at > query.until) continue
        out.push({ at: point.at, model, script: point.script, margin: point.margin })
      }
    }
    return out.sort((a, b) => a.at - b.at)
  }

  /** One model's stored points (none yet: empty), or every model's. */
  async #histories(model: string | undefined): Promise<Map<string, StoredPoint[]>> {
    if (model === undefined)
      return await this.ctx.storage.list<StoredPoint[]>({ prefix: 'history:' })
    const key = `history:${model}`
    return new Map([[key, (await this.ctx.storage.get<StoredPoint[]>(key)) ?? []]])
  }

  /** Appends a point for every class whose margin moved noticeably since its last point. */
  async #noteMargins(
    model: string,
    margins: Partial<Record<string, number>>,
    at: number,
  ): Promise<void> {
    const key = `history:${model}`
    const points = (await this.ctx.storage.get<StoredPoint[]>(key)) ?? []
    const last = new Map<string, number>()
    for (const point of points) last.set(point.script, point.margin)
    const added: StoredPoint[] = []
    for (const script of new Set([...Object.keys(margins), ...last.keys()])) {
      const margin = margins[script] ?? 0
      const before = last.get(script)
      if (before === undefined ? margin > 0 : moved(before, margin)) {
        added.push({ at, script, margin })
      }
    }
    if (added.length === 0) return
    await this.ctx.storage.put(key, [...points, ...added].slice(-MARGIN_HISTORY_POINTS))
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

/**
 * Whether a margin moved enough for a new point: by half a percentage point, or 5% of itself. A
 * relaxing margin decays a little with every observation; a point per observation would fill the
 * history with noise, a point per real step draws the same line.
 */
function moved(before: number, now: number): boolean {
  return Math.abs(now - before) >= Math.max(0.005, before * 0.05)
}
