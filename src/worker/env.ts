/**
 * @module The deployable Worker's bindings.
 */
import type { AiRunner } from '../core'
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
  /** `verified` (default) or `async`: when a stream's first bytes may leave (the `stream.release` option). */
  GUARD_STREAM_RELEASE?: string
  /** ms between `: held` comments while a stream is held for its verdict (`stream.heartbeatMs`); unset or `0`: none. wrangler.toml: 15000. */
  GUARD_HEARTBEAT_MS?: string
  /**
   * Secrets in prompts: `off`, `detect`, `substitute`, or a JSON object of the `secrets` option (per
   * confidence, kind, model, operator patterns). @default {"high":"substitute","medium":"detect"} —
   * see docs/secrets.md
   */
  GUARD_SECRETS?: string
  /**
   * Bytes per isolate the guard keeps of each tenant's long texts between its requests (the `ceiling.textMemo`
   * option: digests and what was computed from them, never the text); `0` turns it off.
   * @default 16777216 (16 MiB)
   */
  GUARD_TEXT_MEMO_BYTES?: string
  /**
   * Checks run in observe mode (the `observe` option): `content`, `timing`, `echo`, comma-separated,
   * or `all`; `off` or unset: all enforced. Proof is enforced whatever it says.
   */
  GUARD_OBSERVE?: string
  /** Largest accepted request body, bytes. @default 16777216 (16 MiB) */
  MAX_BODY_BYTES?: string
  /** ms a request body may take before its pace is checked; slower bodies get 408. @default 10000 */
  BODY_GRACE_MS?: string
  /** Bytes per second every body must average after `BODY_GRACE_MS`. @default 65536 */
  BODY_MIN_BYTES_PER_SECOND?: string
  /**
   * Bytes the isolate's model requests in flight may reserve together (src/worker/admission.ts); over
   * it a request gets 503 with `Retry-After`. @default 83886080 (80 MiB of the isolate's 128 MB)
   */
  GUARD_MEMORY_BUDGET_BYTES?: string
  /**
   * Origins a browser app may call the model routes from: exact origins, comma-separated
   * (`https://app.example.com`); `*` is never honoured. Unset: no CORS headers (server-side callers).
   */
  GUARD_CORS_ORIGINS?: string
  /**
   * ms a long prompt that does not fit yet waits for its tenant's turn before its 503; `0` refuses at
   * once (src/worker/memory-ledger.ts). @default 30000
   */
  GUARD_ADMISSION_WAIT_MS?: string
  /** Bearer secret of the /admin routes. Admin routes are off when it is unset. */
  ADMIN_SECRET?: string
  /** D1 database of quarantined answers (schema in migrations/). In-memory per isolate when unbound. */
  QUARANTINE_DB?: D1Database
  /** Secret (≥ 32 bytes) the withheld text is encrypted under. `wrangler secret put QUARANTINE_KEY`. */
  QUARANTINE_KEY?: string
  /**
   * The key records were sealed under before the last rotation: read, never written with
   * (docs/incidents.md, "Rotating QUARANTINE_KEY"). `wrangler secret put QUARANTINE_KEY_PREVIOUS`.
   */
  QUARANTINE_KEY_PREVIOUS?: string
  /** Days a quarantine record is kept. @default 30 */
  QUARANTINE_RETENTION_DAYS?: string
  /**
   * Share of released verdicts kept as samples for the console, 0 to 1 (refusals and quarantines are
   * always kept; the metrics' counters are exact whatever the rate). @default 1 — see docs/telemetry.md
   */
  VERDICT_SAMPLE_RATE?: string
  /** Days a verdict sample is kept. @default 7 */
  VERDICT_RETENTION_DAYS?: string
  /** Most verdict samples kept; the oldest go first. @default 500000 */
  VERDICT_MAX_SAMPLES?: string
  /** `off`: no verdict samples or counters are written (the console's plots and /admin/metrics stay empty). */
  VERDICT_TELEMETRY?: string
  /** Shared guard state (calibration, learned baselines) across isolates. */
  GUARD_STATE?: DurableObjectNamespace<GuardState>
  /**
   * Prompt fingerprints shared across isolates (foreign-content check): per model, a grid of
   * `FINGERPRINT_SHARDS` × `FINGERPRINT_REPLICAS` objects (docs/fingerprints.md, "Sharing across isolates").
   */
  FINGERPRINTS?: DurableObjectNamespace<FingerprintLog>
  /** Columns of each model's fingerprint log, by tenant (1–256). @default 1 */
  FINGERPRINT_SHARDS?: string
  /** Rows of each model's fingerprint log: each read asks one row. @default 1 */
  FINGERPRINT_REPLICAS?: string
  /**
   * Webhook alerted on every leak incident (https; plain http only to localhost/127.0.0.1). Off when
   * unset. Signed with `ALERT_WEBHOOK_SECRET`; never sent unsigned (docs/alerts.md).
   */
  ALERT_WEBHOOK_URL?: string
  /** Signing secret of the alert webhooks, ≥ 32 bytes. `wrangler secret put ALERT_WEBHOOK_SECRET`. */
  ALERT_WEBHOOK_SECRET?: string
  /** `json` (the versioned alert document) or `slack` (an incoming-webhook message). @default json */
  ALERT_WEBHOOK_FORMAT?: string
  /**
   * JSON object tenant id → `{ "url", "secret"?, "format"? }`: the tenant whose data leaked is told
   * (only what concerns it). Without `secret`, signed with a key derived from `ALERT_WEBHOOK_SECRET`.
   * `wrangler secret put TENANT_WEBHOOKS`.
   */
  TENANT_WEBHOOKS?: string
  /** Comma-separated quarantine reasons that alert, or `all`. @default foreign_canary,foreign_stand_in,foreign_content */
  ALERT_REASONS?: string
  /** The console's public base URL (`https://guard.example.com`): alerts link to its incident pages. */
  CONSOLE_URL?: string
}
