/**
 * @module The leak verdict the alert tests start from: tenant B's answer withheld for carrying
 * tenant A's canary.
 */
import type { VerdictLog } from '../../src/core/vocabulary/options'

/** A quarantine line as the guard logs it for a foreign-canary leak from tenant-a to tenant-b. */
export const LEAK_VERDICT: VerdictLog = {
  requestId: 'req_1',
  tenant: 'tenant-b',
  model: '@cf/zai-org/glm-5.3',
  action: 'quarantine',
  reasons: ['foreign_canary'],
  incidentId: 'inc_1',
  sourceTenants: ['tenant-a'],
}
