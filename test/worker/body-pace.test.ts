/**
 * The body reader's pace: one timer for the whole body, re-armed while the body keeps up and a 408 as
 * soon as it falls behind — the same answers as a timer per chunk gave (fake clock, no waiting).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { GuardError } from '../../src/core'
import { readJsonObject } from '../../src/worker/body'

const UTF8 = new TextEncoder()
const PACE = { graceMs: 1_000, minBytesPerSecond: 100 }

/** A POST whose body arrives as `parts`, each `[ms after the previous one, text]`. */
function dripped(parts: [number, string][]): Request {
  let next = 0
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const part = parts[next++]
      if (!part) return controller.close()
      await new Promise((resolve) => setTimeout(resolve, part[0]))
      controller.enqueue(UTF8.encode(part[1]))
    },
  })
  return new Request('https://guard.test/v1/chat/completions', {
    method: 'POST',
    body,
    // @ts-expect-error: a streamed request body needs `duplex` outside workerd's own types
    duplex: 'half',
  })
}

async function statusOf(read: Promise<unknown>): Promise<number> {
  try {
    await read
    return 200
  } catch (error) {
    if (error instanceof GuardError) return error.status
    throw error
  }
}

describe('body pace', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('should read a body that keeps its pace past the grace, however its chunks fall', async () => {
    // Due: 1,000 ms, then 10 ms more per byte read: 40 bytes at 900 ms (due 1,400), 20 more at
    // 1,300 (due 1,600), the last 8 at 1,550. The timer armed for 1,000 ms fires twice while the
    // body keeps up, and is re-armed each time.
    const text = `{"a":"${'x'.repeat(60)}"}`
    const read = readJsonObject(
      dripped([
        [900, text.slice(0, 40)],
        [400, text.slice(40, 60)],
        [250, text.slice(60)],
      ]),
      { limit: 10_000, pace: PACE },
    )
    const status = statusOf(read)
    await vi.advanceTimersByTimeAsync(2_000)
    expect(await status).toBe(200)
    expect(await read).toEqual({ a: 'x'.repeat(60) })
  })

  it('should answer 408 when the body falls behind after a chunk that kept pace', async () => {
    // 40 bytes at 900 ms make the rest due by 1,400 ms; nothing more comes before 3,000 ms.
    const read = readJsonObject(
      dripped([
        [900, '{"a":"'.padEnd(40, 'x')],
        [2_100, 'x"}'],
      ]),
      { limit: 10_000, pace: PACE },
    )
    const status = statusOf(read)
    await vi.advanceTimersByTimeAsync(1_399)
    let settled = false
    void status.then(() => {
      settled = true
    })
    await vi.advanceTimersByTimeAsync(0)
    expect(settled).toBe(false)
    await vi.advanceTimersByTimeAsync(2)
    expect(await status).toBe(408)
  })

  it('should answer 408 to a body that sends nothing within the grace', async () => {
    const status = statusOf(readJsonObject(dripped([[5_000, '{}']]), { limit: 100, pace: PACE }))
    await vi.advanceTimersByTimeAsync(1_001)
    expect(await status).toBe(408)
  })

  it('should leave no timer behind once the body is read', async () => {
    const read = readJsonObject(dripped([[10, '{}']]), { limit: 100, pace: PACE })
    await vi.advanceTimersByTimeAsync(10)
    expect(await read).toEqual({})
    expect(vi.getTimerCount()).toBe(0)
  })
})
