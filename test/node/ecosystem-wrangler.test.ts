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
 * The simulator cannot be reconfigured from outside that process, so this replays the incident at full
 * size instead: the engine's real pool is its default 681,280 tokens, and the Worker is given the
 * misconfiguration that caused it — a profile that believes the pool is the whole 1,048,576-token window.
 */
const ADMIN = 'dev-only-admin-secret'
const WRONG_PROFILE = JSON.stringify({
  [MODEL]: { kvPoolTokens: 1_048_576, maxPrefillTokensPerSecond: 1_000_000 },
})

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
  } = await startWranglerDev(host, { vars: { GUARD_MODELS: WRONG_PROFILE } }))
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
