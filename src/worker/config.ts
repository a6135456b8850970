/**
 * @module The Worker's guard, built once per isolate from its bindings and secrets.
 */

import type { GuardOptions, ModelProfile } from '../core'
import {
  type AiGuard,
  D1QuarantineStore,
  D1TenantDirectory,
  GuardError,
  guardSurface,
  type SecretsOptions,
} from '../core'
import { foreignContentPlugin } from '../plugins/foreign-content'
import { secretsPlugin, WORKER_SECRETS_DEFAULT } from '../plugins/secrets'
import { type BodyPace, DEFAULT_BODY_PACE } from './body'
import { DurableCalibration } from './durable-calibration'
import { DurableFingerprints } from './durable-fingerprints'
import type { Env } from './env'
import { observeVerdict } from './verdicts'

/** The Worker's guards carry both evidence plug-ins, as the default entry's do. */
const { createGuard } = guardSurface({ content: foreignContentPlugin, secrets: secretsPlugin })

/**
 * The default body limit, sized to the largest prompt the ceiling can admit, not to a round number:
 * an isolate has 128 MB, and a body is held as bytes, then as text, then as the parsed strings. The
 * largest admissible prompt, fully `\u`-escaped, fits under it (the figures: docs/reliability.md,
 * "Body limit"; `npm run bench -- body`). Images are not text: vision deployments raise `MAX_BODY_BYTES`.
 */
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024

const guards = new WeakMap<Env, AiGuard>()

/**
 * The isolate's guard for these bindings, made as any user's guard is (`createGuard`): options are
 * validated once, state (prefix records, tenant tags, cached calibration) is shared by every request
 * the isolate serves.
 *
 * @example
 * const ai = guardFor(env).wrap(env.AI, { tenant, waitUntil: (p) => ctx.waitUntil(p) })
 */
export function guardFor(env: Env): AiGuard {
  let guard = guards.get(env)
  if (!guard) {
    try {
      guard = createGuard(guardOptions(env))
    } catch (error) {
      // The message names the bad option, never its value; operators see it in the logs too.
      const message = error instanceof Error ? error.message : 'invalid options'
      console.error(
        JSON.stringify({ event: 'ai_guard_error', error: `guard not configured: ${message}` }),
      )
      throw new GuardError('guard_unavailable', `The guard is not configured: ${message}.`, {
        cause: error,
      })
    }
    guards.set(env, guard)
  }
  return guard
}

/**
 * The isolate's guard for these bindings if a request has made it, without making it: for what asks
 * often (memory admission, on every decision) and must neither build a guard nor log a bad setting.
 *
 * @example
 * const guard = guardIfMade(env) // undefined until a request has made it
 */
export function guardIfMade(env: Env): AiGuard | undefined {
  return guards.get(env)
}

/** The guard's options from the Worker's environment (the variables keep their names). */
function guardOptions(env: Env): GuardOptions {
  return {
    secret: env.GUARD_SECRET,
    models: parseModels(env.GUARD_MODELS),
    stream: {
      ...(env.GUARD_STREAM_RELEASE
        ? { release: env.GUARD_STREAM_RELEASE as 'verified' | 'async' }
        : {}),
      ...heartbeat(env.GUARD_HEARTBEAT_MS),
    },
    ceiling: {
      ...(env.GUARD_TEXT_MEMO_BYTES !== undefined
        ? { textMemo: parseTextMemo(env.GUARD_TEXT_MEMO_BYTES) }
        : {}),
      ...(env.GUARD_STATE ? { calibration: new DurableCalibration(env.GUARD_STATE) } : {}),
    },
    secrets: parseSecrets(env.GUARD_SECRETS),
    ...parseObserve(env.GUARD_OBSERVE),
    ...(env.QUARANTINE_DB
      ? {
          quarantine: {
            store: new D1QuarantineStore(env.QUARANTINE_DB, {
              key: env.QUARANTINE_KEY ?? '',
              ...(env.QUARANTINE_KEY_PREVIOUS
                ? { previousKeys: [env.QUARANTINE_KEY_PREVIOUS] }
                : {}),
              retentionDays: Number(env.QUARANTINE_RETENTION_DAYS ?? 30),
            }),
          },
          // Leaks are attributed to tenants minted in any isolate, not just this one.
          canary: { tenantDirectory: new D1TenantDirectory(env.QUARANTINE_DB) },
        }
      : {}),
    // A leak of a prompt guarded in another isolate is caught here too.
    ...(env.FINGERPRINTS
      ? {
          content: {
            store: new DurableFingerprints(env.FINGERPRINTS, {
              shards: Number(env.FINGERPRINT_SHARDS ?? 1),
              replicas: Number(env.FINGERPRINT_REPLICAS ?? 1),
            }),
          },
        }
      : {}),
    hooks: { onVerdict: (event, context) => observeVerdict(env, event, context) },
  }
}

/**
 * `GUARD_HEARTBEAT_MS`: ms between `: held` comments while a stream is held for its verdict; unset,
 * empty or `0`: none (the option's default). The deployed Worker sets 15000 in wrangler.toml, under
 * the idle limits of common clients and proxies (docs/streaming.md, "Heartbeat"). Anything else is
 * the option's to validate (a whole number of at least 100).
 */
function heartbeat(value: string | undefined): { heartbeatMs?: number } {
  const trimmed = value?.trim() ?? ''
  if (trimmed === '' || trimmed === '0') return {}
  return { heartbeatMs: Number(trimmed) }
}

/**
 * `GUARD_OBSERVE`: the checks in observe mode, `content`, `timing` and `echo` separated by commas or
 * spaces, or `all`; unset, empty or `off`: every check enforced (the option's default). A name it does
 * not know stops the guard rather than leave a check the operator meant to observe enforced, or the
 * reverse.
 */
function parseObserve(value: string | undefined): Pick<GuardOptions, 'observe'> {
  const names = (value ?? '')
    .split(/[\s,]+/)
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '')
  if (names.length === 0 || (names.length === 1 && names[0] === 'off')) return {}
  if (names.length === 1 && names[0] === 'all') {
    return { observe: { content: true, timing: true, echo: true } }
  }
  const observe: Record<string, boolean> = {}
  for (const name of names) {
    if (name !== 'content' && name !== 'timing' && name !== 'echo') {
      throw new Error('GUARD_OBSERVE must list content, timing or echo (or be all or off)')
    }
    observe[name] = true
  }
  return { observe }
}

/**
 * `GUARD_TEXT_MEMO_BYTES`: the memo's budget in bytes, `0` for none (the option validates the rest:
 * a value that is not a whole number of at least 64 KiB names `ceiling.textMemo.budgetBytes`).
 */
function parseTextMemo(value: string): { budgetBytes: number } | false {
  const trimmed = value.trim()
  if (trimmed === '0') return false
  return { budgetBytes: trimmed === '' ? Number.NaN : Number(trimmed) }
}

/**
 * `GUARD_SECRETS`: one policy for every kind, or the `secrets` option as JSON; unset, the Worker's
 * default (high-confidence kinds substituted, the rest counted).
 */
function parseSecrets(value: string | undefined): SecretsOptions {
  if (value === undefined || value.trim() === '') return WORKER_SECRETS_DEFAULT
  const policy = value.trim()
  if (policy === 'off' || policy === 'detect' || policy === 'substitute') {
    return { high: policy, medium: policy }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(policy)
  } catch {
    throw new Error('GUARD_SECRETS must be off, detect, substitute or a JSON object')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error('GUARD_SECRETS must be off, detect, substitute or a JSON object')
  }
  return parsed as SecretsOptions
}

function parseModels(json: string | undefined): Record<string, Partial<ModelProfile>> | undefined {
  if (!json) return undefined
  const value: unknown = JSON.parse(json)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error('GUARD_MODELS must be a JSON object of model profiles')
  }
  return value as Record<string, Partial<ModelProfile>>
}

/**
 * The largest request body accepted, bytes.
 *
 * @example
 * await readJsonObject(request, { limit: bodyLimit(env), pace: bodyPace(env) })
 */
export function bodyLimit(env: Env): number {
  const n = Number(env.MAX_BODY_BYTES)
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_MAX_BODY_BYTES
}

/**
 * How fast every body must arrive (`BODY_GRACE_MS`, `BODY_MIN_BYTES_PER_SECOND`); each unset or
 * invalid value keeps its default.
 *
 * @example
 * await readForm(request, { limit: 4096, pace: bodyPace(env) })
 */
export function bodyPace(env: Env): BodyPace {
  const grace = Number(env.BODY_GRACE_MS)
  const rate = Number(env.BODY_MIN_BYTES_PER_SECOND)
  return {
    graceMs: Number.isFinite(grace) && grace > 0 ? grace : DEFAULT_BODY_PACE.graceMs,
    minBytesPerSecond:
      Number.isFinite(rate) && rate > 0 ? rate : DEFAULT_BODY_PACE.minBytesPerSecond,
  }
}
