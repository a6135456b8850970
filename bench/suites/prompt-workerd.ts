/**
 * @module Benchmark: CPU per maximal prompt by script in workerd, as the platform bills it — the body
 * Worker (the guard Worker's own app over a stub upstream that fails after the guard's work) bundled
 * for workerd with the V8 heap capped at 128 MB, the process's CPU time (all threads) read from /proc
 * per request. Each script's prompts are distinct texts of the same kind, so the tokenizer's memos
 * see them as a new prompt does; English, Russian, Chinese and Thai alternate in one run.
 */

import { machineInfo, median, type Suite, type SuiteOptions, writeResult } from '../lib'
import { maximal, SCRIPTS } from '../support/maximal-prompts'
import { BENCH_SECRET, MODEL } from '../support/prompts'
import { startWorker } from '../support/workerd'
import { cpuMs, workerdChildren } from '../support/workerd-cpu'

const KEY = 'bench-prompt-key-0123456789'
const HEAP_MB = 128
/**
 * Each prompt is cut to this share of the longest the Node-side ceiling admits, so the Worker (whose
 * drift margins may differ by a little) admits every one and the whole per-prompt path runs.
 */
const SHARE = 0.98

/** The workerd process Miniflare started (a child of this Node process). */
async function workerdPid(): Promise<number> {
  const found = await workerdChildren()
  if (found.length !== 1) throw new Error(`expected one workerd child, found ${found.length}`)
  return found[0] as number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function run({ quick }: SuiteOptions): Promise<void> {
  const prompts = quick ? 2 : 4
  const texts: Record<string, string[]> = {}
  for (const [script, make] of Object.entries(SCRIPTS)) {
    texts[script] = []
    for (let v = 0; v < prompts; v++) {
      const text = await maximal((chars) => make(chars, v))
      texts[script]?.push(text.slice(0, Math.floor(text.length * SHARE)))
    }
  }
  const previous = process.env.MINIFLARE_WORKERD_V8_FLAGS
  process.env.MINIFLARE_WORKERD_V8_FLAGS = `--max-heap-size=${HEAP_MB}`
  const worker = await startWorker('bench/support/body-worker.ts', {
    GUARD_SECRET: BENCH_SECRET,
    TENANT_KEYS: JSON.stringify({ [KEY]: 'bench' }),
  }).finally(() => {
    if (previous === undefined) delete process.env.MINIFLARE_WORKERD_V8_FLAGS
    else process.env.MINIFLARE_WORKERD_V8_FLAGS = previous
  })
  const samples: Record<string, { chars: number; status: number; cpuMs: number }[]> = {}
  try {
    const pid = await workerdPid()
    const post = async (text: string) => {
      const res = await fetch(`${worker.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: text }] }),
      })
      await res.arrayBuffer()
      return res.status
    }
    // Loads o200k and runs the whole path once, on a text none of the timed ones repeats.
    await post((SCRIPTS.english ?? String)(200_000, 99))
    for (let v = 0; v < prompts; v++) {
      const order = Object.keys(texts)
      if (v % 2) order.reverse()
      for (const script of order) {
        const text = texts[script]?.[v] ?? ''
        const before = await cpuMs(pid)
        const status = await post(text)
        // Work the isolate finishes after the response (GC of what the request left) is its cost too.
        await sleep(200)
        const took = (await cpuMs(pid)) - before
        samples[script] ??= []
        samples[script]?.push({ chars: text.length, status, cpuMs: Math.round(took) })
        console.log(
          `  ${script.padEnd(14)} ${text.length} chars → ${status}, ${took.toFixed(0)} ms CPU`,
        )
      }
    }
  } finally {
    await worker.dispose()
  }
  const medians = Object.fromEntries(
    Object.entries(samples).map(([script, s]) => [script, median(s.map((x) => x.cpuMs))]),
  )
  const english = medians.english ?? Number.NaN
  const ratios = Object.fromEntries(
    Object.entries(medians).map(([script, m]) => [script, Math.round((m / english) * 100) / 100]),
  )
  for (const script of Object.keys(medians)) {
    console.log(
      `  ${script.padEnd(14)} median ${medians[script]?.toFixed(0)} ms CPU, ${ratios[script]?.toFixed(2)}× English`,
    )
  }
  const path = await writeResult(quick ? 'prompt-workerd-quick' : 'prompt-workerd', {
    suite: 'prompt-workerd',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: { heapMb: HEAP_MB, promptsPerScript: prompts, share: SHARE },
    note:
      'CPU ms of the workerd process (all threads, /proc schedstat) per maximal prompt: the request ' +
      'and the 200 ms after it, the guard Worker app over a stub upstream that fails after the ' +
      "guard's work (502). Prompts are 98% of the longest the ceiling admits; the scripts alternate. " +
      "'chinese'/'thai'/'russian' repeat one UDHR translation (the tokenizer's memos answer most of " +
      "it); 'chinese prose' and 'thai prose' seldom repeat a pre-token, as real prose does.",
    medians,
    ratios,
    samples,
  })
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'prompt-workerd', run }
export default suite
