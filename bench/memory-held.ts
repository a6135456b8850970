/**
 * @module `node --import tsx bench/memory-held.ts [streams]`: what a streamed answer held until its
 * verdict costs the guard isolate, per byte held, in a workerd capped at 128 MB — the figure behind
 * admission's charge for it (src/worker/memory-ledger.ts, ANSWER_BYTES_PER_HELD_BYTE). Each stream is a
 * reasoning model thinking far past `stream.maxHeldBytes` (8 MiB of events) before it answers, so the
 * guard holds it to that bound and withholds it; the isolate's heap + ArrayBuffers after a full GC are
 * sampled meanwhile, and the highest rise over idle is divided by what the streams held at most.
 */
import { startCappedWorker } from '../test/support/heap-capped-worker'

const MB = 1024 * 1024
const MODEL = '@cf/zai-org/glm-5.3'
const streams = Number(process.argv[2] ?? 2)
/** The guard's default bound on a held answer (`stream.maxHeldBytes`). */
const MAX_HELD = 8 * MB

async function main(): Promise<void> {
  const keys = Object.fromEntries(
    Array.from({ length: 8 }, (_, i) => [`held-key-${i}`, `tenant-${i}`]),
  )
  const worker = await startCappedWorker(
    128,
    {
      GUARD_SECRET: 'memory-held-canary-secret-0123456789abcdef',
      TENANT_KEYS: JSON.stringify(keys),
      GUARD_MEMORY_BUDGET_BYTES: String(2000 * MB),
    },
    {
      mode: 'fixed',
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      // About 20 s to reach the bound: the samples see the head at its largest.
      decodeTokensPerSecond: 3000,
      tokensPerEvent: 1,
      extraReasoningTokens: 1_000_000,
    },
  )
  const post = async (i: number, stream: boolean) => {
    const response = await fetch(`${worker.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer held-key-${i}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        stream,
        max_tokens: 100_000,
        messages: [{ role: 'user', content: `Think it all through, ${i}.` }],
      }),
    })
    const text = await response.text()
    return { status: response.status, tail: text.slice(-200) }
  }
  try {
    // Tables loaded by a short request.
    const warm = await fetch(`${worker.url}/health`)
    await warm.text()
    const base = await worker.memory(true)
    if (!base) throw new Error('no memory figure from the inspector')
    const idle = base.heap + base.buffers
    let done = false
    const outcomes = Promise.all(Array.from({ length: streams }, (_, i) => post(i, true))).finally(
      () => {
        done = true
      },
    )
    let highest = idle
    while (!done) {
      await new Promise((r) => setTimeout(r, 500))
      const now = await worker.memory(true)
      if (now) highest = Math.max(highest, now.heap + now.buffers)
    }
    const results = await outcomes
    console.log(
      JSON.stringify({
        streams,
        statuses: results.map((r) => r.status),
        ends: results.map((r) => r.tail.replace(/\s+/g, ' ').slice(-120)),
        idleMiB: +(idle / MB).toFixed(2),
        highestMiB: +(highest / MB).toFixed(2),
        perHeldByte: +((highest - idle) / (streams * MAX_HELD)).toFixed(2),
      }),
    )
  } finally {
    await worker.dispose()
  }
}

await main()
