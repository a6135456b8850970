/**
 * @module `node --import tsx bench/memory-workerd.ts <prompts> <en|zh> [heapMb]`: the guard isolate's
 * sampled peak (V8 heap + ArrayBuffers) while `prompts` maximal prompts of one script are in flight
 * together, in a workerd capped at `heapMb` (128) with a budget that admits them all, over its
 * baseline after a full GC. The rise of the peak per prompt added, per body byte, is what admission
 * charges (src/worker/memory-ledger.ts; bench/results/memory-admission.json holds the runs).
 */
import { peakDuring } from '../test/support/node-upload'
import { maximalBody, startMemoryWorker } from './support/memory-worker'

const MB = 1024 * 1024
const prompts = Number(process.argv[2] ?? 1)
const script = process.argv[3] === 'zh' ? 'zh' : 'en'
const heapMb = Number(process.argv[4] ?? 128)
const body = (i: number, stream: boolean) => maximalBody(i, script, stream)

async function main(): Promise<void> {
  const worker = await startMemoryWorker(heapMb, 900_000)
  try {
    // Tables loaded by a prompt none of the measured ones repeats (the memo would skip its print).
    await worker.post(39, body(39, false))
    const base = await worker.memory(true)
    if (!base) throw new Error('no memory figure from the inspector')
    const baseline = base.heap + base.buffers
    const bodyBytes = new TextEncoder().encode(body(0, false)).byteLength
    for (const stream of [false, true]) {
      const [statuses, peak] = await peakDuring(
        worker,
        Promise.all(Array.from({ length: prompts }, (_, i) => worker.post(i, body(i, stream)))),
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
