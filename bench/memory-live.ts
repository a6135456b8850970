/**
 * @module `node --import tsx bench/memory-live.ts <prompts> <en|zh>`: what `prompts` maximal prompts of
 * one script keep alive while the engine prefills them, in a workerd capped at 128 MB: the guard
 * isolate's V8 heap + ArrayBuffers after a full GC, over its idle figure, per prompt. Unlike
 * bench/memory-workerd.ts (a sampled peak, garbage included: what admission charges), this shows what
 * a request holds through its call — the copies of its prompt that outlive the send. The text memo's
 * facts of the prompt are part of it (they stay after the request: the `after` figure).
 */
import { maximalBody, startMemoryWorker } from './support/memory-worker'

const MB = 1024 * 1024
const prompts = Number(process.argv[2] ?? 1)
const script = process.argv[3] === 'zh' ? 'zh' : 'en'
/**
 * When the figures are taken after the prompts are posted: their guard work (read, count, send, print)
 * is done, their calls (about a minute each) are not.
 */
const SETTLE_MS = 8000

const mib = (bytes: number) => +(bytes / MB).toFixed(2)

async function main(): Promise<void> {
  // A slow prefill (about a minute for a maximal prompt): the calls are still in the engine when the
  // figures are taken.
  const worker = await startMemoryWorker(128, 15_000)
  const post = (i: number) => worker.post(i, maximalBody(i, script))
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
