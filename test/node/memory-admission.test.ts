/**
 * @module Memory admission under the platform's limit: 16 concurrent maximal prompts (English and
 * Chinese) in one workerd isolate whose V8 heap is capped at 128 MB. Without admission the isolate dies
 * ("Ineffective mark-compacts near heap limit") and every request in it is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cjk, english } from '../../bench/texts'
import { type CappedWorker, startCappedWorker } from '../support/heap-capped-worker'
import { sseText } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const MB = 1024 * 1024
const TENANTS = 16
/**
 * Just under the ceiling of glm-5.3 (677,184 prompt tokens less drift) as the guard counts them: 3.0M
 * characters of English prose are served and 3.3M refused; 650,000 Han characters are served.
 */
const ENGLISH_CHARS = 3_000_000
const CHINESE_CHARS = 650_000

const keys = Object.fromEntries(
  Array.from({ length: TENANTS + 1 }, (_, i) => [`memory-key-${i}`, `tenant-${i}`]),
)

function body(i: number, stream: boolean, chineseChars = CHINESE_CHARS): string {
  const text =
    i % 2 === 0
      ? `MARK-${i} ${english(i + 1, ENGLISH_CHARS)}`
      : `MARK-${i} ${cjk(i + 1, chineseChars)}`
  return JSON.stringify({
    model: MODEL,
    max_tokens: 512,
    stream,
    messages: [{ role: 'user', content: text }],
  })
}

interface Outcome {
  status: number | 'crash'
  retryAfter: string | null
  text: string
}

async function post(worker: CappedWorker, i: number, payload: string): Promise<Outcome> {
  try {
    const response = await fetch(`${worker.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer memory-key-${i}`, 'content-type': 'application/json' },
      body: payload,
    })
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      text: await response.text(),
    }
  } catch (error) {
    return { status: 'crash', retryAfter: null, text: String(error) }
  }
}

/** Sampled peaks of the guard isolate's heap + ArrayBuffers, and of its ArrayBuffers alone. */
interface Peaks {
  total: number
  buffers: number
}

/**
 * Samples the guard isolate while `work` runs. Samples are taken between the isolate's tasks (the
 * inspector waits while it runs a tokenizer), so they are lower bounds; the heap cap is the upper one.
 */
async function peakDuring<T>(worker: CappedWorker, work: Promise<T>): Promise<[T, Peaks]> {
  const peaks = { total: 0, buffers: 0 }
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      const now = await worker.memory()
      if (!now) break
      peaks.total = Math.max(peaks.total, now.heap + now.buffers)
      peaks.buffers = Math.max(peaks.buffers, now.buffers)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })()
  const result = await work
  sampling = false
  await sampler
  return [result, peaks]
}

/** The guard Worker under a heap cap of `heapMb`, over a simulator that never leaks. */
function start(heapMb: number): Promise<CappedWorker> {
  const budget = process.env.ADMISSION_TEST_BUDGET_BYTES
  return startCappedWorker(
    heapMb,
    {
      GUARD_SECRET: 'memory-admission-canary-secret-0123456789abcdef',
      TENANT_KEYS: JSON.stringify(keys),
      // The simulator's prefill (900k tok/s) stays under the physical bound the guard is told.
      GUARD_MODELS: JSON.stringify({ [MODEL]: { maxPrefillTokensPerSecond: 1_000_000 } }),
      ...(budget ? { GUARD_MEMORY_BUDGET_BYTES: budget } : {}),
    },
    // An engine that never leaks and holds every prompt at once: any failure here is the guard's.
    {
      mode: 'fixed',
      poolTokens: 12_000_000,
      prefillTokensPerSecond: 900_000,
      decodeTokensPerSecond: 100_000,
      queueTimeoutMs: 120_000,
    },
  )
}

describe('memory admission in a 128 MB isolate', () => {
  let worker: CappedWorker
  beforeAll(async () => {
    worker = await start(128)
  }, 60_000)
  afterAll(() => worker?.dispose())

  it('should answer or refuse with Retry-After 16 concurrent maximal prompts, under 128 MB', async () => {
    // A long-lived isolate: tokenizer tables, family bound and memo loaded by one maximal prompt.
    const warm = await post(worker, TENANTS, body(0, false))
    expect(warm.status).toBe(200)
    const baseline = await worker.memory(true)
    expect(baseline).toBeDefined()

    const payloads = Array.from({ length: TENANTS }, (_, i) => body(i, i % 4 < 2))
    const [outcomes, { total: peak }] = await peakDuring(
      worker,
      Promise.all(payloads.map((payload, i) => post(worker, i, payload))),
    )

    const served = outcomes.filter((o) => o.status === 200)
    const refused = outcomes.filter((o) => o.status === 503)
    console.log(
      JSON.stringify({
        baselineMB: ((baseline?.heap ?? 0) + (baseline?.buffers ?? 0)) / MB,
        peakMB: peak / MB,
        served: served.length,
        refused: refused.length,
        other: outcomes.filter((o) => o.status !== 200 && o.status !== 503).map((o) => o.status),
      }),
    )
    expect(outcomes.filter((o) => o.status === 'crash')).toEqual([])
    expect(served.length + refused.length).toBe(TENANTS)
    for (const o of refused) {
      expect(o.retryAfter).toMatch(/^\d+$/)
      expect(JSON.parse(o.text).error.code).toBe('guard_unavailable')
    }
    outcomes.forEach((o, i) => {
      if (o.status !== 200) return
      // Verified answers only: the engine quoted this request's own prompt, and no canary is left.
      const delivered = o.text.startsWith('data:')
        ? Object.values(sseText(o.text)).join('')
        : JSON.stringify(JSON.parse(o.text).choices)
      expect(delivered).toContain(`MARK-${i}`)
      expect(o.text).not.toMatch(/cnry_/)
    })
    expect(served.length).toBeGreaterThanOrEqual(1)
    expect(peak).toBeLessThan(128 * MB)

    // Every reservation came back: a maximal prompt alone is served again.
    const after = await post(worker, 1, body(1, true))
    expect(after.status).toBe(200)
  }, 150_000)

  it('should serve the largest set the default budget admits at once, under 128 MB', async () => {
    // Three Chinese prompts of 1.8 MB (the costliest script per byte): 20 MiB reserved each, 60 of
    // the 72 MiB large requests may hold together — the worst set admission lets in. Under a 64 MB
    // heap cap, so that surviving bounds its heap; its ArrayBuffers must fit in the other 64.
    const small = await start(64)
    try {
      const clients = [1, 3, 5]
      const payloads = clients.map((i) => body(i, i === 1, 600_000))
      const [outcomes, peaks] = await peakDuring(
        small,
        Promise.all(payloads.map((payload, j) => post(small, clients[j]!, payload))),
      )
      console.log(
        JSON.stringify({ admittedSetSampledMB: peaks.total / MB, buffersMB: peaks.buffers / MB }),
      )
      expect(outcomes.map((o) => o.status)).toEqual([200, 200, 200])
      expect(peaks.buffers).toBeLessThan(64 * MB)
    } finally {
      await small.dispose()
    }
  }, 120_000)
})
