import { build } from 'esbuild'
import type { Hono } from 'hono'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { signInFirst } from '../../examples/consumer/src/auth'
import { SimEngine } from '../../sim/engine'
import { errorBody, GuardError } from '../../src'
import { type NodeHost, nodeHost } from '../ecosystem/node-host'
import { hasCanary } from '../support/leak-scenario'
import { document, sseText } from '../support/prompts'

/**
 * examples/hono-app as its users get it: bundled the way wrangler bundles it (the package name aliased
 * to this repository's source), driven with `app.request` against the leaking simulator as `env.AI`.
 */
const SECRET = 'example-canary-secret-0123456789abcdef'
const BUNDLE = 'node_modules/.cache/workers-ai-guard/hono-app.mjs'

let host: NodeHost
let createApp: (secret: string) => Hono

beforeAll(async () => {
  host = await nodeHost()
  await build({
    entryPoints: ['examples/hono-app/src/app.ts'],
    outfile: BUNDLE,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    packages: 'external',
    alias: { 'workers-ai-guard': './src/index.ts' },
    logLevel: 'warning',
  })
  ;({ createApp } = (await import(/* @vite-ignore */ host.join(host.cwd, BUNDLE))) as {
    createApp: typeof createApp
  })
}, 30_000)

/** A refused sign-in, as OpenAI clients parse it. */
const SIGN_IN_FIRST = {
  error: {
    message: 'Sign in first.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    param: null,
  },
}

/** The example's dev keys (wrangler.toml's USER_KEYS holds their SHA-256). */
const USER_KEYS = JSON.stringify({
  d0ee104f63c7f043dba14b9c402d8039ef2d3ec1155c537e833b4c7289518a14: 'alice',
  '9fc17a20b16f8d5f1a0e8f6dd183829114f1fabccd63f33dddcfa0347148433a': 'bob',
})

function ask(
  app: Hono,
  engine: SimEngine,
  user: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return app.request(
    '/chat',
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(user ? { authorization: `Bearer dev-key-${user}` } : {}),
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    },
    { AI: engine.binding('workers-account'), GUARD_SECRET: SECRET, USER_KEYS },
  )
}

describe('examples/hono-app', () => {
  it('should keep the app own sign-in: no verified key, no upstream call', async () => {
    const engine = new SimEngine({ decodeTokensPerSecond: Infinity })
    const app = createApp(SECRET)
    // A header naming a user is the client's claim, not a sign-in; a wrong key neither.
    const attempts: Record<string, string>[] = [
      {},
      { 'x-user': 'alice' },
      { authorization: 'Bearer dev-key-mallory' },
    ]
    for (const headers of attempts) {
      const res = await ask(app, engine, undefined, { question: 'hi' }, headers)
      expect(res.status).toBe(401)
      expect(await res.json()).toEqual(SIGN_IN_FIRST)
    }
    expect(engine.stats().requests.total).toBe(0)
  })

  // The starter `init` writes answers the same OpenAI shape as the guard's own errors.
  it("should refuse with the OpenAI error shape in the consumer starter's sign-in too", async () => {
    const res = signInFirst()
    expect(res.status).toBe(401)
    const body = (await res.json()) as { error: Record<string, unknown> }
    expect(body).toEqual(SIGN_IN_FIRST)
    const guardShape = errorBody(new GuardError('invalid_request', 'x'))
    expect(Object.keys(body.error).sort()).toEqual(Object.keys(guardShape.error).sort())
  })

  it('should answer each user from their own question, whole and streamed, canary stripped', async () => {
    const engine = new SimEngine({
      prefillTokensPerSecond: 100_000,
      decodeTokensPerSecond: Infinity,
    })
    const app = createApp(SECRET)
    const whole = await ask(app, engine, 'alice', { question: document('ALICE', 2_000) })
    expect(whole.status).toBe(200)
    const body = await whole.text()
    expect(body).toContain('ALICE ledger entry')
    expect(hasCanary(body)).toBe(false)
    const streamed = await ask(app, engine, 'alice', {
      question: document('ALICE', 2_000),
      stream: true,
    })
    expect(streamed.headers.get('content-type')).toContain('text/event-stream')
    // sseResponse: the guard's request id travels with the stream.
    expect(streamed.headers.get('x-guard-request-id')).toBeTruthy()
    const text = await streamed.text()
    expect(sseText(text).content).toContain('ALICE')
    expect(hasCanary(text)).toBe(false)
  }, 30_000)

  it('should answer a body that is not JSON with 400 invalid_request, not a 500', async () => {
    const engine = new SimEngine({ decodeTokensPerSecond: Infinity })
    const app = createApp(SECRET)
    // A client's malformed body is not the server's error: nothing is logged as one.
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    let errors: unknown[] = []
    try {
      const res = await ask(app, engine, 'alice', '{"question":')
      expect(res.status).toBe(400)
      const { error } = (await res.json()) as { error: { code: string; type: string } }
      expect(error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' })
    } finally {
      errors = logged.mock.calls.flat()
      logged.mockRestore()
    }
    expect(errors).toEqual([])
    expect(engine.stats().requests.total).toBe(0)
  })

  it('should withhold a leaked answer with a 422 and the incident id', async () => {
    // A pool far smaller than the built-in profile believes: over-pool prompts reach the engine.
    const engine = new SimEngine({
      mode: 'pd-abort-leak',
      poolTokens: 8_192,
      contextWindow: 16_384,
      prefillTokensPerSecond: 100_000,
      decodeTokensPerSecond: Infinity,
    })
    const app = createApp(SECRET)
    // The guard logs each withheld answer as one JSON line (console.warn): captured and asserted.
    const warned = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      expect((await ask(app, engine, 'alice', { question: document('ALICE', 6_000) })).status).toBe(
        200,
      )
      const res = await ask(app, engine, 'bob', { question: document('BOB', 12_000) })
      const text = await res.text()
      expect(res.status).toBe(422)
      expect(text).not.toContain('ALICE')
      const { error } = JSON.parse(text) as { error: { code: string; incident_id: string } }
      expect(error.code).toBe('response_quarantined')
      expect(res.headers.get('x-guard-incident-id')).toBe(error.incident_id)
      const verdict = warned.mock.calls
        .map((call) => String(call[0]))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      expect(verdict).toContainEqual(
        expect.objectContaining({
          action: 'quarantine',
          tenant: 'bob',
          incidentId: error.incident_id,
        }),
      )
    } finally {
      warned.mockRestore()
    }
  }, 30_000)

  it('should type-check, and bundle with wrangler for production and for local runs, unwarned', async () => {
    const bin = (name: string) => host.join(host.cwd, 'node_modules/.bin', name)
    await host.run(bin('tsc'), ['--noEmit', '-p', 'examples/hono-app'], { cwd: host.cwd })
    // wrangler.toml: the real [ai]; wrangler.dev.toml: AI bound to the simulator. Two files, so no
    // "ai exists at the top level, but not on env.dev" warning on either.
    for (const config of ['wrangler.toml', 'wrangler.dev.toml']) {
      const out = host.tempDir('hono-app-')
      try {
        const log = await host.run(
          bin('wrangler'),
          ['deploy', '--dry-run', '--outdir', out, '-c', `examples/hono-app/${config}`],
          { cwd: host.cwd, env: { ...host.env, WRANGLER_SEND_METRICS: 'false', CI: '1' } },
        )
        expect(log).not.toMatch(/WARNING|\[WARN/)
        expect(log).toContain(config === 'wrangler.toml' ? 'env.AI' : 'workers-ai-sim#SimulatedAi')
        const bundle = host.read(host.join(out, 'index.js'))
        expect(bundle).toContain('aiGuard')
        expect(bundle).toContain('cloudflare:workers')
      } finally {
        host.remove(out)
      }
    }
  }, 90_000)
})
