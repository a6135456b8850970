-- Quarantined answers. The withheld text may hold another customer's data: it is stored only as
-- AES-GCM ciphertext (key from the QUARANTINE_KEY secret), bound to its incident id.
CREATE TABLE IF NOT EXISTS incidents (
  id TEXT PRIMARY KEY,
  at INTEGER NOT NULL,
  tenant TEXT NOT NULL,
  model TEXT NOT NULL,
  request_id TEXT NOT NULL,
  -- JSON array, and the same reasons as ',a,b,' for exact-match filtering with LIKE.
  reasons TEXT NOT NULL,
  reason_tags TEXT NOT NULL,
  figures TEXT NOT NULL,
  canaries TEXT NOT NULL,
  source_tenants TEXT NOT NULL,
  withheld_iv BLOB NOT NULL,
  withheld BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS incidents_at ON incidents (at);
CREATE INDEX IF NOT EXISTS incidents_tenant_at ON incidents (tenant, at);
