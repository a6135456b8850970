/**
 * @module The memory ledger, through the middleware the Worker mounts (`admitMemory`: one ledger per
 * isolate's bindings, its budget from GUARD_MEMORY_BUDGET_BYTES): what is reserved is always released
 * (errors, stream ends, cancels, stream errors), over budget is a 503 with Retry-After, small requests
 * keep a floor. A request held in its handler keeps its reservation in flight until it is let go.
 */
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { GuardError } from '../../src/errors'
import { type AdmissionVariables, admitMemory } from '../../src/worker/admission'
import { readJsonObject } from '../../src/worker/body'
import type { Env } from '../../src/worker/env'

const MB = 1024 * 1024
/** The last part of the budget, which large requests never take (docs/reliability.md, "Memory admission"). */
const SMALL_FLOOR = 8 * MB

type Reservation = AdmissionVariables['admission']
type Vars = { Bindings: Env; Variables: AdmissionVariables }

/** An isolate's bindings: each has a ledger of its own, of `budget` bytes (the default without). */
function isolate(budget?: number): Env {
  const limit = budget === undefined ? {} : { GUARD_MEMORY_BUDGET_BYTES: String(budget) }
  return { GUARD_SECRET: 'x', ...limit } as unknown as Env
}

/** `handler` behind the Worker's admission; a GuardError answered as the Worker answers it. */
function app(handler: (c: { var: AdmissionVariables }) => Response | Promise<Response>) {
  const a = new Hono<Vars>()
  a.post('/run', admitMemory())
  a.post('/run', (c) => handler(c))
  a.onError((error) =>
    error instanceof GuardError
      ? error.getResponse()
      : new Response(error.message, { status: 500 }),
  )
  return a
}

/** A request declaring a body of `bytes` (`Content-Length`, what admission charges up front). */
const post = async (a: Hono<Vars>, env: Env, bytes: number): Promise<Response> =>
  a.request(
    '/run',
    { method: 'POST', headers: { 'content-length': String(bytes) }, body: 'x' },
    env,
  )

/** An admitted request, held in its handler with its reservation until it is let go. */
interface Held {
  reservation: Reservation
  /** Lets the handler answer; resolves with the response (the middleware has released by then). */
  letGo(): Promise<Response>
}

/** A request declaring `bytes`, once it is either held in its handler or refused without reaching it. */
async function hold(env: Env, bytes: number): Promise<Held | Response> {
  let open!: () => void
  const gate = new Promise<void>((resolve) => {
    open = resolve
  })
  let enter!: (reservation: Reservation) => void
  const entered = new Promise<Reservation>((resolve) => {
    enter = resolve
  })
  const response = post(
    app(async (c) => {
      enter(c.var.admission)
      await gate
      return Response.json({})
    }),
    env,
    bytes,
  )
  const first = await Promise.race([entered, response])
  if (first instanceof Response) return first
  return {
    reservation: first,
    letGo: () => {
      open()
      return response
    },
  }
}

async function admitted(env: Env, bytes: number): Promise<Held> {
  const held = await hold(env, bytes)
  if (held instanceof Response) throw new Error(`refused ${bytes} bytes: ${held.status}`)
  return held
}

async function refused(env: Env, bytes: number): Promise<Response> {
  const held = await hold(env, bytes)
  if (held instanceof Response) return held
  await held.letGo()
  throw new Error(`admitted ${bytes} bytes`)
}

/**
 * Whether the ledger holds nothing: a request declaring 15 MB (under the 16 MiB body limit) is charged
 * the most any request may hold, the budget less the floor, which fits only into an empty ledger.
 */
async function nothingReserved(env: Env): Promise<boolean> {
  return (
    (
      await post(
        app(() => Response.json({})),
        env,
        15 * MB,
      )
    ).status === 200
  )
}

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
  it('should refuse over budget with 503 and Retry-After, and admit again once released', async () => {
    const env = isolate(80 * MB)
    const first = await admitted(env, 3 * MB) // 61 MB
    const over = await refused(env, 2 * MB)
    expect(over.status).toBe(503)
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe(
      'guard_unavailable',
    )
    expect(over.headers.get('retry-after')).toMatch(/^\d+$/)
    // Idempotent: every exit path may release, and the middleware releases again after this one.
    first.reservation.release()
    await first.letGo()
    expect(await nothingReserved(env)).toBe(true)
    // Released once, not twice: 61 MB held again still leaves no room for 41 MB more.
    const again = await admitted(env, 3 * MB)
    expect((await refused(env, 2 * MB)).status).toBe(503)
    await again.letGo()
    await (await admitted(env, 2 * MB)).letGo()
  })

  it('should never refuse small requests while only small ones are in flight', async () => {
    const env = isolate(16 * MB)
    const held = await Promise.all(Array.from({ length: 200 }, () => admitted(env, 10_000)))
    // All 200 in flight at once, far over the budget together.
    expect(held.reduce((sum, h) => sum + h.reservation.bytes, 0)).toBeGreaterThan(16 * MB)
    for (const h of held) await h.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should keep the floor for small requests beside large ones', async () => {
    const env = isolate(80 * MB)
    const large = await admitted(env, 3_400_000) // 69 MB: the largest that leaves the floor
    expect(80 * MB - large.reservation.bytes).toBeGreaterThanOrEqual(SMALL_FLOOR)
    const small = await admitted(env, 20_000)
    expect((await refused(env, 200_000)).status).toBe(503)
    // As many small ones as the floor holds are admitted beside the large one.
    const fill = Math.floor(SMALL_FLOOR / small.reservation.bytes) - 1
    const more = await Promise.all(Array.from({ length: fill }, () => admitted(env, 20_000)))
    for (const h of [...more, small, large]) await h.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should charge a streamed body as it grows and refuse it once over budget', async () => {
    const env = isolate(80 * MB)
    const other = await admitted(env, 1 * MB)
    const r = await admitted(env, 0)
    r.reservation.cover(1 * MB)
    // Charged, as it grows, what a body declared at that size is charged up front.
    expect(r.reservation.bytes).toBe(other.reservation.bytes)
    expect(refusal(() => r.reservation.cover(3 * MB)).status).toBe(503)
    await r.letGo()
    await other.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should serve a body whose estimate is over the budget alone, never refuse it forever', async () => {
    const env = isolate(80 * MB)
    const alone = await admitted(env, 14 * MB)
    expect(alone.reservation.bytes).toBe(80 * MB - SMALL_FLOOR)
    expect((await refused(env, 1 * MB)).status).toBe(503)
    await alone.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should reject a budget no request can use', async () => {
    const response = await post(
      app(() => Response.json({})),
      isolate(1024),
      0,
    )
    expect(response.status).toBe(500)
    expect(await response.text()).toMatch(/GUARD_MEMORY_BUDGET_BYTES/)
  })
})

describe('admitMemory', () => {
  const sse = (stream: ReadableStream<Uint8Array>) =>
    new Response(stream, { headers: { 'content-type': 'text/event-stream' } })

  it('should release when the handler throws or answers whole', async () => {
    const env = isolate()
    const failing = app(() => {
      throw new Error('boom')
    })
    expect((await post(failing, env, 1 * MB)).status).toBe(500)
    const whole = app(() => Response.json({ ok: true }))
    expect((await post(whole, env, 1 * MB)).status).toBe(200)
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should hold a stream reservation until the stream ends, errors or is cancelled', async () => {
    const env = isolate()
    const chunk = new TextEncoder().encode('data: {}\n\n')
    const ending = app(() => sse(new Blob([chunk]).stream()))
    const ended = await post(ending, env, 1 * MB)
    expect(await nothingReserved(env)).toBe(false)
    await ended.text()
    expect(await nothingReserved(env)).toBe(true)

    const failing = app(() =>
      sse(
        new ReadableStream({
          pull(controller) {
            controller.error(new Error('upstream broke'))
          },
        }),
      ),
    )
    const broken = await post(failing, env, 1 * MB)
    expect(await nothingReserved(env)).toBe(false)
    await expect(broken.text()).rejects.toThrow()
    expect(await nothingReserved(env)).toBe(true)

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
    const response = await post(endless, env, 1 * MB)
    const reader = response.body!.getReader()
    await reader.read()
    expect(await nothingReserved(env)).toBe(false)
    await reader.cancel()
    expect(cancelled).toBe(true)
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should answer 503 with Retry-After over budget, before the handler runs', async () => {
    const env = isolate()
    let ran = 0
    const a = app(() => {
      ran++
      return Response.json({})
    })
    const held = await admitted(env, 3 * MB)
    const response = await post(a, env, 2 * MB)
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(ran).toBe(0)
    await held.letGo()
    expect(await nothingReserved(env)).toBe(true)
    // A declared size over the body limit is left for the reader's 413.
    expect((await post(a, env, 64 * MB)).status).toBe(200)
  })
})

describe('readJsonObject with admission', () => {
  it('should stop reading a body without Content-Length once its reservation is over budget', async () => {
    const env = isolate(80 * MB)
    const held = await admitted(env, 2 * MB)
    const streaming = await admitted(env, 0)
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
    const read = readJsonObject(request, {
      limit: 16 * MB,
      sized: (n) => streaming.reservation.cover(n),
    })
    await expect(read).rejects.toMatchObject({ status: 503, retryAfterSeconds: 2 })
    expect(cancelled).toBe(true)
    // Refused at about (72 − 41) MiB / 20 of body, not at the 16 MiB limit.
    expect(pulled * chunk.byteLength).toBeLessThan(2 * MB)
    await streaming.letGo()
    await held.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })
})
