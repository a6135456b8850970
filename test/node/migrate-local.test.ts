/**
 * @module `npm start`'s prestart prints one line, not wrangler's migration table once per migration
 * (four tables on a fresh clone), and the whole output when something fails.
 */
import { describe, expect, it } from 'vitest'
import { summarize } from '../../scripts/migrate-local'
import { nodeHost } from '../ecosystem/node-host'

/** Wrangler's table after one of two migrations, then after both (as `d1 migrations apply` prints). */
const TWO_STEPS = `🚣 3 commands executed successfully.
┌────────────────────────────┬────────┐
│ name                       │ status │
├────────────────────────────┼────────┤
│ 0001_incidents.sql         │ ✅     │
├────────────────────────────┼────────┤
│ 0002_incident_counts.sql   │ 🕒️    │
└────────────────────────────┴────────┘
🚣 2 commands executed successfully.
┌────────────────────────────┬────────┐
│ name                       │ status │
├────────────────────────────┼────────┤
│ 0001_incidents.sql         │ ✅     │
├────────────────────────────┼────────┤
│ 0002_incident_counts.sql   │ ✅     │
└────────────────────────────┴────────┘`

describe('the local migrations prestart', () => {
  it('should sum wrangler tables up in one line, and refuse to when one is still pending', () => {
    expect(summarize(TWO_STEPS)).toBe(
      'Local D1 (QUARANTINE_DB): 2 migrations applied (0001_incidents.sql, 0002_incident_counts.sql).',
    )
    const one = TWO_STEPS.slice(TWO_STEPS.indexOf('🚣 2')).replace(/│ 0001[^\n]*\n├[^\n]*\n/, '')
    expect(summarize(one)).toBe(
      'Local D1 (QUARANTINE_DB): 1 migration applied (0002_incident_counts.sql).',
    )
    expect(summarize('✅ No migrations to apply!')).toBe(
      'Local D1 (QUARANTINE_DB): no migrations to apply.',
    )
    expect(summarize(TWO_STEPS.slice(0, TWO_STEPS.indexOf('🚣 2')))).toBeUndefined()
    expect(summarize('✘ [ERROR] something else')).toBeUndefined()
  })

  it('should print one line on a fresh database and one when it is up to date', async () => {
    const host = await nodeHost()
    const dir = host.tempDir('migrate-local-')
    try {
      const args = ['tsx', 'scripts/migrate-local.ts', '--persist-to', dir]
      const fresh = (await host.run('npx', args, { cwd: host.cwd })).trim()
      expect(fresh.split('\n')).toHaveLength(1)
      expect(fresh).toMatch(
        /^Local D1 \(QUARANTINE_DB\): \d+ migrations applied \(0001_incidents\.sql,/,
      )
      const again = (await host.run('npx', args, { cwd: host.cwd })).trim()
      expect(again).toBe('Local D1 (QUARANTINE_DB): no migrations to apply.')
    } finally {
      host.remove(dir)
    }
  }, 60_000)
})
