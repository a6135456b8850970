/**
 * @module The public guard API: one guard per isolate (`createGuard`), a cheap runner per request
 * (`guard.wrap`), and `guardAi`, which finds the isolate's guard for its options instead of starting over.
 *
 * A guard's state is what makes it stronger than a stateless check: the incidents it recorded, the
 * tenant tags it can attribute a leak to, the prefixes it saw verified, what it learned of the engine's
 * tokenizer and timing. A guard built per request throws all of that away with the request.
 */

import type { CalibrationStore } from '../calibration/learned'
import type { AiRunner } from '../call/upstream'
import { GuardError } from '../errors'
import { Guard, type RunnerHooks } from '../guard'
import type { EvidencePlugins } from '../vocabulary/evidence-plugins'
import type { GuardOptions, ModelProfile } from '../vocabulary/options'
import type { QuarantineStore } from '../vocabulary/quarantine'

/** What one request tells the isolate's guard: whose it is, and how to keep background work alive. */
export interface GuardRequest extends RunnerHooks {
  /**
   * Who the request belongs to, as your own auth proved it (a verified key, session or token) — never
   * a header or body field the client writes. @default the guard's `tenant` option ('default')
   */
  tenant?: string
}

/** A guard with its per-isolate state; create it once and wrap each request's binding. */
export interface AiGuard {
  /**
   * A guarded runner with `env.AI.run`'s shape, for one request: no I/O and no validation beyond the
   * tenant, so calling it per request costs nothing measurable.
   */
  wrap(upstream: AiRunner, request?: GuardRequest): AiRunner
  /**
   * The models with a profile of their own, sorted: the built-in profiles and those the `models`
   * option adds. Under `ceiling.unknownModels: 'default-profile'` other names are guarded too, by
   * `ceiling.defaultProfile`, and {@link AiGuard.profile} answers for them.
   *
   * @example
   * guard.models() // ['@cf/zai-org/glm-5.3', …]
   */
  models(): string[]
  /**
   * The profile the guard applies to `model`, resolved and validated as at `createGuard`, as a frozen
   * copy (changing the guard's figures takes new options). A model the guard would refuse throws the
   * `GuardError` its call would throw: `invalid_request` with `param: 'model'`.
   *
   * @example
   * const { maxPrefillTokensPerSecond } = guard.profile('@cf/zai-org/glm-5.3')
   */
  profile(model: string): Readonly<ModelProfile>
  /**
   * Where withheld answers are recorded (the `quarantine` option, or the isolate's memory store).
   *
   * @example
   * const incidents = await guard.quarantine.list({ limit: 20 })
   */
  readonly quarantine: QuarantineStore
  /**
   * What released answers taught the guard (the `calibration` option, or the isolate's
   * `MemoryCalibration`): read a model's learned margins and timing with `snapshot(model)`.
   *
   * @example
   * const { drift } = await guard.calibration.snapshot('@cf/zai-org/glm-5.3')
   */
  readonly calibration: CalibrationStore
}

/**
 * Creates a guard. Do it once per isolate — at module scope, with `env` from `cloudflare:workers` — so
 * every request shares its state. Options are validated here: a plain `Error` names the bad option.
 *
 * @example
 * import { env } from 'cloudflare:workers'
 * const guard = createGuard({ secret: env.GUARD_SECRET })
 * export default {
 *   async fetch(request, env, ctx) {
 *     const ai = guard.wrap(env.AI, { tenant: await verifiedUser(request), waitUntil: (p) => ctx.waitUntil(p) })
 *     return Response.json(await ai.run('@cf/zai-org/glm-5.3', { messages: [{ role: 'user', content: 'Hi' }] }))
 *   },
 * }
 */
export function createGuard(options: GuardOptions, plugins: EvidencePlugins): AiGuard {
  return handle(new Guard(options, plugins))
}

/** Each public face's guard, for what the Worker reads of it that is not public (see {@link heldBytes}). */
const guards = new WeakMap<AiGuard, Guard>()

/**
 * Bytes the guard keeps between requests that grow with traffic, up to their budget: the text memo's,
 * and the fingerprint table's second generation once a rotation has made it (7.5 MiB by default). The
 * Worker's memory admission leaves them out of what requests in flight may reserve.
 *
 * @example
 * const free = budget - heldBytes(guardFor(env))
 */
export function heldBytes(face: AiGuard): number {
  const guard = guards.get(face)
  return (guard?.memo?.bytes ?? 0) + (guard?.content?.heldBytes?.() ?? 0)
}

/** The public face of a guard (the class itself stays internal). */
function handle(guard: Guard): AiGuard {
  const face: AiGuard = {
    wrap(upstream, request = {}) {
      assertUpstream(upstream, 'guard.wrap')
      const { tenant = guard.options.tenant, ...hooks } = request
      return guard.runner(upstream, tenant, hooks)
    },
    models: () => [...guard.options.profiles.keys()].sort(),
    profile(model) {
      if (typeof model !== 'string' || model === '') {
        throw new GuardError('invalid_request', 'The model must be a non-empty string.', {
          param: 'model',
        })
      }
      return Object.freeze({ ...guard.profile(model) })
    },
    quarantine: guard.quarantine,
    calibration: guard.calibration,
  }
  guards.set(face, guard)
  return face
}

/**
 * Wraps a Workers AI binding (or anything with its `run()` shape) with the three guards. Same inputs,
 * same outputs, canaries removed; blocked work rejects with a `GuardError`.
 *
 * Called again with equal options (the tenant aside) it reuses the isolate's guard, so code that calls it
 * per request keeps its incidents and learned state. Options are equal when their plain values are equal
 * and their functions and stores are the same objects; {@link createGuard} says so explicitly.
 *
 * @example
 * const ai = guardAi(env.AI, { secret: env.GUARD_SECRET, tenant: user.id })
 * const out = await ai.run('@cf/zai-org/glm-5.3', { messages: [{ role: 'user', content: 'Hello' }] })
 */
export function guardAi(
  upstream: AiRunner,
  options: GuardOptions,
  plugins: EvidencePlugins,
): AiRunner {
  assertUpstream(upstream, 'guardAi')
  const { tenant, ...shared } = options ?? ({} as GuardOptions)
  // The same options with other plug-ins (the lean entry beside the default) are another guard.
  const key = `${identity(plugins)}${optionsKey(shared)}`
  let guard = isolateGuards.get(key)
  if (guard) {
    // Most recently used last, so the oldest is the one evicted.
    isolateGuards.delete(key)
  } else {
    guard = new Guard(shared, plugins)
    if (isolateGuards.size >= MAX_ISOLATE_GUARDS) evictOldest()
  }
  isolateGuards.set(key, guard)
  return guard.runner(upstream, tenant ?? guard.options.tenant)
}

/**
 * How many distinct option sets keep their guard. A handful covers every real app (one per model set or
 * store); more means options are rebuilt per request with new functions, which a warning names.
 */
const MAX_ISOLATE_GUARDS = 8
const isolateGuards = new Map<string, Guard>()
let warned = false

function evictOldest(): void {
  const oldest = isolateGuards.keys().next().value
  if (oldest !== undefined) isolateGuards.delete(oldest)
  if (warned) return
  warned = true
  console.warn(
    `workers-ai-guard: guardAi was called with more than ${MAX_ISOLATE_GUARDS} different option sets in ` +
      'this isolate, so some calls start with an empty guard (no incidents, nothing learned). Options ' +
      'with a new function or store object each time are different options: create the guard once with ' +
      'createGuard(options) and call guard.wrap(env.AI, { tenant }) per request.',
  )
}

const identities = new WeakMap<object, number>()
let nextIdentity = 0

/** A string equal for equal options: plain data by value, functions and instances by identity. */
function optionsKey(value: unknown): string {
  if (value === undefined) return 'u'
  if (value === null || typeof value !== 'object') {
    return typeof value === 'function' ? `#${identity(value)}` : (JSON.stringify(value) ?? 'u')
  }
  if (Array.isArray(value)) return `[${value.map(optionsKey).join(',')}]`
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return `#${identity(value)}`
  const entries = Object.keys(value)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${optionsKey((value as Record<string, unknown>)[k])}`)
  return `{${entries.join(',')}}`
}

function identity(value: object): number {
  let id = identities.get(value)
  if (id === undefined) {
    id = nextIdentity++
    identities.set(value, id)
  }
  return id
}

function assertUpstream(upstream: AiRunner, where: string): void {
  if (!upstream || typeof upstream.run !== 'function') {
    throw new Error(
      `${where} needs an upstream with a run(model, inputs, options) method, e.g. env.AI`,
    )
  }
}
