-- Incident aggregation (src/quarantine/aggregate.ts): repeated incidents of one tenant, model and set
-- of reasons within a window are folded into one record. Additive only: existing rows count 1.
-- `count`: incidents this record stands for; `last_at`: when the latest of them happened (ms since
-- epoch; NULL until a second one is folded in).
ALTER TABLE incidents ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE incidents ADD COLUMN last_at INTEGER;
