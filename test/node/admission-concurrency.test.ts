/**
 * @module Several maximal prompts served at once by one workerd isolate capped at 128 MB: 16 clients
 * send maximal prompts (a quarter English, the rest Chinese) together. Once the engine has a prompt and
 * the guard's work on it is done, its request holds a fraction of what it took to read and count it, and
 * admission lowers its reservation to that (src/worker/memory-ledger.ts `settle`): at least 4 are then in
 * the engine at the same time, the isolate's heap and ArrayBuffers stay under 128 MB throughout, and
 * every client receives its own verified answer or a 503 with `Retry-After`, never a reset or EPIPE —
 * with a queue, and without one (each refused on its headers while its client is still writing the
 * body, which the guard reads and drops before it answers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cjk, english } from '../../bench/texts'
import {
  type CappedWorker,
  type EngineGate,
  startCappedWorker,
} from '../support/heap-capped-worker'
import { peakDuring, post } from '../support/node-upload'

const MODEL = '@cf/zai-org/glm-5.3'
const MB = 1024 * 1024
const CLIENTS = 16
/** Just under glm-5.3's ceiling as the guard counts them (test/node/memory-admission.test.ts). */
const ENGLISH_CHARS = 3_000_000
const CHINESE_CHARS = 650_000
/** In the engine at once, at least: the bar for one 128 MB isolate. */
const AT_ONCE = 4
/**
 * The engine keeps every call until {@link AT_ONCE} are in it together (or a minute passes), so the
 * count does not hang on how long a call lasts against the guard's work on the next prompt (a loaded
 * machine once left only 2 in the engine together when calls lasted 10 s).
 */
const GATE = { calls: AT_ONCE, ms: 60_000 }

const keys = Object.fromEntries(
  Array.from({ length: CLIENTS + 1 }, (_, i) => [`concurrency-key-${i}`, `tenant-${i}`]),
)

/** Client `i`'s maximal prompt: English for every fourth `i` (3, 7…), Chinese for the rest, never streamed. */
function maximal(i: number, chars?: number): Uint8Array {
  const text =
    i % 4 === 3 ? english(i + 1, chars ?? ENGLISH_CHARS) : cjk(i + 1, chars ?? CHINESE_CHARS)
  return new TextEncoder().encode(
    JSON.stringify({
      model: MODEL,
      max_tokens: 512,
      messages: [{ role: 'user', content: `MARK-${i} ${text}` }],
    }),
  )
}

/** The guard over a fast honest engine, gated as `gate` says; `waitMs` unset: the default queue. */
function start(waitMs: string | undefined, gate?: EngineGate): Promise<CappedWorker> {
  return startCappedWorker(
    128,
    {
      GUARD_SECRET: 'admission-concurrency-canary-secret-0123456789',
      TENANT_KEYS: JSON.stringify(keys),
      GUARD_MODELS: JSON.stringify({ [MODEL]: { maxPrefillTokensPerSecond: 1_000_000 } }),
      ...(waitMs === undefined ? {} : { GUARD_ADMISSION_WAIT_MS: waitMs }),
    },
    {
      mode: 'fixed',
      poolTokens: 40_000_000,
      prefillTokensPerSecond: 500_000,
      decodeTokensPerSecond: 100_000,
      queueTimeoutMs: 120_000,
    },
    gate,
  )
}

/**
 * The 16 clients, 50 ms apart (so they arrive in order, all still uploading together), through
 * `worker` warmed by a short prompt (tables loaded; the text memo still nearly empty: what it fills
 * with comes out of the budget, docs/reliability.md). Each client's outcome is checked: its own
 * verified answer, or a 503 with `Retry-After`, and never a reset or EPIPE.
 */
async function burst(worker: CappedWorker) {
  const warm = await post(worker.url, `concurrency-key-${CLIENTS}`, maximal(CLIENTS, 20_000))
  expect([warm.status, warm.error]).toEqual([200, undefined])
  worker.upstream.most = 0
  const bodies = Array.from({ length: CLIENTS }, (_, i) => maximal(i))
  const [tries, peak] = await peakDuring(
    worker,
    Promise.all(
      bodies.map(async (body, i) => {
        await new Promise((r) => setTimeout(r, 50 * i))
        return post(worker.url, `concurrency-key-${i}`, body)
      }),
    ),
    10,
  )
  const served = tries.filter((t) => t.status === 200)
  const refused = tries.filter((t) => t.status === 503)
  console.log(
    JSON.stringify({
      atOnce: worker.upstream.most,
      served: served.length,
      refused: refused.length,
      peakSampledMB: +(peak / MB).toFixed(1),
    }),
  )
  expect(tries.filter((t) => t.error !== undefined).map((t) => [t.status, t.error])).toEqual([])
  expect(served.length + refused.length).toBe(CLIENTS)
  tries.forEach((t, i) => {
    if (t.status === 200) {
      expect(JSON.stringify(JSON.parse(t.text).choices)).toContain(`MARK-${i}`)
      expect(t.text).not.toMatch(/cnry_/)
    } else {
      expect(Number.isInteger(t.retryAfter) && t.retryAfter! >= 1).toBe(true)
      expect(JSON.parse(t.text).error.code).toBe('guard_unavailable')
    }
  })
  expect(peak).toBeLessThan(128 * MB)
  return { served: served.length, refused: refused.length }
}

describe('several maximal prompts at once in a 128 MB isolate', () => {
  let worker: CappedWorker
  beforeAll(async () => {
    worker = await start(undefined, GATE)
  }, 120_000)
  afterAll(() => worker?.dispose())

  it(`should have at least ${AT_ONCE} of 16 concurrent maximal prompts in the engine at once under 128 MB`, async () => {
    const { served } = await burst(worker)
    // The engine held the guard's calls until 4 were in it together: it let 4 in at once.
    expect(worker.upstream.most).toBeGreaterThanOrEqual(AT_ONCE)
    expect(served).toBeGreaterThanOrEqual(AT_ONCE)
  }, 240_000)
})

describe('maximal prompts that find no room and no queue', () => {
  let worker: CappedWorker
  beforeAll(async () => {
    // No queue: what does not fit now is refused at once, while its client is still uploading.
    worker = await start('0')
  }, 120_000)
  afterAll(() => worker?.dispose())

  it('should answer every refused client 503 with Retry-After while it is still uploading', async () => {
    const { served, refused } = await burst(worker)
    expect(served).toBeGreaterThanOrEqual(1)
    expect(refused).toBeGreaterThanOrEqual(1)
  }, 240_000)
})
