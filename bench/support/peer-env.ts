/**
 * @module The guard Worker's bindings for the peer benchmark: `env.AI` is the simulator's
 * OpenAI-compatible HTTP endpoint (through the guard's own `openAiHttpUpstream` adapter), so the guard
 * and Portkey sit in front of the very same simulator process.
 */
import { openAiHttpUpstream } from '../../src/core/adapters'
import type { Env } from '../../src/worker/env'

/** Plain-text settings of the bench's guard Worker. */
export interface PeerVars {
  SIM_URL: string
  GUARD_SECRET: string
  TENANT_KEYS: string
}

/**
 * The Worker's `Env` over the simulator at `SIM_URL` (account `worker`, as one Workers AI account).
 *
 * @example
 * const env = peerEnv({ SIM_URL, GUARD_SECRET, TENANT_KEYS })
 */
export function peerEnv(vars: PeerVars): Env {
  return {
    AI: openAiHttpUpstream({ baseUrl: `${vars.SIM_URL}/v1`, apiKey: 'worker' }),
    GUARD_SECRET: vars.GUARD_SECRET,
    TENANT_KEYS: vars.TENANT_KEYS,
  }
}

/** The bench tenant's API key (TENANT_KEYS maps it to `bench`). */
export const PEER_KEY = 'bench-key-0123456789'
