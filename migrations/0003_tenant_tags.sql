-- Tag → tenant directory (src/attribution/directory.ts): which tenants own a canary's tenant tag, so a
-- leak caught in one isolate is attributed to a tenant minted in another. Additive only.
-- `tag` is '<key fingerprint>:<tenant tag>' (16 + 1 + 10 hex chars): tags of different secrets never
-- mix. More than one row per tag is a tag collision: every owner is reported, none is picked.
CREATE TABLE IF NOT EXISTS tenant_tags (
  tag TEXT NOT NULL,
  tenant TEXT NOT NULL,
  -- When the pair was first recorded (ms since epoch).
  at INTEGER NOT NULL,
  PRIMARY KEY (tag, tenant)
) WITHOUT ROWID;
