/**
 * @module The guard's orchestration: the `Guard` (per-isolate state), its attempt loop, verdict log
 * and the info attached to released answers.
 */
export type { RunnerHooks } from './attempts'
export { Guard } from './guard'
export { type GuardInfo, guardInfo } from './guard-info'
