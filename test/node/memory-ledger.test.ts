/**
 * @module The memory ledger and its middleware: what is reserved is always released (errors, stream
 * ends, cancels, stream errors), over budget is a 503 with Retry-After, small requests keep a floor.
 */
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { GuardError } from '../../src/errors'
import {
  type AdmissionVariables,
  admitMemory,
  MemoryLedger,
  memoryLedger,
  SMALL_FLOOR_BYTES,
} from '../../src/worker/admission'
import { readJsonObject } from '../../src/worker/body'
import type { Env } from '../../src/worker/env'

const MB = 1024 * 1024

function refusal(run: () => unknown): GuardError {
  try {
    run()
  } catch (error) {
    if (error instanceof GuardError) return error
    throw error
  }
  throw new Error('not refused')
}

describe('MemoryLedger', () => {
  it('should refuse over budget with 503 and Retry-After, and admit again once released', () => {
    const ledger = new MemoryLedger(80 * MB)
    const first = ledger.reserve(3 * MB) // 61 MB
    const error = refusal(() => ledger.reserve(2 * MB))
    expect(error.status).toBe(503)
    expect(error.code).toBe('guard_unavailable')
    expect(error.getResponse().headers.get('retry-after')).toMatch(/^\d+$/)
    expect(ledger.inFlight).toBe(1)
    first.release()
    first.release() // idempotent: every exit path may release
    expect(ledger.reserved).toBe(0)
    expect(ledger.inFlight).toBe(0)
    ledger.reserve(2 * MB).release()
  })

  it('should never refuse small requests while only small ones are in flight', () => {
    const ledger = new MemoryLedger(16 * MB)
    const held = Array.from({ length: 200 }, () => ledger.reserve(10_000))
    expect(ledger.reserved).toBeGreaterThan(ledger.budget)
    for (const r of held) r.release()
    expect(ledger.reserved).toBe(0)
  })

  it('should keep the floor for small requests beside large ones', () => {
    const ledger = new MemoryLedger(80 * MB)
    const large = ledger.reserve(3_400_000) // 69 MB: the largest that leaves the floor
    expect(ledger.budget - ledger.reserved).toBeGreaterThanOrEqual(SMALL_FLOOR_BYTES)
    const small = ledger.reserve(20_000)
    expect(refusal(() => ledger.reserve(200_000)).status).toBe(503)
    small.release()
    large.release()
  })

  it('should charge a streamed body as it grows and refuse it once over budget', () => {
    const ledger = new MemoryLedger(80 * MB)
    const other = ledger.reserve(1 * MB)
    const r = ledger.reserve(0)
    r.cover(1 * MB)
    expect(r.bytes).toBe(MemoryLedger.cost(1 * MB))
    expect(refusal(() => r.cover(3 * MB)).status).toBe(503)
    r.release()
    other.release()
    expect(ledger.reserved).toBe(0)
  })

  it('should serve a body whose estimate is over the budget alone, never refuse it forever', () => {
    const ledger = new MemoryLedger(80 * MB)
    const alone = ledger.reserve(14 * MB)
    expect(alone.bytes).toBe(80 * MB - SMALL_FLOOR_BYTES)
    expect(refusal(() => ledger.reserve(1 * MB)).status).toBe(503)
    alone.release()
  })

  it('should reject a budget no request can use', () => {
    expect(() => new MemoryLedger(1024)).toThrow(/GUARD_MEMORY_BUDGET_BYTES/)
  })
})

describe('admitMemory', () => {
  type Vars = { Bindings: Env; Variables: AdmissionVariables }
  const env = { GUARD_SECRET: 'x' } as unknown as Env

  function app(handler: (c: { var: AdmissionVariables }) => Response | Promise<Response>) {
    const a = new Hono<Vars>()
    a.post('/run', admitMemory())
    a.post('/run', (c) => handler(c))
    a.onError((error) =>
      error instanceof GuardError ? error.getResponse() : new Response('internal', { status: 500 }),
    )
    return a
  }
  const sse = (stream: ReadableStream<Uint8Array>) =>
    new Response(stream, { headers: { 'content-type': 'text/event-stream' } })
  const post = (a: Hono<Vars>, bytes: number) =>
    a.request(
      '/run',
      { method: 'POST', headers: { 'content-length': String(bytes) }, body: 'x' },
      env,
    )

  it('should release when the handler throws or answers whole', async () => {
    const ledger = memoryLedger(env)
    const failing = app(() => {
      throw new Error('boom')
    })
    expect((await post(failing, 1 * MB)).status).toBe(500)
    const whole = app(() => Response.json({ ok: true }))
    expect((await post(whole, 1 * MB)).status).toBe(200)
    expect(ledger.reserved).toBe(0)
    expect(ledger.inFlight).toBe(0)
  })

  it('should hold a stream reservation until the stream ends, errors or is cancelled', async () => {
    const ledger = memoryLedger(env)
    const chunk = new TextEncoder().encode('data: {}\n\n')
    const ending = app(() => sse(new Blob([chunk]).stream()))
    const ended = await post(ending, 1 * MB)
    expect(ledger.inFlight).toBe(1)
    await ended.text()
    expect(ledger.inFlight).toBe(0)

    const failing = app(() =>
      sse(
        new ReadableStream({
          pull(controller) {
            controller.error(new Error('upstream broke'))
          },
        }),
      ),
    )
    await expect((await post(failing, 1 * MB)).text()).rejects.toThrow()
    expect(ledger.inFlight).toBe(0)

    let cancelled = false
    const endless = app(() =>
      sse(
        new ReadableStream({
          pull(controller) {
            controller.enqueue(chunk)
          },
          cancel() {
            cancelled = true
          },
        }),
      ),
    )
    const response = await post(endless, 1 * MB)
    const reader = response.body!.getReader()
    await reader.read()
    await reader.cancel()
    expect(cancelled).toBe(true)
    expect(ledger.inFlight).toBe(0)
    expect(ledger.reserved).toBe(0)
  })

  it('should answer 503 with Retry-After over budget, before the handler runs', async () => {
    let ran = 0
    const a = app(() => {
      ran++
      return Response.json({})
    })
    const held = memoryLedger(env).reserve(3 * MB)
    const response = await post(a, 2 * MB)
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(ran).toBe(0)
    held.release()
    expect(memoryLedger(env).inFlight).toBe(0)
    // A declared size over the body limit is left for the reader's 413.
    expect((await post(a, 64 * MB)).status).toBe(200)
  })
})

describe('readJsonObject with admission', () => {
  it('should stop reading a body without Content-Length once its reservation is over budget', async () => {
    const ledger = new MemoryLedger(80 * MB)
    const held = ledger.reserve(2 * MB)
    const reservation = ledger.reserve(0)
    let pulled = 0
    let cancelled = false
    const chunk = new TextEncoder().encode(`"${'a'.repeat(64 * 1024)}",`)
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"messages":['))
      },
      pull(controller) {
        pulled++
        controller.enqueue(chunk)
      },
      cancel() {
        cancelled = true
      },
    })
    const request = new Request('http://guard/v1/chat/completions', {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit)
    const read = readJsonObject(request, 16 * MB, {}, (n) => reservation.cover(n))
    await expect(read).rejects.toMatchObject({ status: 503, retryAfterSeconds: 2 })
    expect(cancelled).toBe(true)
    // Refused at about (72 − 41) MiB / 20 of body, not at the 16 MiB limit.
    expect(pulled * chunk.byteLength).toBeLessThan(2 * MB)
    reservation.release()
    held.release()
    expect(ledger.reserved).toBe(0)
  })
})
