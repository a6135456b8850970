/**
 * @module `node --import tsx bench/memory-live.ts <prompts> <en|zh>`: what `prompts` maximal prompts of
 * one script keep alive while the engine prefills them, in a workerd capped at 128 MB: the guard
 * isolate's V8 heap + ArrayBuffers after a full GC, over its idle figure, per prompt. Unlike
 * bench/memory-workerd.ts (a sampled peak, garbage included: what admission charges), this shows what
 * a request holds through its call — the copies of its prompt that outlive the send. The text memo's
 * facts of the prompt are part of it (they stay after the request: the `after` figure).
 */
import { startCappedWorker } from '../test/support/heap-capped-worker'
import { cjk, english } from './texts'

const MODEL = '@cf/zai-org/glm-5.3'
const MB = 1024 * 1024
const prompts = Number(process.argv[2] ?? 1)
const script = process.argv[3] === 'zh' ? 'zh' : 'en'
const keys = Object.fromEntries(
  Array.from({ length: 40 }, (_, i) => [`memory-key-${i}`, `tenant-${i}`]),
)
/**
 * When the figures are taken after the prompts are posted: their guard work (read, count, send, print)
 * is done, their calls (about a minute each) are not.
 */
const SETTLE_MS = 8000

/** Client `i`'s maximal prompt (the sizes of test/node/memory-admission.test.ts). */
function body(i: number): string {
  const text = script === 'en' ? english(i + 1, 3_000_000) : cjk(i + 1, 650_000)
  return JSON.stringify({
    model: MODEL,
    max_tokens: 512,
    messages: [{ role: 'user', content: `MARK-${i} ${text}` }],
  })
}

const mib = (bytes: number) => +(bytes / MB).toFixed(2)

async function main(): Promise<void> {
  const worker = await startCappedWorker(
    128,
    {
      GUARD_SECRET: 'memory-admission-canary-secret-0123456789abcdef',
      TENANT_KEYS: JSON.stringify(keys),
      GUARD_MODELS: JSON.stringify({ [MODEL]: { maxPrefillTokensPerSecond: 1_000_000 } }),
      GUARD_MEMORY_BUDGET_BYTES: String(2000 * MB),
    },
    // A slow prefill (about a minute for a maximal prompt): the calls are still in the engine when
    // the figures are taken.
    {
      mode: 'fixed',
      poolTokens: 40_000_000,
      prefillTokensPerSecond: 15_000,
      decodeTokensPerSecond: 100_000,
      queueTimeoutMs: 120_000,
    },
  )
  const post = async (i: number) => {
    const response = await fetch(`${worker.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer memory-key-${i}`, 'content-type': 'application/json' },
      body: body(i),
    })
    await response.text()
    return response.status
  }
  try {
    // Tables loaded by a prompt none of the measured ones repeats.
    await post(39)
    const base = await worker.memory(true)
    if (!base) throw new Error('no memory figure from the inspector')
    const idle = base.heap + base.buffers
    const done = Promise.all(Array.from({ length: prompts }, (_, i) => post(i)))
    await new Promise((r) => setTimeout(r, SETTLE_MS))
    const live: number[] = []
    for (let k = 0; k < 3; k++) {
      const now = await worker.memory(true)
      if (now) live.push(now.heap + now.buffers)
    }
    const statuses = await done
    const after = await worker.memory(true)
    console.log(
      JSON.stringify({
        script,
        prompts,
        statuses,
        idleMiB: mib(idle),
        liveMiB: live.map(mib),
        perPromptMiB: mib((Math.min(...live) - idle) / prompts),
        afterMiB: after ? mib(after.heap + after.buffers) : undefined,
      }),
    )
  } finally {
    await worker.dispose()
  }
}

await main()
