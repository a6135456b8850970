/**
 * @module Several maximal prompts served at once by one workerd isolate capped at 128 MB: 16 clients
 * send maximal prompts (a quarter English, the rest Chinese) together; at least 3 are in flight at the same time (the
 * engine holds them all: their calls overlap), the isolate's heap and ArrayBuffers stay under 128 MB
 * throughout, and every other client receives a 503 with `Retry-After`, never a reset or EPIPE: with
 * no queue, each is refused on its headers while its client is still writing the body, which the
 * guard reads and drops before it answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cjk, english } from '../../bench/texts'
import { type CappedWorker, startCappedWorker } from '../support/heap-capped-worker'
import { peakDuring, post } from '../support/node-upload'

const MODEL = '@cf/zai-org/glm-5.3'
const MB = 1024 * 1024
const CLIENTS = 16
/** Just under glm-5.3's ceiling as the guard counts them (test/node/memory-admission.test.ts). */
const ENGLISH_CHARS = 3_000_000
const CHINESE_CHARS = 650_000
/**
 * The engine's prefill: a maximal prompt's call lasts about 25 s, far longer than the guard takes to
 * count and print the next few (1–2 s each alone, several times that on a loaded 2-core machine: at
 * 10 s a call, a clean-clone run once saw only 2 in the engine together), so prompts admitted together
 * are in the engine together. A slow engine is honest; only a fast one is suspect.
 */
const PREFILL_TOKENS_PER_SECOND = 26_000

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

describe('several maximal prompts at once in a 128 MB isolate', () => {
  let worker: CappedWorker
  beforeAll(async () => {
    worker = await startCappedWorker(
      128,
      {
        GUARD_SECRET: 'admission-concurrency-canary-secret-0123456789',
        TENANT_KEYS: JSON.stringify(keys),
        GUARD_MODELS: JSON.stringify({ [MODEL]: { maxPrefillTokensPerSecond: 1_000_000 } }),
        // No queue: what does not fit now is refused at once, while its client is still uploading.
        GUARD_ADMISSION_WAIT_MS: '0',
      },
      {
        mode: 'fixed',
        poolTokens: 40_000_000,
        prefillTokensPerSecond: PREFILL_TOKENS_PER_SECOND,
        decodeTokensPerSecond: 100_000,
        queueTimeoutMs: 120_000,
      },
    )
    // Tokenizer tables and family bound loaded by a short prompt; the text memo still nearly empty
    // (what it fills with comes out of the budget, docs/reliability.md).
    const warm = await post(worker.url, `concurrency-key-${CLIENTS}`, maximal(CLIENTS, 20_000))
    expect([warm.status, warm.error]).toEqual([200, undefined])
  }, 120_000)
  afterAll(() => worker?.dispose())

  it('should serve at least 3 of 16 concurrent maximal prompts at once under 128 MB, refusing the rest with Retry-After', async () => {
    const bodies = Array.from({ length: CLIENTS }, (_, i) => maximal(i))
    worker.upstream.most = 0
    const [tries, peak] = await peakDuring(
      worker,
      Promise.all(
        // 50 ms apart, so they arrive in order (all still uploading together): the first three,
        // Chinese, fit the default budget together; none after them does.
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
        servedAtOnce: worker.upstream.most,
        served: served.length,
        refused: refused.length,
        peakSampledMB: +(peak / MB).toFixed(1),
      }),
    )
    // No crash, no reset, no EPIPE: every client got an HTTP answer and nothing else.
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
    // Served at once: the engine held at least 3 of the guard's calls together.
    expect(worker.upstream.most).toBeGreaterThanOrEqual(3)
    expect(peak).toBeLessThan(128 * MB)
  }, 180_000)
})
