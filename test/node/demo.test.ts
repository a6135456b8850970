import { describe, expect, it } from 'vitest'
import { type DemoReport, formatGuardTable, formatTable } from '../../scripts/demo'
import { nodeHost } from '../ecosystem/node-host'

/** Runs a command as the README shows it; resolves with its stdout alone (stderr is the logs'). */
async function stdoutOf(command: string, args: string[]): Promise<string> {
  const host = await nodeHost()
  const { code, out, err } = await host.capture(command, args, { cwd: host.cwd, env: host.env })
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}:\n${err}`)
  return out
}

describe('incident demo', () => {
  it('should show the leak unguarded, and the guard stopping it with and without the right pool', async () => {
    // Exactly the README's command: its stdout must be JSON and nothing else (npm's banner included).
    const rows = JSON.parse(
      await stdoutOf('npm', ['run', '-s', 'demo', '--', '--json']),
    ) as DemoReport[]
    const [a, bShort, bLong] = rows as [DemoReport, DemoReport, DemoReport]

    // Unguarded: the incident. B's over-pool request gets A's payroll secret with a 200.
    expect(rows.map((r) => [r.tenant, r.status])).toEqual([
      ['A', '200'],
      ['B', '200'],
      ['B', '200'],
    ])
    expect(bLong.promptTokens).toBeGreaterThan(681_280)
    expect(bLong.promptTokens).toBeLessThanOrEqual(1_048_576)
    expect(bLong.leaksSecretOf).toBe('A')
    expect(bLong.received).toContain('PAYROLL-7Q2X9')
    expect(bShort.leaksSecretOf).toBeNull()
    expect(a.received).toContain('SECRET-A-PAYROLL')

    // Guarded with the published pool: the ceiling refuses B's request before the engine sees it.
    expect(bLong.guarded).toMatchObject({ verdict: 'reject', leaksSecretOf: null })
    expect(bLong.guarded.status).toBe('400 context_length_exceeded')
    // Guarded with a wrong pool figure: the answer is withheld, by canary and timing evidence.
    expect(bLong.guardedWrongPool).toMatchObject({ verdict: 'quarantine', leaksSecretOf: null })
    expect(bLong.guardedWrongPool.status).toBe('422 response_quarantined')
    // Which evidence fires depends on which stale pages decode read; the answer is withheld either way,
    // and at least one of the proofs (another request's canary, an impossible first token) is there.
    expect(
      bLong.guardedWrongPool.reasons.filter(
        (r) => r === 'foreign_canary' || r === 'ttft_impossible',
      ),
    ).not.toEqual([])
    expect(bLong.guardedWrongPool.reasons).toContain('echo_missing')
    expect(bLong.guardedWrongPool.received).toBe('')
    // Honest requests pass through the guard with their own content.
    for (const row of [a, bShort]) {
      expect(row.guarded.verdict).toBe('release')
      expect(row.guardedWrongPool.verdict).toBe('release')
    }
    expect(a.guarded.received).toContain('SECRET-A-PAYROLL')

    expect(formatTable(rows)).toContain('YES (A)')
    expect(formatGuardTable(rows)).toContain('422 response_quarantined quarantine (')
  }, 90_000)
})
