-- Withheld text over 1 MiB sealed (a long answer with its reasoning; Han text is 3 bytes a character)
-- cannot go in its incident's row: D1 refuses rows and BLOBs over 2,000,000 bytes. Its ciphertext is
-- stored here in parts of at most 1 MiB, in order, and the row's `withheld` is left empty.
CREATE TABLE IF NOT EXISTS incident_withheld (
  id TEXT NOT NULL,
  part INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (id, part)
);
