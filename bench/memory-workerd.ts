/**
 * @module `node --import tsx bench/memory-workerd.ts <prompts> <en|zh> [heapMb]`: the guard isolate's
 * sampled peak (V8 heap + ArrayBuffers) while `prompts` maximal prompts of one script are in flight
 * together, in a workerd capped at `heapMb` (128) with a budget that admits them all, over its
 * baseline after a full GC. The rise of the peak per prompt added, per body byte, is what admission
 * charges (src/worker/memory-ledger.ts; bench/results/memory-admission.json holds the runs).
 */
import { startCappedWorker } from '../test/support/heap-capped-worker'
import { peakDuring } from '../test/support/node-upload'
import { cjk, english } from './texts'

const MODEL = '@cf/zai-org/glm-5.3'
const MB = 1024 * 1024
const prompts = Number(process.argv[2] ?? 1)
const script = process.argv[3] === 'zh' ? 'zh' : 'en'
const heapMb = Number(process.argv[4] ?? 128)
const keys = Object.fromEntries(
  Array.from({ length: 40 }, (_, i) => [`memory-key-${i}`, `tenant-${i}`]),
)

/** Client `i`'s maximal prompt (the sizes of test/node/memory-admission.test.ts). */
function body(i: number, stream: boolean): string {
  const text = script === 'en' ? english(i + 1, 3_000_000) : cjk(i + 1, 650_000)
  return JSON.stringify({
    model: MODEL,
    max_tokens: 512,
    stream,
    messages: [{ role: 'user', content: `MARK-${i} ${text}` }],
  })
}

async function main(): Promise<void> {
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
      prefillTokensPerSecond: 900_000,
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
  try {
    // Tables loaded by a prompt none of the measured ones repeats (the memo would skip its print).
    await post(39, body(39, false))
    const base = await worker.memory(true)
    if (!base) throw new Error('no memory figure from the inspector')
    const baseline = base.heap + base.buffers
    const bodyBytes = new TextEncoder().encode(body(0, false)).byteLength
    for (const stream of [false, true]) {
      const [statuses, peak] = await peakDuring(
        worker,
        Promise.all(Array.from({ length: prompts }, (_, i) => post(i, body(i, stream)))),
        5,
      )
      console.log(
        JSON.stringify({
          script,
          prompts,
          stream,
          statuses,
          bodyMiB: +(bodyBytes / MB).toFixed(3),
          baselineMiB: +(baseline / MB).toFixed(1),
          peakMiB: +(peak / MB).toFixed(1),
        }),
      )
    }
  } finally {
    await worker.dispose()
  }
}

await main()
