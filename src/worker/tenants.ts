/**
 * @module Tenant authentication: an API key maps to a tenant id, from a Worker secret or KV — never code.
 */
import { constantTimeEqual, GuardError, toHex } from '../core'
import type { Env } from './env'

/**
 * The tenant a bearer key belongs to, or undefined. Keys in `TENANT_KEYS` are compared in constant time
 * (every key is compared, whatever matches), so response timing does not reveal a key's prefix; KV is
 * looked up by the key's SHA-256, so KV never stores a usable key.
 *
 * @example
 * const tenant = await tenantFor(env, c.req.header('authorization'))
 */
export async function tenantFor(
  env: Env,
  authorization: string | undefined,
): Promise<string | undefined> {
  const match = /^Bearer\s+(\S{8,512})\s*$/i.exec(authorization ?? '')
  if (!match) return undefined
  const key = match[1]!
  const fromSecret = keyMap(env.TENANT_KEYS)
  let found: string | undefined
  for (const [candidate, tenant] of fromSecret) {
    if (constantTimeEqual(candidate, key) && found === undefined) found = tenant
  }
  if (found !== undefined) return found
  if (env.TENANTS) {
    let tenant: string | null
    try {
      tenant = await env.TENANTS.get(`key:${await sha256Hex(key)}`)
    } catch (error) {
      // Fail closed, but say so: a retryable 503, not a 401 that would tell the client its key is bad.
      throw new GuardError('guard_unavailable', 'The tenant directory is unavailable; try again.', {
        cause: error,
      })
    }
    if (tenant) return tenant
  }
  return undefined
}

let parsedFrom: string | undefined
let parsed: [string, string][] = []

function keyMap(json: string | undefined): [string, string][] {
  if (json === parsedFrom) return parsed
  parsedFrom = json
  parsed = []
  if (!json) return parsed
  try {
    const value: unknown = JSON.parse(json)
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) {
        if (typeof v === 'string' && v !== '' && k.length >= 8) parsed.push([k, v])
      }
    }
  } catch {
    console.error(
      JSON.stringify({ event: 'ai_guard_config', error: 'TENANT_KEYS is not valid JSON' }),
    )
  }
  return parsed
}

/** @deprecated Import {@link constantTimeEqual} from src/bytes.ts; kept while a test imports it here. */
export { constantTimeEqual as timingSafeEqual } from '../core'

/** Lowercase hex SHA-256 of a string. */
async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return toHex(new Uint8Array(digest))
}
