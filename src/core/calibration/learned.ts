/**
 * @module What the guard learns per model (tokenizer margins per script class, honest TTFT per class
 * and size), its per-isolate store, and the operator's view of it.
 */

import type { ScriptClass } from '../ceiling/script'
import {
  type BaselineState,
  emptyBaseline,
  learn,
  learnedMinimumMs,
  type TimingSample,
} from './baseline'
import {
  type DriftObservation,
  type DriftState,
  emptyDriftState,
  learnedMargins,
  observe,
} from './drift'

/** What the guard has learned about a model from verified traffic and the engine's own counts. */
export interface CalibrationSnapshot {
  /**
   * Learned tokenizer margin per script class, on top of the family bound; the guard uses the larger
   * of it and the profile's `tokenizerDrift` floor. Classes with nothing learned are absent.
   */
  drift: Partial<Record<ScriptClass, number>>
  /** Learned honest TTFT per script class and prompt-size bucket. */
  baseline: BaselineState
}

/**
 * Calibration storage, shared across isolates in the Worker (a Durable Object); per isolate by default.
 * Only released answers' usage and engine refusals' stated counts reach `observeTokens`; only
 * echo-verified released answers reach `observeTiming`, so a leaking upstream cannot teach it to relax.
 */
export interface CalibrationStore {
  snapshot(model: string): Promise<CalibrationSnapshot> | CalibrationSnapshot
  /** The engine's count of a prompt beside what the guard charged it, per script class. */
  observeTokens(model: string, observation: TokenObservation): Promise<void> | void
  /** An honest time to first token, in the engine's own tokens. */
  observeTiming(model: string, sample: TimingSample): Promise<void> | void
}

/** Everything learned about one model; small, bounded and serializable (a Durable Object stores it). */
export interface ModelCalibration {
  drift: DriftState
  baseline: BaselineState
}

/** An engine count to learn from (the store adds the time). */
export type TokenObservation = Omit<DriftObservation, 'at'>

/**
 * A model's state before anything is learned.
 *
 * @example
 * let state = emptyCalibration()
 */
function emptyCalibration(): ModelCalibration {
  return { drift: emptyDriftState(), baseline: emptyBaseline() }
}

/**
 * A stored state as this version reads it: a state from an older format (one global margin and
 * o200k timing rates, both of which any tenant could poison) starts over.
 *
 * @example
 * const state = readCalibration(await storage.get('model:x'))
 */
export function readCalibration(stored: unknown): ModelCalibration {
  const state = (stored ?? {}) as Partial<ModelCalibration>
  return {
    drift: state.drift?.v === 2 ? state.drift : emptyDriftState(),
    baseline: state.baseline?.v === 2 ? state.baseline : emptyBaseline(),
  }
}

/**
 * Folds one observation into a model's state (returns a new state).
 *
 * @example
 * state = calibrate(state, { kind: 'tokens', classes: { latin: 300_000 }, overhead: 11, actual: 331_000, at: Date.now(), tenant: 'a' })
 */
export function calibrate(
  state: ModelCalibration,
  observation: ({ kind: 'tokens' } & DriftObservation) | ({ kind: 'timing' } & TimingSample),
): ModelCalibration {
  if (observation.kind === 'tokens') {
    const { kind: _, ...tokens } = observation
    return { ...state, drift: observe(state.drift, tokens) }
  }
  const { kind: _, ...sample } = observation
  return { ...state, baseline: learn(state.baseline, sample) }
}

/**
 * What the guard reads from a model's state at time `at`.
 *
 * @example
 * const { drift, baseline } = snapshotOf(state, Date.now())
 */
export function snapshotOf(state: ModelCalibration, at: number): CalibrationSnapshot {
  return { drift: learnedMargins(state.drift, at), baseline: state.baseline }
}

/** The operator's view of one model's calibration (`/admin/stats`). */
export interface CalibrationReport {
  /** Learned margin per script class now (on top of the family bound; the profile floor still applies). */
  margins: Partial<Record<ScriptClass, number>>
  /** Per class: the raised peak, when, how far off the worst report was, and progress towards relaxing. */
  classes: DriftState['classes']
  observations: number
  ignored: DriftState['ignored']
  /** Per `class:size-bucket`: teaching tenants, and the learned minimum for a prompt of 100k tokens. */
  timing: Record<string, { tenants: number; minMsPer100k: number }>
}

/**
 * Summarises a model's state for operators.
 *
 * @example
 * const report = describeCalibration(state, Date.now())
 */
export function describeCalibration(state: ModelCalibration, at: number): CalibrationReport {
  const timing: CalibrationReport['timing'] = {}
  for (const [key, tenants] of Object.entries(state.baseline.buckets)) {
    const [cls] = key.split(':') as [ScriptClass]
    const bucket = Number(key.split(':')[1])
    // The learned minimum at the bucket's lower edge, scaled to 100k tokens for a comparable figure.
    const edge = 4_096 * 2 ** bucket
    const min = learnedMinimumMs(state.baseline, cls, edge)
    timing[key] = { tenants: Object.keys(tenants).length, minMsPer100k: (min / edge) * 100_000 }
  }
  return {
    margins: learnedMargins(state.drift, at),
    classes: state.drift.classes,
    observations: state.drift.observations,
    ignored: state.drift.ignored,
    timing,
  }
}

/**
 * A short opaque id for a tenant in learned state (FNV-1a, 32 bits): learned state needs to tell
 * tenants apart, not to name them.
 *
 * @example
 * tenantKey('acme') // '7c1f3b2a'
 */
export function tenantKey(tenant: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < tenant.length; i++) {
    hash ^= tenant.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0).toString(16).padStart(8, '0')
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
    return snapshotOf(this.#models.get(model) ?? emptyCalibration(), this.#now())
  }

  observeTokens(model: string, observation: TokenObservation): void {
    this.#update(model, { kind: 'tokens', ...observation, at: this.#now() })
  }

  observeTiming(model: string, sample: TimingSample): void {
    this.#update(model, { kind: 'timing', ...sample })
  }

  /** Every model's state, for reports. */
  report(): Record<string, CalibrationReport> {
    const out: Record<string, CalibrationReport> = {}
    for (const [model, state] of this.#models) out[model] = describeCalibration(state, this.#now())
    return out
  }

  #update(model: string, observation: Parameters<typeof calibrate>[1]): void {
    // Bounded: a guard serves a handful of models; a flood of made-up model names is refused earlier.
    if (!this.#models.has(model) && this.#models.size >= 256) return
    this.#models.set(model, calibrate(this.#models.get(model) ?? emptyCalibration(), observation))
  }
}
