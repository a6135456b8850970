/**
 * @module Another request's stand-ins in an answer as the record and the verdict log carry them:
 * tenant tags and kinds, never a value or a stand-in.
 */
import type { StandInFinding } from '../vocabulary/evidence-plugins'
import type { QuarantineRecord } from '../vocabulary/quarantine'

/** Findings as quarantine-record entries: tenant tags and kinds, never a value or a stand-in. */
export function standInEntries(found: readonly StandInFinding[]): QuarantineRecord['canaries'] {
  return found.map((f) => ({
    kind: 'foreign',
    channel: f.channel,
    standIn: f.kind,
    ...(f.tenantTag !== undefined ? { tenantTag: f.tenantTag } : {}),
  }))
}

/** Kinds with counts of findings. */
export function kindCounts(found: readonly { kind: string }[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const f of found) counts[f.kind] = (counts[f.kind] ?? 0) + 1
  return counts
}
