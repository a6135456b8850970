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

/** The Node APIs used here (the project has no @types/node: its runtime code is Web-only). */
interface NodeResponse {
  statusCode?: number
  headers: Record<string, string | string[] | undefined>
  setEncoding(encoding: 'utf8'): void
  on(event: 'data', listener: (data: string) => void): void
  on(event: 'end' | 'error' | 'aborted', listener: (error?: Error) => void): void
}
interface NodeRequest {
  write(data: Uint8Array): boolean
  end(): void
  once(event: 'drain', listener: () => void): void
  on(event: 'error', listener: (error: Error & { code?: string }) => void): void
  on(event: 'response', listener: (response: NodeResponse) => void): void
}
const { request: httpRequest } = (await import('node:http' as string)) as {
  request(options: {
    method: string
    hostname: string
    port: number
    path: string
    headers: Record<string, string>
    agent: false
  }): NodeRequest
}

const MODEL = '@cf/zai-org/glm-5.3'
const MB = 1024 * 1024
const CLIENTS = 16
/** Just under glm-5.3's ceiling as the guard counts them (test/node/memory-admission.test.ts). */
const ENGLISH_CHARS = 3_000_000
const CHINESE_CHARS = 650_000
/**
 * The engine's prefill: a maximal prompt's call lasts about 10 s, longer than the guard takes to
 * count and print the next few (1–2 s each here), so prompts admitted together are in the engine
 * together. A slow engine is honest; only a fast one is suspect.
 */
const PREFILL_TOKENS_PER_SECOND = 65_000

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

interface Try {
  status: number
  retryAfter: string | undefined
  text: string
  /** The client's error (EPIPE, ECONNRESET…), even after an answer. */
  error: string | undefined
}

/** One POST over its own connection, written 64 KiB at a time as the socket drains. */
function post(url: string, key: string, body: Uint8Array): Promise<Try> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    let sent = 0
    const result: Try = {
      status: 0,
      retryAfter: undefined,
      text: '',
      error: undefined,
    }
    let settled = false
    const settle = () => {
      if (settled) return
      settled = true
      resolve(result)
    }
    const req = httpRequest({
      method: 'POST',
      hostname,
      port: Number(port),
      path: '/v1/chat/completions',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': String(body.byteLength),
      },
      agent: false,
    })
    req.on('error', (error) => {
      result.error = error.code ?? error.message
      setTimeout(settle, 50)
    })
    req.on('response', (res) => {
      result.status = res.statusCode ?? 0
      const retry = res.headers['retry-after']
      result.retryAfter = typeof retry === 'string' ? retry : undefined
      res.setEncoding('utf8')
      res.on('data', (d) => {
        result.text += d
      })
      res.on('error', (error) => {
        result.error ??= error?.message ?? 'response error'
      })
      res.on('aborted', () => {
        result.error ??= 'aborted'
      })
      // A moment after the end, so a write error the answer raced is seen too.
      res.on('end', () => setTimeout(settle, 20))
    })
    const write = () => {
      while (sent < body.byteLength) {
        const chunk = body.subarray(sent, sent + 64 * 1024)
        sent += chunk.byteLength
        if (!req.write(chunk)) return void req.once('drain', write)
      }
      req.end()
    }
    write()
  })
}

/** Sampled peak of the guard isolate's heap + ArrayBuffers while `work` runs (a lower bound). */
async function peakDuring<T>(worker: CappedWorker, work: Promise<T>): Promise<[T, number]> {
  let peak = 0
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      const now = await worker.memory()
      if (!now) break
      peak = Math.max(peak, now.heap + now.buffers)
      await new Promise((r) => setTimeout(r, 10))
    }
  })()
  const result = await work
  sampling = false
  await sampler
  return [result, peak]
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
        expect(t.retryAfter).toMatch(/^[1-9]\d*$/)
        expect(JSON.parse(t.text).error.code).toBe('guard_unavailable')
      }
    })
    // Served at once: the engine held at least 3 of the guard's calls together.
    expect(worker.upstream.most).toBeGreaterThanOrEqual(3)
    expect(peak).toBeLessThan(128 * MB)
  }, 180_000)
})
