import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ChildLike, type NodeHost, nodeHost } from '../ecosystem/node-host'
import {
  apiError,
  ask,
  client,
  expectOwn,
  expectQuarantined,
  MODEL,
} from '../ecosystem/openai-client'
import { startWranglerDev } from '../ecosystem/wrangler-dev'
import { document } from '../support/prompts'

/**
 * The real thing, once: `npm start`'s command (`wrangler dev` with the guard and the simulator in one
 * process) on loopback, driven by the official openai client over a socket. The tree is snapshotted to a
 * temporary directory first, so edits elsewhere in the repository cannot reload the Worker mid-test.
 *
 * This replays the incident at full size: the engine's real pool is its default 681,280 tokens, and the
 * Worker runs as `npm run start:unsafe-pool` runs it, with the misconfiguration that caused the incident —
 * a profile that believes the pool is the whole 1,048,576-token window.
 */
const ADMIN = 'dev-only-admin-secret'

/**
 * The misconfiguration, read from `npm run start:unsafe-pool` itself, so the command the README
 * documents is the one shown to end in a withheld leak.
 */
async function unsafePoolProfile(host: NodeHost): Promise<string> {
  const { scripts } = JSON.parse(host.read(host.join(host.cwd, 'package.json'))) as {
    scripts: Record<string, string>
  }
  const script = scripts['start:unsafe-pool']!
  // The same Workers as `npm start`, plus one variable.
  expect(script.startsWith(`${scripts.start} --var 'GUARD_MODELS:`)).toBe(true)
  const profile = script.slice(script.indexOf('GUARD_MODELS:') + 'GUARD_MODELS:'.length, -1)
  expect(JSON.parse(profile)[MODEL].kvPoolTokens).toBe(1_048_576)
  return profile
}

let host: NodeHost
let dir = ''
let dev: ChildLike | undefined
let base = ''

beforeAll(async () => {
  host = await nodeHost()
  ;({
    base,
    child: dev,
    dir,
  } = await startWranglerDev(host, { vars: { GUARD_MODELS: await unsafePoolProfile(host) } }))
}, 90_000)

afterAll(async () => {
  if (dev) await host.stop(dev)
  if (dir) host.remove(dir)
}, 15_000)

describe('the openai client against wrangler dev', () => {
  it('should deliver each tenant its own answer, whole and streamed, over a real socket', async () => {
    const a = client(`${base}/v1`, 'tenant-a')
    expectOwn(await ask(a, document('TENANT-A', 6_000), false), 'TENANT-A', ['TENANT-B'])
    expectOwn(await ask(a, document('TENANT-A', 6_000), true), 'TENANT-A', ['TENANT-B'])
  }, 30_000)

  it('should refuse an output reserve beyond the pool as BadRequestError, and 401 a bad key', async () => {
    const a = client(`${base}/v1`, 'tenant-a')
    const error = await apiError(ask(a, 'Hello', false, { max_tokens: 2_000_000 }))
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error.code).toBe('context_length_exceeded')
    expect(error.message).toContain('2,000,000 alone exceeds')
    const stranger = new OpenAI({
      baseURL: `${base}/v1`,
      apiKey: 'not-a-tenant-key',
      maxRetries: 0,
    })
    const refused = await apiError(stranger.chat.completions.create({ model: MODEL, messages: [] }))
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(refused.code).toBe('invalid_api_key')
  }, 30_000)

  it('should withhold the full-size leak from tenant B and record it for review', async () => {
    const b = client(`${base}/v1`, 'tenant-b')
    // Fits the believed 1,048,576-token pool; does not fit the engine's real 681,280.
    const error = await apiError(ask(b, document('TENANT-B', 600_000), false))
    const incident = expectQuarantined(error, ['TENANT-A'])
    const res = await fetch(`${base}/admin/incidents/${incident}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    })
    const record = (await res.json()) as { tenant: string; reasons: string[]; withheld: unknown }
    expect(record.tenant).toBe('tenant-b')
    expect(record.reasons.length).toBeGreaterThan(0)
    // What the engine really answered B: built from A's stale pages. It stayed in the store.
    expect(JSON.stringify(record.withheld)).toContain('TENANT-A')
  }, 30_000)
})
