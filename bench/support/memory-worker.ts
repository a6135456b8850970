/**
 * @module The guard in a heap-capped workerd as the memory benches run it: 40 tenants, a budget that
 * admits every prompt (what is measured is the isolate, not admission's refusals), a simulator that
 * holds every prompt at once, and the maximal prompts of test/node/memory-admission.test.ts.
 */
import { type CappedWorker, startCappedWorker } from '../../test/support/heap-capped-worker'
import { cjk, english } from '../texts'

const MODEL = '@cf/zai-org/glm-5.3'
const MB = 1024 * 1024
/** Tenants the Worker knows: client `i` posts as `memory-key-<i>`. */
const TENANTS = 40

/** A memory bench's Worker: the capped Worker, and a client that posts as tenant `i`. */
export interface MemoryWorker extends CappedWorker {
  /** Posts `payload` as client `i`, reads the whole answer, and resolves its status. */
  post(i: number, payload: string): Promise<number>
}

/**
 * Client `i`'s maximal prompt in `script`: just under glm-5.3's ceiling as the guard counts it.
 *
 * @example
 * maximalBody(0, 'zh', true) // 650,000 Han characters, streamed
 */
export function maximalBody(i: number, script: 'en' | 'zh', stream?: boolean): string {
  const text = script === 'en' ? english(i + 1, 3_000_000) : cjk(i + 1, 650_000)
  return JSON.stringify({
    model: MODEL,
    max_tokens: 512,
    ...(stream === undefined ? {} : { stream }),
    messages: [{ role: 'user', content: `MARK-${i} ${text}` }],
  })
}

/**
 * Starts the guard capped at `heapMb`, over an engine that prefills at `prefillTokensPerSecond` (under
 * the 1,000,000 tok/s bound the guard is told, so no answer is judged impossibly fast).
 *
 * @example
 * const worker = await startMemoryWorker(128, 900_000)
 * await worker.post(0, maximalBody(0, 'en'))
 */
export async function startMemoryWorker(
  heapMb: number,
  prefillTokensPerSecond: number,
): Promise<MemoryWorker> {
  const keys = Object.fromEntries(
    Array.from({ length: TENANTS }, (_, i) => [`memory-key-${i}`, `tenant-${i}`]),
  )
  const worker = await startCappedWorker(
    heapMb,
    {
      GUARD_SECRET: 'memory-admission-canary-secret-0123456789abcdef',
      TENANT_KEYS: JSON.stringify(keys),
      GUARD_MODELS: JSON.stringify({ [MODEL]: { maxPrefillTokensPerSecond: 1_000_000 } }),
      GUARD_MEMORY_BUDGET_BYTES: String(2000 * MB),
    },
    {
      mode: 'fixed',
      poolTokens: 40_000_000,
      prefillTokensPerSecond,
      decodeTokensPerSecond: 100_000,
      queueTimeoutMs: 120_000,
    },
  )
  const post = async (i: number, payload: string) => {
    const response = await fetch(`${worker.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer memory-key-${i}`, 'content-type': 'application/json' },
      body: payload,
    })
    await response.text()
    return response.status
  }
  return Object.assign(worker, { post })
}
