import { env } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { chat, document } from '../support/prompts'
import { get, KEY_B, post, sim } from '../support/worker'

/**
 * Under `npm start` (wrangler.dev.toml) the simulator's control routes answer through the guard
 * Worker at /sim/*, so a reader can steer the engine the README's examples run against; production
 * (wrangler.toml) binds no SIM, and there they do not exist.
 */
describe('the simulator under npm start', { timeout: 30_000 }, () => {
  beforeEach(async () => {
    await sim.reset()
  })

  it('should change the engine behind the guard through /sim/config, and report it at /sim/stats', async () => {
    const set = await post('/sim/config', { mode: 'stale-pages', prefillTokensPerSecond: 1e9 })
    expect(set.status).toBe(200)
    expect(await set.json()).toMatchObject({ config: { mode: 'stale-pages' } })
    // The engine the guard calls is that engine: its stats count the guarded request.
    const answer = await post(
      '/v1/chat/completions',
      { model: '@cf/zai-org/glm-5.3', ...chat(document('TENANT-B-NOTE', 300)) },
      KEY_B,
    )
    await answer.arrayBuffer()
    const stats = (await (await get('/sim/stats')).json()) as {
      config: { mode: string }
      recent: { account: string; mode: string }[]
    }
    expect(stats.config.mode).toBe('stale-pages')
    // Each attempt of the guarded request (echo retries included) reached the reconfigured engine.
    expect(stats.recent.length).toBeGreaterThan(0)
    expect(stats.recent.every((r) => r.mode === 'stale-pages')).toBe(true)
  })

  it('should not exist where SIM is not bound (production)', async () => {
    const production = { ...(env as unknown as Env), SIM: undefined }
    const ctx = {
      waitUntil() {},
      passThroughOnException() {},
      props: {},
    } as unknown as ExecutionContext
    for (const path of ['/sim/stats', '/sim/config']) {
      const res = await createApp().fetch(new Request(`http://guard.test${path}`), production, ctx)
      expect(res.status).toBe(404)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found')
    }
  })
})
