-- Console sessions (src/worker/admin/sessions.ts): a session cookie is honoured only while its row is
-- here, so logging out in one isolate ends the session in every isolate. Additive only.
-- `id`: SHA-256 (hex) of the cookie's random nonce (never the cookie itself); `expires`: ms since epoch,
-- the same expiry as the signed cookie's. Expired rows are deleted on each login.
CREATE TABLE IF NOT EXISTS admin_sessions (
  id TEXT PRIMARY KEY,
  expires INTEGER NOT NULL
) WITHOUT ROWID;
