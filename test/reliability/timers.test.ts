/**
 * @module workerd refuses a Worker's 10,001st pending timer (QuotaExceededError), failing the request
 * that asks for it. Requests answered without any I/O between them (an engine answering from memory,
 * a cache) never give a timer the chance to fire, so what each request leaves pending adds up.
 */
import { describe, expect, it } from 'vitest'
import { MemoryQuarantineStore } from '../../src'
import { chat } from '../support/prompts'
import { directThrough, MODEL, models, ownCanary, SECRET, scripted } from '../support/secrets'

/** Counts the timers set and not yet fired or cleared while `work` runs; its peak. */
async function peakPendingTimers(work: () => Promise<void>): Promise<number> {
  const pending = new Set<unknown>()
  let peak = 0
  const realSet = globalThis.setTimeout
  const realClear = globalThis.clearTimeout
  const set = (fn: () => void, ms?: number) => {
    const id: unknown = realSet(() => {
      pending.delete(id)
      fn()
    }, ms)
    pending.add(id)
    peak = Math.max(peak, pending.size)
    return id
  }
  globalThis.setTimeout = set as typeof setTimeout
  globalThis.clearTimeout = ((id: unknown) => {
    pending.delete(id)
    realClear(id as number)
  }) as typeof clearTimeout
  try {
    await work()
  } finally {
    globalThis.setTimeout = realSet
    globalThis.clearTimeout = realClear
  }
  return peak
}

describe('timers a request leaves pending', () => {
  it('should keep a handful pending however many requests are in flight and answered from memory', async () => {
    const upstream = scripted((inputs) =>
      inputs.stream
        ? { deltas: [{ content: `${ownCanary(inputs)}\nIt is ` }, { content: 'fine, thank you.' }] }
        : { message: { content: `${ownCanary(inputs)}\nIt is fine, thank you.` } },
    )
    upstream.eventCuts = true
    const send = directThrough(upstream, {
      secret: SECRET,
      models,
      quarantine: { store: new MemoryQuarantineStore() },
    })
    const answers: string[] = []
    const peak = await peakPendingTimers(async () => {
      // In rounds of 50 at once, as a busy isolate holds them.
      for (let round = 0; round < 3; round++) {
        const sent = Array.from({ length: 50 }, (_, i) =>
          send(`tenant-${i % 7}`, MODEL, chat(`question ${round}.${i}`, { stream: i % 2 === 0 })),
        )
        for (const got of await Promise.all(sent)) answers.push(got.code ?? 'ok')
      }
    })
    expect(answers.filter((a) => a !== 'ok')).toEqual([])
    // Each request in flight holds its deadline, and all share one after-send tick. Before, each
    // request's own tick never fired between rounds answered from memory: 200 pending after three
    // rounds here, 10,000 (workerd's limit) in a longer run.
    expect(peak).toBeLessThanOrEqual(50 + 1)
  })
})
