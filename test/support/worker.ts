/**
 * @module Driving the deployed Worker (SELF) against the simulator Worker bound as env.AI.
 */
import { env, SELF } from 'cloudflare:test'
import type { SimControl } from '../../sim/worker'

/** The simulator behind the Worker's AI binding, with its test controls. */
export const sim = (env as unknown as { AI: SimControl }).AI

/**
 * The Worker's profile says the pool is 681,280 tokens; with this the simulator's real pool is 8,192,
 * so a 12,000-token prompt passes the ceiling and meets the leak: the other guards must catch it.
 */
export const POOL_BELOW_PROFILE = {
  mode: 'pd-abort-leak',
  poolTokens: 8_192,
  contextWindow: 16_384,
  prefillTokensPerSecond: 500_000,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
} as const

export const KEY_A = 'dev-key-tenant-a'
export const KEY_B = 'dev-key-tenant-b'
export const ADMIN = 'dev-only-admin-secret'

/** POST a JSON body to the Worker. */
export function post(path: string, body: unknown, key?: string): Promise<Response> {
  return SELF.fetch(`http://guard.test${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

/** GET from the Worker. */
export function get(path: string, bearer?: string): Promise<Response> {
  return SELF.fetch(`http://guard.test${path}`, {
    headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
  })
}
