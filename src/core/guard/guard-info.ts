/**
 * @module What the guard did for a released answer, attached to the answer object itself (so surfaces
 * can set headers without another return channel).
 */
import type { StreamFormat } from '../vocabulary/request-facts'

/** What the guard did to produce a released answer (for headers and logs of the surfaces). */
export interface GuardInfo {
  requestId: string
  attempts: number
  /** Set when `overflow: 'clamp-output'` lowered the request's output limit to fit. */
  clampedMaxTokens?: number
  /** A released stream's SSE format (`chat` chunks or legacy `{ response }` events). */
  format?: StreamFormat
}

const INFO = new WeakMap<object, GuardInfo>()

/** Attaches `info` to a released answer (objects and streams; primitives carry none). */
export function attachInfo(output: unknown, info: GuardInfo): void {
  if (output !== null && typeof output === 'object') INFO.set(output, info)
}

/**
 * What the guard did for a released answer (the object or stream `run()` returned), if it guarded it.
 *
 * @example
 * const out = await ai.run(model, inputs)
 * const clamped = guardInfo(out)?.clampedMaxTokens
 */
export function guardInfo(output: unknown): GuardInfo | undefined {
  return output !== null && typeof output === 'object' ? INFO.get(output) : undefined
}
