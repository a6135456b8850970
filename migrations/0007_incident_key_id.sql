-- Key rotation (docs/incidents.md, "Rotating QUARANTINE_KEY"): each record names the key its withheld
-- text is sealed under, so the Worker reads it under QUARANTINE_KEY_PREVIOUS after a rotation.
-- `key_id`: 16 hex characters derived from the key (src/quarantine/seal.ts), never the key. NULL for
-- records sealed before key ids: every key of the keyring is tried on them. Additive only.
ALTER TABLE incidents ADD COLUMN key_id TEXT;
