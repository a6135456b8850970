-- Verdict telemetry (src/telemetry/, docs/telemetry.md): what the console plots and /admin/metrics
-- counts. Figures only, never prompt or answer text, never canaries. Additive only.

-- A sample of verdicts: every refusal and quarantine, releases at VERDICT_SAMPLE_RATE. `weight` is how
-- many verdicts the row stands for (1 / the rate it was kept at). Bounded by retention (days) and a
-- row cap, both enforced a few rows at a time on write (src/telemetry/d1.ts).
CREATE TABLE IF NOT EXISTS verdict_samples (
  -- Grows with every insert and is never reused while newer rows exist: the row cap deletes by it.
  id INTEGER PRIMARY KEY,
  -- ms since epoch.
  at INTEGER NOT NULL,
  model TEXT NOT NULL,
  tenant TEXT NOT NULL,
  -- 'release' | 'quarantine' | 'reject'.
  action TEXT NOT NULL,
  -- JSON array of reason codes.
  reasons TEXT NOT NULL,
  estimated_tokens INTEGER,
  token_bound INTEGER,
  ttft_ms INTEGER,
  expected_min_ms INTEGER,
  first_byte_ms INTEGER,
  -- JSON array of script classes (refusals), or NULL.
  scripts TEXT,
  incident_id TEXT,
  weight REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS verdict_samples_at ON verdict_samples (at);
CREATE INDEX IF NOT EXISTS verdict_samples_model_at ON verdict_samples (model, at);
-- Refusals and quarantines only (the few rows the console lists by reason): a partial index costs
-- nothing on the releases that make up most rows. Queries repeat `action != 'release'` to use it.
CREATE INDEX IF NOT EXISTS verdict_samples_unreleased ON verdict_samples (at)
  WHERE action != 'release';

-- Exact counters per label set, for /admin/metrics (never sampled). Unused labels are ''. Label
-- values are bounded before they get here: models by the configured profiles (anything else is
-- 'other'), reasons by their code pattern, scripts by the fixed class list. No tenant label.
CREATE TABLE IF NOT EXISTS verdict_counters (
  metric TEXT NOT NULL,
  model TEXT NOT NULL,
  action TEXT NOT NULL,
  reason TEXT NOT NULL,
  script TEXT NOT NULL,
  value INTEGER NOT NULL,
  PRIMARY KEY (metric, model, action, reason, script)
) WITHOUT ROWID;

-- Histogram buckets per model, NOT cumulative: an observation adds 1 to the one bucket it falls in
-- (one upsert), and its value to that bucket's sum. The renderer accumulates; the total count and sum
-- are the sums over the buckets, so count, sum and buckets cannot disagree. `le` is the bucket's upper
-- bound in seconds as OpenMetrics writes it ('0.05' … '+Inf').
CREATE TABLE IF NOT EXISTS verdict_histograms (
  metric TEXT NOT NULL,
  model TEXT NOT NULL,
  le TEXT NOT NULL,
  count INTEGER NOT NULL,
  sum REAL NOT NULL,
  PRIMARY KEY (metric, model, le)
) WITHOUT ROWID;
