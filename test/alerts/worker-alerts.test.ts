import { afterEach, describe, expect, it, vi } from 'vitest'
import type { VerdictLog } from '../../src/core/vocabulary/options'
import { alertOnVerdict } from '../../src/worker/alerts/worker-alerts'
import type { Env } from '../../src/worker/env'
import { LEAK_VERDICT } from './fixtures'

const SECRET = 'worker-alert-secret-0123456789-abcdefghij'

const leak: VerdictLog = { ...LEAK_VERDICT, incidentId: 'inc_w' }

/** A fresh bindings object per test: the Worker reads its alert variables once per bindings. */
function env(vars: Partial<Env>): Env {
  return { GUARD_SECRET: 'x', ...vars } as unknown as Env
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe("the Worker's alertOnVerdict", () => {
  it('should hand the deliveries to waitUntil and never await them itself', async () => {
    const fetch = vi.spyOn(globalThis, 'fetch').mockResolvedValue(new Response('ok'))
    const waited: Promise<unknown>[] = []
    const e = env({ ALERT_WEBHOOK_URL: 'https://ops.example/hook', ALERT_WEBHOOK_SECRET: SECRET })
    alertOnVerdict(e, leak, { waitUntil: (p) => waited.push(p) })
    expect(waited).toHaveLength(1)
    await Promise.all(waited)
    expect(fetch).toHaveBeenCalledTimes(1)
    expect(fetch.mock.calls[0]![0]).toBe('https://ops.example/hook')
    // A release, a refusal, or a quarantine without a leak reason: nothing.
    for (const event of [
      { ...leak, action: 'release' as const, incidentId: undefined },
      { ...leak, action: 'reject' as const, incidentId: undefined },
      { ...leak, incidentId: 'inc_2', reasons: ['echo_missing'] },
    ]) {
      alertOnVerdict(e, event, { waitUntil: (p) => waited.push(p) })
    }
    expect(waited).toHaveLength(1)
  })

  it('should log hostile configuration once, in one line, and neither throw nor send', () => {
    const fetch = vi.spyOn(globalThis, 'fetch')
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const e = env({
      ALERT_WEBHOOK_URL: 'http://ops.example/hook-secret-path',
      ALERT_WEBHOOK_SECRET: 'short',
      TENANT_WEBHOOKS: '{"tenant-a":',
      ALERT_WEBHOOK_FORMAT: 'xml',
    })
    const waitUntil = vi.fn()
    for (let i = 0; i < 3; i++) {
      expect(() =>
        alertOnVerdict(e, { ...leak, incidentId: `inc_${i}` }, { waitUntil }),
      ).not.toThrow()
    }
    expect(waitUntil).not.toHaveBeenCalled()
    expect(fetch).not.toHaveBeenCalled()
    expect(errors).toHaveBeenCalledTimes(1)
    const line = JSON.parse(String(errors.mock.calls[0]![0])) as { event: string; error: string }
    expect(line.event).toBe('ai_guard_error')
    expect(line.error).toContain('ALERT_WEBHOOK_SECRET must be at least 32 bytes')
    expect(line.error).toContain('operator alerts are off')
    expect(line.error).toContain('TENANT_WEBHOOKS is not JSON')
    expect(line.error).not.toContain('hook-secret-path')
  })

  it('should log a failed delivery as one ai_guard_alert_failed line, never throw', async () => {
    vi.spyOn(globalThis, 'fetch').mockResolvedValue(new Response('', { status: 410 }))
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const waited: Promise<unknown>[] = []
    const e = env({ ALERT_WEBHOOK_URL: 'https://ops.example/hook', ALERT_WEBHOOK_SECRET: SECRET })
    alertOnVerdict(e, leak, { waitUntil: (p) => waited.push(p) })
    await Promise.all(waited)
    expect(errors.mock.calls.map((c) => JSON.parse(String(c[0])))).toEqual([
      {
        event: 'ai_guard_alert_failed',
        destination: 'operator',
        host: 'ops.example',
        incidentId: 'inc_w',
        attempts: 1,
        status: 410,
        error: 'HTTP 410',
      },
    ])
  })
})
