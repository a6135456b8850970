/**
 * @module What the guard does with each kind of secret, per model: `off`, `detect` (count the kinds,
 * change nothing) or `substitute` (send a stand-in, restore the value in the answer).
 *
 * Resolved once, when the guard is built: an unknown kind or policy throws there, naming the option —
 * a typo must not silently leave a secret in the prompt. The policy is the operator's alone: no request
 * field can lower it.
 */
import type { SecretPolicy, SecretRules, SecretsOptions } from '../../core'
import type { SecretConfidence, SecretDetector } from './detector'
import { builtInDetectors } from './detectors'
import { operatorDetector } from './operator-pattern'

// The option's shapes are the core's (GuardOptions names them): re-exported for the plug-in's users.
export type { SecretPolicy, SecretRules, SecretsOptions } from '../../core'

/** One model's detectors by what is done with their findings. */
export interface ModelSecrets {
  substitute: readonly SecretDetector[]
  detect: readonly SecretDetector[]
}

/** The resolved `secrets` option. */
export interface ResolvedSecrets {
  /** Every detector the guard knows (built-in and operator): whose stand-ins any answer is scanned for. */
  readonly all: readonly SecretDetector[]
  /** Whether any model substitutes anything: only then can an answer carry a stand-in. */
  readonly substitutes: boolean
  /** The detectors of one model, by policy (both empty: nothing to do for its prompts). */
  forModel(model: string): ModelSecrets
}

const POLICIES: readonly SecretPolicy[] = ['off', 'detect', 'substitute']

/**
 * The Worker's default: every high-confidence detector substitutes, the medium ones only count.
 *
 * @example
 * createGuard({ secret, secrets: WORKER_SECRETS_DEFAULT })
 */
export const WORKER_SECRETS_DEFAULT: Readonly<SecretsOptions> = {
  high: 'substitute',
  medium: 'detect',
}

/**
 * Validates the option and resolves it; `undefined` (the library's default) is everything `off`.
 * Throws a plain `Error` naming the option.
 *
 * @example
 * resolveSecrets({ high: 'substitute', kinds: { 'us-ssn': 'detect' } }).forModel('@cf/x').substitute
 */
export function resolveSecrets(options: SecretsOptions | undefined): ResolvedSecrets | undefined {
  if (options === undefined) return undefined
  if (typeof options !== 'object' || options === null) {
    throw new Error('option "secrets" must be an object')
  }
  const patterns = options.patterns ?? []
  if (!Array.isArray(patterns)) throw new Error('option "secrets.patterns" must be an array')
  const all = [...builtInDetectors()]
  const kinds = new Set(all.map((d) => d.kind))
  patterns.forEach((pattern, i) => {
    let detector: SecretDetector
    try {
      detector = operatorDetector(pattern)
    } catch (error) {
      throw new Error(`option "secrets.patterns[${i}]": ${(error as Error).message}`)
    }
    if (kinds.has(detector.kind)) {
      throw new Error(`option "secrets.patterns[${i}]": the kind "${detector.kind}" already exists`)
    }
    kinds.add(detector.kind)
    all.push(detector)
  })
  checkRules(options, 'secrets', kinds)
  for (const [model, rules] of Object.entries(options.models ?? {})) {
    checkRules(rules, `secrets.models["${model}"]`, kinds)
  }
  const cache = new Map<string, ModelSecrets>()
  const forModel = (model: string): ModelSecrets => {
    let found = cache.get(model)
    if (!found) {
      found = split(all, options, own(options.models, model))
      cache.set(model, found)
    }
    return found
  }
  const models = Object.values(options.models ?? {})
  const substitutes = [options, ...models].some(
    (rules) =>
      rules.high === 'substitute' ||
      rules.medium === 'substitute' ||
      Object.values(rules.kinds ?? {}).includes('substitute'),
  )
  return { all, substitutes, forModel }
}

function checkRules(rules: SecretRules, name: string, kinds: ReadonlySet<string>): void {
  if (typeof rules !== 'object' || rules === null)
    throw new Error(`option "${name}" must be an object`)
  for (const field of ['high', 'medium'] as const) {
    const value = rules[field]
    if (value !== undefined && !POLICIES.includes(value)) {
      throw new Error(`option "${name}.${field}" must be one of ${POLICIES.join(', ')}`)
    }
  }
  for (const [kind, value] of Object.entries(rules.kinds ?? {})) {
    if (!kinds.has(kind)) {
      throw new Error(
        `option "${name}.kinds": unknown kind "${kind}" (known: ${[...kinds].join(', ')})`,
      )
    }
    if (!POLICIES.includes(value)) {
      throw new Error(`option "${name}.kinds["${kind}"]" must be one of ${POLICIES.join(', ')}`)
    }
  }
}

/** The detectors of one model by policy: the model's kind entry, the guard's, the model's confidence rule, the guard's. */
function split(
  all: readonly SecretDetector[],
  guard: SecretRules,
  model: SecretRules | undefined,
): ModelSecrets {
  const substitute: SecretDetector[] = []
  const detect: SecretDetector[] = []
  for (const detector of all) {
    const policy = policyOf(detector.kind, detector.confidence, guard, model)
    if (policy === 'substitute') substitute.push(detector)
    else if (policy === 'detect') detect.push(detector)
  }
  return { substitute, detect }
}

function policyOf(
  kind: string,
  confidence: SecretConfidence,
  guard: SecretRules,
  model: SecretRules | undefined,
): SecretPolicy {
  return (
    own(model?.kinds, kind) ??
    own(guard.kinds, kind) ??
    model?.[confidence] ??
    guard[confidence] ??
    'off'
  )
}

/** `record[key]` when it is the record's own entry (a kind named `constructor` is not a function). */
function own<T>(record: Record<string, T> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined
}
