-- Observe mode (docs/how-it-decides.md): an incident recorded for an answer that was released, because
-- every check that judged it was observed. Additive only: existing rows are withheld answers (0).
-- `observed`: 1 when the answer reached its client and the record says what enforce would have withheld.
ALTER TABLE incidents ADD COLUMN observed INTEGER NOT NULL DEFAULT 0;
