import { Hono } from 'hono'
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest'
import { SimEngine } from '../../sim/engine'
import {
  aiGuard,
  CANARY_PATTERN,
  createGuard,
  GuardError,
  type GuardOptions,
  guardAi,
  MemoryCalibration,
  MemoryQuarantineStore,
} from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { chat, document } from '../support/prompts'

/**
 * One guard per isolate. A guard's state — the incidents it recorded, what it learned — is what a
 * guard built per request throws away; these tests read that state through what clients and the
 * quarantine store see.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'create-guard-test-secret-0123456789abcdef'

/** An engine that never follows the echo directive: every answer is withheld, and recorded. */
const ignoresEcho: AiRunner = { run: async () => ({ response: 'An answer without the code.' }) }

/** A quick, honest engine that quotes its context (prefill and decode instant). */
function honest(): AiRunner {
  return new SimEngine({
    mode: 'fixed',
    prefillTokensPerSecond: Number.POSITIVE_INFINITY,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  }).binding('app')
}

async function incidentOf(ai: AiRunner): Promise<string> {
  const error = await ai.run(MODEL, chat('Hello there.')).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(GuardError)
  expect((error as GuardError).code).toBe('response_quarantined')
  return (error as GuardError).incidentId!
}

// The guard logs every withheld answer (console.warn without `onVerdict`): captured here, asserted below.
let warn: MockInstance<typeof console.warn>
beforeEach(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
})
afterEach(() => {
  vi.restoreAllMocks()
})
const warned = (): string[] => warn.mock.calls.map((c) => String(c[0]))

describe('createGuard: one guard, a cheap runner per request', () => {
  it("should keep every request's incidents in the guard's store, folded per tenant", async () => {
    const guard = createGuard({ secret: SECRET })
    const a1 = await incidentOf(guard.wrap(ignoresEcho, { tenant: 'alice' }))
    const b1 = await incidentOf(guard.wrap(ignoresEcho, { tenant: 'bob' }))
    const a2 = await incidentOf(guard.wrap(ignoresEcho, { tenant: 'alice' }))
    const records = await guard.quarantine.list()
    expect(records.map((r) => [r.tenant, r.reasons]).sort()).toEqual([
      ['alice', ['echo_missing_repeatedly']],
      ['bob', ['echo_missing_repeatedly']],
    ])
    // The second of alice's incidents is folded into her first record; bob's is his own.
    expect(a2).toBe(a1)
    expect(b1).not.toBe(a1)
    const logged = warned().map((line) => JSON.parse(line) as { action: string; tenant: string })
    expect(logged.map((l) => [l.action, l.tenant])).toEqual([
      ['quarantine', 'alice'],
      ['quarantine', 'bob'],
      ['quarantine', 'alice'],
    ])
  })

  it('should answer each tenant from its own prompt, canary removed', async () => {
    const guard = createGuard({ secret: SECRET })
    const upstream = honest()
    for (const tenant of ['alice', 'bob']) {
      const ai = guard.wrap(upstream, { tenant })
      const text = JSON.stringify(await ai.run(MODEL, chat(document(`LEDGER-${tenant}`, 200))))
      expect(text).toContain(`LEDGER-${tenant}`)
      expect(text).not.toContain(tenant === 'alice' ? 'LEDGER-bob' : 'LEDGER-alice')
      expect(text).not.toMatch(CANARY_PATTERN)
    }
  })

  it('should name the bad option or argument with a plain Error', () => {
    expect(() => createGuard({ secret: 'short' })).toThrow(/option "secret"/)
    const guard = createGuard({ secret: SECRET })
    expect(() => guard.wrap(undefined as unknown as AiRunner)).toThrow(
      /guard.wrap needs an upstream/,
    )
    expect(() => guard.wrap(ignoresEcho, { tenant: '' })).toThrow(/option "tenant"/)
    const observe = (value: unknown) => () =>
      createGuard({ secret: SECRET, observe: value as GuardOptions['observe'] })
    expect(observe('all')).toThrow(/option "observe" must be an object/)
    expect(observe({ proof: true })).toThrow(/option "observe" has no check "proof"/)
    expect(observe({ canary: true })).toThrow(/option "observe" has no check "canary"/)
    expect(observe({ content: 'yes' })).toThrow(/option "observe.content" must be true or false/)
    expect(observe({ content: true, timing: false })).not.toThrow()
  })

  it('should show what it guards, read-only: models, profiles, its stores', () => {
    const quarantine = new MemoryQuarantineStore()
    const calibration = new MemoryCalibration()
    const guard = createGuard({
      secret: SECRET,
      models: {
        'acme/tiny': {
          contextWindow: 8_192,
          kvPoolTokens: 8_192,
          maxPrefillTokensPerSecond: 50_000,
          tokenizerDrift: 0.05,
          defaultOutputReserve: 1_024,
        },
      },
      quarantine: { store: quarantine },
      ceiling: { calibration },
    })
    expect(guard.models()).toEqual([...guard.models()].sort())
    expect(guard.models()).toEqual(expect.arrayContaining([MODEL, 'acme/tiny']))
    const profile = guard.profile('acme/tiny')
    expect(profile).toMatchObject({ kvPoolTokens: 8_192, maxPrefillTokensPerSecond: 50_000 })
    expect(profile.cacheIsolation).toBe('salt')
    // A frozen copy: the guard's own figures change only with new options.
    expect(Object.isFrozen(profile)).toBe(true)
    expect(() => {
      ;(profile as { kvPoolTokens: number }).kvPoolTokens = 1
    }).toThrow(TypeError)
    expect(guard.profile('acme/tiny').kvPoolTokens).toBe(8_192)
    for (const model of ['acme/unknown', '']) {
      const error = (() => {
        try {
          guard.profile(model)
        } catch (caught) {
          return caught
        }
      })()
      expect(error, model).toBeInstanceOf(GuardError)
      expect(error as GuardError).toMatchObject({ code: 'invalid_request', param: 'model' })
    }
    expect(guard.quarantine).toBe(quarantine)
    expect(guard.calibration).toBe(calibration)
  })
})

describe('guardAi called per request', () => {
  it("should reuse the isolate's guard for equal options, so incidents are kept", async () => {
    // Exactly how the README's one-liner is used: options rebuilt from env and the user per request.
    const options = () => ({ secret: `${SECRET}-reuse`, tenant: 'carol' })
    const first = await incidentOf(guardAi(ignoresEcho, options()))
    const second = await incidentOf(guardAi(ignoresEcho, options()))
    expect(second).toBe(first)
  })

  it('should not let one call’s tenant become the default of the next', async () => {
    const quarantine = new MemoryQuarantineStore()
    await incidentOf(
      guardAi(ignoresEcho, { secret: SECRET, quarantine: { store: quarantine }, tenant: 'dave' }),
    )
    await incidentOf(guardAi(ignoresEcho, { secret: SECRET, quarantine: { store: quarantine } }))
    expect((await quarantine.list()).map((r) => r.tenant).sort()).toEqual(['dave', 'default'])
  })

  it('should start over for options with new function objects, and say how to avoid it', async () => {
    const ids = new Set<string>()
    for (let i = 0; i < 10; i++) {
      // A new onVerdict closure per call: different options by identity, so a fresh guard each time.
      const ai = guardAi(ignoresEcho, {
        secret: SECRET,
        tenant: 'erin',
        hooks: { onVerdict: () => {} },
      })
      ids.add(await incidentOf(ai))
    }
    expect(ids.size).toBe(10)
    const advice = warned().filter((m) => m.includes('createGuard'))
    expect(advice).toHaveLength(1)
  })
})

describe('aiGuard', () => {
  function app(upstream: AiRunner) {
    const guard = createGuard({ secret: SECRET })
    const hono = new Hono<{ Variables: { user: string } }>()
    hono.use('*', async (c, next) => {
      c.set('user', c.req.header('x-verified-user-for-test') ?? 'anonymous')
      await next()
    })
    hono.use('/chat/*', aiGuard({ guard, tenant: (c) => c.var.user, upstream: () => upstream }))
    hono.post('/chat/whole', async (c) => c.json(await c.var.ai.run(MODEL, await c.var.aiBody())))
    // The app's own parse is its own: the middleware leaves `c.req.json` as Hono made it.
    hono.post('/chat/raw', async (c) => c.json(await c.req.json()))
    // An app bug after a valid body: its own SyntaxError must stay its own 500.
    hono.post('/chat/buggy', async (c) => {
      await c.var.aiBody()
      return c.json(JSON.parse('{'))
    })
    return { hono, guard }
  }
  const post = (hono: ReturnType<typeof app>['hono'], path: string, body: string) =>
    hono.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-verified-user-for-test': 'frank' },
      body,
    })

  it('should answer a body that is not JSON with 400 invalid_request, not 500', async () => {
    // A client's mistake is not the server's error: nothing is logged as one.
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { hono } = app(honest())
    for (const body of ['{"messages": [', 'not json', '']) {
      const res = await post(hono, '/chat/whole', body)
      expect(res.status).toBe(400)
      const error = ((await res.json()) as { error: { code: string; message: string } }).error
      expect(error.code).toBe('invalid_request')
      expect(error.message).toMatch(/not valid JSON/)
    }
    // JSON of the wrong shape is the guard's to refuse, with the same clear code.
    const res = await post(hono, '/chat/whole', '["a list"]')
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_request')
    expect(logged).not.toHaveBeenCalled()
  })

  it("should leave the app's own SyntaxError after a valid body as the app's 500", async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { hono } = app(honest())
    const res = await post(hono, '/chat/buggy', JSON.stringify(chat('Hi')))
    expect(res.status).toBe(500)
    expect(error.mock.calls.map((c) => String(c[0]))).toEqual([
      expect.stringMatching(/SyntaxError/),
    ])
  })

  // The middleware patches nothing of Hono's: the app's own `c.req.json()` keeps Hono's behaviour, a
  // malformed body there is the app's SyntaxError (its 500), and a valid one parses as before.
  it('should leave c.req.json as Hono made it: the 400 comes only through c.var.aiBody', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { hono } = app(honest())
    const ok = await post(hono, '/chat/raw', JSON.stringify({ a: 1 }))
    expect(await ok.json()).toEqual({ a: 1 })
    const raw = await post(hono, '/chat/raw', 'not json')
    expect(raw.status).toBe(500)
    expect(error.mock.calls.map((c) => String(c[0]))).toEqual([
      expect.stringMatching(/SyntaxError/),
    ])
  })

  it('should share the guard it was given: incidents land in its store', async () => {
    const { hono, guard } = app(ignoresEcho)
    const res = await post(hono, '/chat/whole', JSON.stringify(chat('Hello there.')))
    expect(res.status).toBe(422)
    const body = (await res.json()) as { error: { code: string; incident_id: string } }
    expect(body.error.code).toBe('response_quarantined')
    const records = await guard.quarantine.list()
    expect(records.map((r) => [r.id, r.tenant])).toEqual([[body.error.incident_id, 'frank']])
  })

  it("should answer the verified user's own question through the simulator", async () => {
    const { hono } = app(honest())
    const res = await post(hono, '/chat/whole', JSON.stringify(chat(document('FRANK-NOTES', 200))))
    expect(res.status).toBe(200)
    const text = JSON.stringify(await res.json())
    expect(text).toContain('FRANK-NOTES')
    expect(text).not.toMatch(CANARY_PATTERN)
  })
})
