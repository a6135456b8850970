/**
 * @module Observe mode in the deployed Worker: set by the operator's `GUARD_OBSERVE` alone. With it,
 * a truncated answer (a judgement: echo and usage) reaches the client and is recorded — an incident
 * the console lists under `?observed=1`, `would_block` in /admin/metrics; without it, a request that
 * asks for observe in its body or headers still gets the 502.
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { GuardError } from '../../src/core/errors'
import type { QuarantineSummary } from '../../src/core/vocabulary/quarantine'
import { guardFor } from '../../src/worker/config'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { chat, document } from '../support/prompts'
import { captureWorkerVerdicts } from '../support/verdicts'
import { ADMIN, get, KEY_A, KEY_B, POOL_BELOW_PROFILE, sim } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'

/** The Worker's bindings with `GUARD_OBSERVE` set (a new object: a guard of its own). */
const withObserve = (value?: string): Env => {
  const base = { ...(env as unknown as Env) }
  delete base.GUARD_OBSERVE
  return value === undefined ? base : { ...base, GUARD_OBSERVE: value }
}

/** One request through the Worker's own fetch with these bindings; background work awaited. */
async function send(
  bindings: Env,
  body: Record<string, unknown>,
  key: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const ctx = createExecutionContext()
  const res = await worker.fetch(
    new Request('http://guard.test/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
    bindings,
    ctx,
  )
  const text = await res.text()
  await waitOnExecutionContext(ctx)
  return { status: res.status, text }
}

/** A's honest answer, then B's over the simulator's real pool, which truncates it. */
async function truncated(
  bindings: Env,
  stream: boolean,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  await sim.reset(POOL_BELOW_PROFILE)
  const a = await send(bindings, { model: MODEL, ...chat(document('TENANT-A', 6_000)) }, KEY_A)
  expect(a.status).toBe(200)
  await sim.configure({ mode: 'truncate' })
  return send(
    bindings,
    { model: MODEL, stream, ...chat(document('TENANT-B', 12_000)), ...extra },
    KEY_B,
    headers,
  )
}

beforeEach(async () => {
  await sim.reset(POOL_BELOW_PROFILE)
})

describe('GUARD_OBSERVE', () => {
  const logged = captureWorkerVerdicts()

  for (const stream of [false, true]) {
    it(`should release a truncated answer, list it under observed and count would_block (${stream ? 'stream' : 'whole'})`, async () => {
      const since = Date.now()
      const b = await truncated(withObserve('all'), stream)
      expect(b.status).toBe(200)
      expect(b.text).toContain('TENANT-B')
      expect(b.text).not.toContain('response_quarantined')
      // The would_block line names the incident the console lists as observed.
      const blocked = logged.events.filter((e) => e.action === 'would_block')
      expect(blocked.map((e) => e.tenant)).toEqual(['tenant-b'])
      const id = blocked[0]!.incidentId!
      expect(blocked[0]!.reasons.join()).toMatch(/echo_missing|usage_undercount/)
      const list = async (query: string) =>
        (
          (await (await get(`/admin/incidents?since=${since}&${query}`, ADMIN)).json()) as {
            data: QuarantineSummary[]
          }
        ).data
      expect((await list('observed=1')).map((r) => [r.id, r.observed])).toEqual([[id, true]])
      expect((await list('observed=0')).map((r) => r.id)).not.toContain(id)
      // The console page, filtered, shows it with its observed tag.
      const page = await (await fetchHtml('/admin/incidents?observed=1')).text()
      expect(page).toContain(`data-incident="${id}"`)
      expect(page).toMatch(/class="tag observed"/)
      expect(page).toMatch(/<option value="1" selected>/)
      // /admin/metrics counts it as would_block, under its first reason.
      const metrics = await (await get('/admin/metrics', ADMIN)).text()
      const reason = blocked[0]!.reasons[0]!
      expect(metrics).toMatch(
        new RegExp(`guard_verdicts_total\\{[^}]*action="would_block",reason="${reason}"\\} [1-9]`),
      )
    }, 60_000)

    it(`should still withhold it when the request asks for observe (${stream ? 'stream' : 'whole'})`, async () => {
      const b = await truncated(
        withObserve(),
        stream,
        { observe: { content: true, timing: true, echo: true }, guard_mode: 'observe' },
        { 'x-guard-observe': 'all', 'x-guard-mode': 'observe', 'x-ai-guard-observe': 'true' },
      )
      expect(b.text).toContain('response_quarantined')
      expect(b.text).not.toContain('TENANT-B ledger')
      expect(logged.events.filter((e) => e.action === 'would_block')).toEqual([])
    }, 60_000)
  }

  it('should refuse to start on a check it does not know, and accept the forms it documents', () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    for (const value of ['proof', 'content,canary', 'everything', 'content;timing']) {
      let error: unknown
      try {
        guardFor(withObserve(value))
      } catch (caught) {
        error = caught
      }
      expect(error, value).toBeInstanceOf(GuardError)
      expect((error as GuardError).code).toBe('guard_unavailable')
      expect((error as GuardError).message).toContain('GUARD_OBSERVE')
    }
    errors.mockRestore()
    for (const value of ['', 'off', 'all', 'content', 'timing, echo', 'Content,TIMING,echo']) {
      expect(() => guardFor(withObserve(value)), value).not.toThrow()
    }
  })
})

/** A console page as a browser asks for it. */
async function fetchHtml(path: string): Promise<Response> {
  return worker.fetch(
    new Request(`http://guard.test${path}`, {
      headers: { accept: 'text/html', authorization: `Bearer ${ADMIN}` },
    }),
    env as unknown as Env,
    createExecutionContext(),
  )
}
