/**
 * @module What the guard learns per model (tokenizer drift, honest TTFT), and its per-isolate store.
 */
import { type DriftState, effectiveDrift, emptyDriftState, observe } from './ceiling/calibration'
import type { CalibrationSnapshot, CalibrationStore } from './options'
import { type BaselineState, emptyBaseline, learn } from './timing/baseline'

/** Everything learned about one model; small, bounded and serializable (a Durable Object stores it). */
export interface ModelCalibration {
  drift: DriftState
  baseline: BaselineState
}

/**
 * A model's state before anything is learned.
 *
 * @example
 * let state = emptyCalibration()
 */
export function emptyCalibration(): ModelCalibration {
  return { drift: emptyDriftState(), baseline: emptyBaseline() }
}

/**
 * Folds one observation into a model's state (returns a new state).
 *
 * @example
 * state = calibrate(state, { kind: 'tokens', estimated: 300_000, actual: 331_000, at: Date.now() })
 */
export function calibrate(
  state: ModelCalibration,
  observation:
    | { kind: 'tokens'; estimated: number; actual: number; at: number }
    | { kind: 'timing'; uncachedTokens: number; ttftMs: number },
): ModelCalibration {
  if (observation.kind === 'tokens') {
    const { estimated, actual, at } = observation
    return { ...state, drift: observe(state.drift, { estimated, actual, at }) }
  }
  return { ...state, baseline: learn(state.baseline, observation) }
}

/**
 * What the guard reads from a model's state.
 *
 * @example
 * const { drift, baseline } = snapshotOf(state)
 */
export function snapshotOf(state: ModelCalibration): CalibrationSnapshot {
  return { drift: effectiveDrift(state.drift, 0), baseline: state.baseline }
}

/**
 * Per-isolate calibration, the library default. The Worker shares it across isolates through a
 * Durable Object instead.
 *
 * @example
 * const ai = guardAi(env.AI, { secret, calibration: new MemoryCalibration() })
 */
export class MemoryCalibration implements CalibrationStore {
  readonly #models = new Map<string, ModelCalibration>()
  readonly #now: () => number

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? (() => Date.now())
  }

  snapshot(model: string): CalibrationSnapshot {
    return snapshotOf(this.#models.get(model) ?? emptyCalibration())
  }

  observeTokens(model: string, estimated: number, actual: number): void {
    this.#update(model, { kind: 'tokens', estimated, actual, at: this.#now() })
  }

  observeTiming(model: string, sample: { uncachedTokens: number; ttftMs: number }): void {
    this.#update(model, { kind: 'timing', ...sample })
  }

  #update(model: string, observation: Parameters<typeof calibrate>[1]): void {
    // Bounded: a guard serves a handful of models; a flood of made-up model names is refused earlier.
    if (!this.#models.has(model) && this.#models.size >= 256) return
    this.#models.set(model, calibrate(this.#models.get(model) ?? emptyCalibration(), observation))
  }
}
