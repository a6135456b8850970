/**
 * @module The context-limit probe: measure how long a prompt a deployment really serves, by reading
 * its answers, instead of trusting the advertised window. Web-standard APIs only (workerd and Node).
 */
export type { ProbeAnswer } from './answer'
export {
  describeGuardSign,
  GUARD_HEADERS,
  type GuardSign,
  guardSignOf,
  guardSignOfThrown,
} from './guard-sign'
export { type Judgement, judgeAnswer, minTtftMs, type StepKind } from './judge'
export { planProbe, runProbe } from './probe'
export { type ProbeProgress, progressLine } from './progress'
export {
  INSTRUCTION,
  loadPromptBuilder,
  mintNeedle,
  mintTag,
  NEEDLE_PATTERN,
  type ProbePrompt,
  type PromptBuilder,
} from './prompt-builder'
export { type Rng, randomSeed, seededRng } from './random'
export { renderDryRun, renderReport } from './render'
export {
  buildReport,
  type DryRunReport,
  type ProbeGuardFinding,
  type ProbeProfile,
  type ProbeReport,
  type ProbeVerdict,
  UPSTREAM_HINT,
} from './report'
export { type ProbePlan, planSearch, type SearchState, searchState } from './search'
export {
  MIN_PROBE_TOKENS,
  PROBE_DEFAULTS,
  type ProbeOptions,
  type ProbeSettings,
  RATIO_NOISE,
  ratioMargin,
  resolveProbeSettings,
  TEMPLATE_ROOM,
  topLength,
} from './settings'
export type { ProbeStep } from './step'
export {
  type ProbeRequest,
  type ProbeTransport,
  type RunnerTransportOptions,
  runnerTransport,
  type UrlTransportOptions,
  urlTransport,
} from './transport'
export { type ProbeErrorKind, ProbeTransportError } from './transport-error'
