import { describe, expect, it } from 'vitest'
import { type DemoRow, formatTable, runScenario } from '../../scripts/demo'

describe('incident demo', () => {
  it('should show tenant B receiving tenant A’s secret on the over-pool request only', async () => {
    const rows = await runScenario()
    expect(rows.map((r) => [r.tenant, r.status])).toEqual([
      ['A', '200'],
      ['B', '200'],
      ['B', '200'],
    ])
    const [a, bShort, bLong] = rows as [DemoRow, DemoRow, DemoRow]
    expect(bLong.promptTokens).toBeGreaterThan(681_280)
    expect(bLong.promptTokens).toBeLessThanOrEqual(1_048_576)
    expect(bLong.leaksSecretOf).toBe('A')
    expect(bLong.received).toContain('PAYROLL-7Q2X9')
    expect(bShort.leaksSecretOf).toBeNull()
    expect(a.leaksSecretOf).toBeNull()
    expect(a.received).toContain('SECRET-A-PAYROLL')
    expect(bLong.ttftMs).toBeGreaterThanOrEqual(0)
    expect(Object.keys(bLong).sort()).toEqual(
      ['leaksSecretOf', 'promptTokens', 'received', 'request', 'status', 'tenant', 'ttftMs'].sort(),
    )
    const table = formatTable(rows)
    expect(table).toContain('YES (A)')
    expect(table.split('\n')).toHaveLength(5)
  }, 60_000)
})
