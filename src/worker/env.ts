/**
 * @module The deployable Worker's bindings.
 */
import type { AiRunner } from '../call/upstream'
import type { FingerprintLog } from './fingerprint-log'
import type { GuardState } from './state'

/** Bindings and secrets of the guard Worker (see wrangler.toml and the README's deploy section). */
export interface Env {
  /** Workers AI in production; the simulator's RPC entrypoint locally (wrangler.dev.toml). */
  AI: AiRunner
  /** Locally only: the simulator's HTTP routes, forwarded under /sim/ (never bound in production). */
  SIM?: Fetcher
  /** Canary key, ≥ 32 bytes. `wrangler secret put GUARD_SECRET`. */
  GUARD_SECRET: string
  /** JSON object mapping API keys to tenant ids. `wrangler secret put TENANT_KEYS`. */
  TENANT_KEYS?: string
  /** KV: `key:<sha-256 hex of the API key>` → tenant id, for many tenants. */
  TENANTS?: KVNamespace
  /** JSON object of per-model profile overrides (the `models` option). */
  GUARD_MODELS?: string
  /** `verified` (default) or `async`: when a stream's first bytes may leave (the `streamRelease` option). */
  GUARD_STREAM_RELEASE?: string
  /** ms between `: held` comments while a stream is held for its verdict (`heartbeatMs`); unset: none. */
  GUARD_HEARTBEAT_MS?: string
  /** Largest accepted request body, bytes. @default 16777216 (16 MiB) */
  MAX_BODY_BYTES?: string
  /** Bearer secret of the /admin routes. Admin routes are off when it is unset. */
  ADMIN_SECRET?: string
  /** D1 database of quarantined answers (schema in migrations/). In-memory per isolate when unbound. */
  QUARANTINE_DB?: D1Database
  /** Secret (≥ 32 bytes) the withheld text is encrypted under. `wrangler secret put QUARANTINE_KEY`. */
  QUARANTINE_KEY?: string
  /** Days a quarantine record is kept. @default 30 */
  QUARANTINE_RETENTION_DAYS?: string
  /** Shared guard state (calibration, learned baselines) across isolates. */
  GUARD_STATE?: DurableObjectNamespace<GuardState>
  /** Prompt fingerprints shared across isolates (foreign-content check), one object per model. */
  FINGERPRINTS?: DurableObjectNamespace<FingerprintLog>
}
