import { applyD1Migrations, type D1Migration, env } from 'cloudflare:test'

// Every workerd test file starts with the quarantine schema applied to the local D1 (idempotent).
const bindings = env as unknown as { QUARANTINE_DB: D1Database; TEST_MIGRATIONS: D1Migration[] }
await applyD1Migrations(bindings.QUARANTINE_DB, bindings.TEST_MIGRATIONS)
