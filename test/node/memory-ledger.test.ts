/**
 * @module The memory ledger, through the middleware the Worker mounts (`admitMemory`: one ledger per
 * isolate's bindings, its budget from GUARD_MEMORY_BUDGET_BYTES): what is reserved is always released
 * (errors, stream ends, cancels, stream errors), over budget is a 503 with Retry-After, small requests
 * keep a floor. A request held in its handler keeps its reservation in flight until it is let go.
 */
import { Hono } from 'hono'
import { describe, expect, it, vi } from 'vitest'
import { GuardError } from '../../src/core/errors'
import { type AdmissionVariables, admitMemory } from '../../src/worker/admission'
import { discardBody, readJsonObject } from '../../src/worker/body'
import type { Env } from '../../src/worker/env'
import { MemoryLedger } from '../../src/worker/memory-ledger'

const MB = 1024 * 1024
/** The last part of the budget, which large requests never take (docs/reliability.md, "Memory admission"). */
const SMALL_FLOOR = 8 * MB

/** The body size admission charges `mib` MiB for (read off the ledger's own charge: a base and a rate). */
const CHARGE = new MemoryLedger()
const BASE = CHARGE.cost(0)
const PER_BYTE = (CHARGE.cost(1_000_000) - BASE) / 1_000_000
const bodyCharged = (mib: number) => Math.floor((mib * MB - BASE) / PER_BYTE)

type Reservation = AdmissionVariables['admission']
type Vars = { Bindings: Env; Variables: AdmissionVariables & { tenant?: string } }

/**
 * An isolate's bindings: each has a ledger of its own, of `budget` bytes (the default without), whose
 * long prompts wait `waitMs` for their turn (none here unless a test says so: refused at once).
 */
function isolate(budget?: number, waitMs = 0): Env {
  const limit = budget === undefined ? {} : { GUARD_MEMORY_BUDGET_BYTES: String(budget) }
  return { GUARD_SECRET: 'x', GUARD_ADMISSION_WAIT_MS: String(waitMs), ...limit } as unknown as Env
}

/** `handler` behind the Worker's admission; a GuardError answered as the Worker answers it. */
function app(handler: (c: { var: AdmissionVariables }) => Response | Promise<Response>) {
  const a = new Hono<Vars>()
  // The tenant, as the Worker's key check sets it before admission runs.
  a.post('/run', async (c, next) => {
    c.set('tenant', c.req.header('x-tenant') ?? 'tenant-a')
    await next()
  })
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
const post = async (a: Hono<Vars>, env: Env, bytes: number, tenant = 'tenant-a') =>
  a.request(
    '/run',
    { method: 'POST', headers: { 'content-length': String(bytes), 'x-tenant': tenant }, body: 'x' },
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
    const first = await admitted(env, bodyCharged(61))
    const over = await refused(env, bodyCharged(41))
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
    const again = await admitted(env, bodyCharged(61))
    expect((await refused(env, bodyCharged(41))).status).toBe(503)
    await again.letGo()
    await (await admitted(env, bodyCharged(41))).letGo()
  })

  it('should leave what the isolate keeps between requests out of the budget, as it grows', async () => {
    let held = 0
    const ledger = new MemoryLedger(80 * MB, 0, () => held)
    const first = await ledger.admit('tenant-a', bodyCharged(21))
    const second = await ledger.admit('tenant-b', bodyCharged(21))
    second.release()
    // 40 MiB kept (a full text memo and more): 32 left for large requests, 21 of them taken.
    held = 40 * MB
    await expect(ledger.admit('tenant-b', bodyCharged(21))).rejects.toMatchObject({
      status: 503,
      retryAfterSeconds: 2,
    })
    first.release()
    // Alone, a long prompt is still served: charged at most what is left, never refused forever.
    const alone = await ledger.admit('tenant-b', 14 * MB)
    expect(alone.bytes).toBe(80 * MB - 40 * MB - SMALL_FLOOR)
    alone.release()
    expect(ledger.reserved).toBe(0)
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
    const large = await admitted(env, bodyCharged(71.9)) // the largest that leaves the floor
    expect(80 * MB - large.reservation.bytes).toBeGreaterThanOrEqual(SMALL_FLOOR)
    const small = await admitted(env, 20_000)
    // Over the small size: a large request, which may not take the floor.
    expect((await refused(env, bodyCharged(3))).status).toBe(503)
    // As many small ones as the floor holds are admitted beside the large one.
    const fill = Math.floor(SMALL_FLOOR / small.reservation.bytes) - 1
    const more = await Promise.all(Array.from({ length: fill }, () => admitted(env, 20_000)))
    for (const h of [...more, small, large]) await h.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should charge a streamed body as it grows and refuse it once over budget', async () => {
    const env = isolate(80 * MB)
    const other = await admitted(env, bodyCharged(21))
    const r = await admitted(env, 0)
    r.reservation.cover(bodyCharged(21))
    // Charged, as it grows, what a body declared at that size is charged up front.
    expect(r.reservation.bytes).toBe(other.reservation.bytes)
    expect(refusal(() => r.reservation.cover(bodyCharged(61))).status).toBe(503)
    await r.letGo()
    await other.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should serve a body whose estimate is over the budget alone, never refuse it forever', async () => {
    const env = isolate(80 * MB)
    const alone = await admitted(env, 14 * MB)
    expect(alone.reservation.bytes).toBe(80 * MB - SMALL_FLOOR)
    expect((await refused(env, bodyCharged(21))).status).toBe(503)
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
    const held = await admitted(env, bodyCharged(61))
    const response = await post(a, env, bodyCharged(41))
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
    const held = await admitted(env, bodyCharged(41))
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
    // Reading stopped, and the rest is left unlocked for the middleware to drain before its 503.
    expect(cancelled).toBe(false)
    expect(request.body?.locked).toBe(false)
    // Refused once charged the 31 MiB left of the 72 large requests may hold, not at the 16 MiB limit.
    // (The stream pulls one chunk ahead of the reader.)
    expect(pulled * chunk.byteLength).toBeLessThan(bodyCharged(31) + 2 * chunk.byteLength)
    await streaming.letGo()
    await held.letGo()
    expect(await nothingReserved(env)).toBe(true)
  })
})

/** A request of `tenant` declaring `bytes`, started now: it enters its handler when admitted. */
interface Started {
  tenant: string
  /** Resolves when it is in its handler, holding its reservation. */
  entered: Promise<void>
  /** The response: after `letGo` when admitted, at once when refused. */
  response: Promise<Response>
  letGo(): void
}

function start(env: Env, tenant: string, bytes: number, order: string[] = []): Started {
  let open!: () => void
  const gate = new Promise<void>((resolve) => {
    open = resolve
  })
  let enter!: () => void
  const entered = new Promise<void>((resolve) => {
    enter = resolve
  })
  const handler = app(async () => {
    order.push(tenant)
    enter()
    await gate
    return Response.json({})
  })
  return { tenant, entered, response: post(handler, env, bytes, tenant), letGo: () => open() }
}

/** Lets the first request of `started` that is in its handler go, and waits for its answer. */
async function letGoFirstIn(started: Started[], order: string[], served: number): Promise<void> {
  const next = started.find((s) => s.tenant === order[served] && !doneSet.has(s))!
  doneSet.add(next)
  next.letGo()
  expect((await next.response).status).toBe(200)
}
const doneSet = new WeakSet<Started>()

/** Long enough for a waiter whose turn came to take it: it looks on its own timer every 25 ms. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 60))

describe('fair admission between tenants', () => {
  it('should let the waiting tenants take turns at freed memory, a newcomer first', async () => {
    const env = isolate(80 * MB, 10_000)
    const order: string[] = []
    // A holds 61 MB of the 72 large requests may hold; 3 more of A wait, then 2 of B.
    const first = start(env, 'a', bodyCharged(61), order)
    await first.entered
    const waiting = [
      ...[1, 2, 3].map(() => start(env, 'a', bodyCharged(61), order)),
      ...[1, 2].map(() => start(env, 'b', bodyCharged(61), order)),
    ]
    await tick()
    expect(order).toEqual(['a'])
    const all = [first, ...waiting]
    for (let served = 0; served < all.length; served++) {
      await letGoFirstIn(all, order, served)
      await tick()
    }
    // B never let in, so first; then whoever was let in longest ago: alternating while both wait.
    expect(order).toEqual(['a', 'b', 'a', 'b', 'a', 'a'])
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should serve a victim next however many long prompts an attacker keeps waiting', async () => {
    const env = isolate(80 * MB, 10_000)
    const order: string[] = []
    const first = start(env, 'attacker', bodyCharged(61), order)
    await first.entered
    const flood = Array.from({ length: 12 }, () => start(env, 'attacker', bodyCharged(61), order))
    await tick()
    const victim = start(env, 'victim', bodyCharged(61), order)
    await tick()
    // Eight of the attacker's wait; the rest are refused at once, with Retry-After.
    const settled = await Promise.all(
      flood.map((s) => Promise.race([s.response, tick().then(() => undefined)])),
    )
    const refusedNow = settled.filter((r): r is Response => r !== undefined)
    expect(refusedNow.length).toBe(12 - 8)
    for (const r of refusedNow) {
      expect(r.status).toBe(503)
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
    }
    doneSet.add(first)
    first.letGo()
    await first.response
    await victim.entered
    expect(order).toEqual(['attacker', 'victim'])
    doneSet.add(victim)
    victim.letGo()
    await victim.response
    const queued = flood.filter((_, i) => settled[i] === undefined)
    for (const s of queued) {
      await s.entered
      doneSet.add(s)
      s.letGo()
      await s.response
    }
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should refuse a waiting request with 503 and Retry-After when its wait is over', async () => {
    const env = isolate(80 * MB, 50)
    const first = start(env, 'a', bodyCharged(61))
    await first.entered
    const began = Date.now()
    const late = await start(env, 'b', bodyCharged(61)).response
    expect(late.status).toBe(503)
    expect(late.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(Date.now() - began).toBeGreaterThanOrEqual(45)
    first.letGo()
    await first.response
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should not let a chunked body grow past another tenant waiting its turn', async () => {
    const env = isolate(80 * MB, 10_000)
    const held = await admitted(env, bodyCharged(21)) // of tenant-a
    const waiting = start(env, 'b', bodyCharged(61)) // 61 MB more would not fit: B waits
    await tick()
    const chunked = await admitted(env, 0)
    // 21 MB more would fit beside the 21 held, but B is waiting for freed memory: refused.
    expect(refusal(() => chunked.reservation.cover(bodyCharged(21))).status).toBe(503)
    await chunked.letGo()
    await held.letGo()
    await waiting.entered
    waiting.letGo()
    expect((await waiting.response).status).toBe(200)
    expect(await nothingReserved(env)).toBe(true)
  })

  it('should bound how many wait in all, displacing the tenant with the most waiting', async () => {
    const env = isolate(80 * MB, 300)
    const first = start(env, 'a', bodyCharged(61))
    await first.entered
    // Eight tenants with eight waiting each: the isolate's 64.
    const crowd = Array.from({ length: 64 }, (_, i) => start(env, `t${i % 8}`, bodyCharged(61)))
    await tick()
    const newcomer = start(env, 'newcomer', bodyCharged(61))
    await tick()
    const settled = await Promise.all(
      [...crowd, newcomer].map((s) => Promise.race([s.response, tick().then(() => undefined)])),
    )
    // One of the crowd made room; the newcomer waits.
    expect(settled.filter((r) => r?.status === 503).length).toBe(1)
    expect(settled.at(-1)).toBeUndefined()
    first.letGo()
    await first.response
    // Each is let in by turn or times out with its 503; nothing is left reserved.
    for (const s of [...crowd, newcomer]) {
      const r = await Promise.race([s.response, s.entered.then(() => undefined)])
      if (r === undefined) {
        s.letGo()
        await s.response
      }
    }
    expect(await nothingReserved(env)).toBe(true)
  })
})

describe('a waiting request that is gone', () => {
  // In workerd a request whose client hung up runs no more: its timers stop, and a promise another
  // request settles for it throws into that other request. Here its timers simply never run: the
  // clock moves (`setSystemTime`) without them.
  const fake = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })

  it('should take back a turn given to a request that never comes to take it', async () => {
    fake()
    try {
      const ledger = new MemoryLedger(80 * MB, 30_000)
      const held = await ledger.admit('tenant-a', bodyCharged(61))
      const gone = ledger.admit('tenant-b', bodyCharged(61))
      gone.catch(() => {})
      // A's release gives B its turn: B's bytes are reserved for it, though B is not there.
      held.release()
      expect(ledger.reserved).toBe(ledger.cost(bodyCharged(61)))
      vi.setSystemTime(Date.now() + 10_001)
      // Ten seconds on, the next request finds B's bytes free and is let in at once.
      const next = await ledger.admit('tenant-c', bodyCharged(61))
      expect(ledger.reserved).toBe(next.bytes)
      next.release()
      expect(ledger.reserved).toBe(0)
      // Were B still there after all, it would be told to retry, not let in over the budget.
      vi.advanceTimersByTime(100)
      await expect(gone).rejects.toMatchObject({ status: 503, retryAfterSeconds: 2 })
    } finally {
      vi.useRealTimers()
    }
  })

  it('should give a tenant back its places in the queue that gone requests kept', async () => {
    fake()
    try {
      const ledger = new MemoryLedger(80 * MB, 30_000)
      const held = await ledger.admit('tenant-a', bodyCharged(61))
      for (let i = 0; i < 8; i++) ledger.admit('tenant-b', bodyCharged(61)).catch(() => {})
      // Its eight places are taken: the ninth is refused at once.
      await expect(ledger.admit('tenant-b', bodyCharged(61))).rejects.toMatchObject({ status: 503 })
      // Past their wait and the lease, with none of their timers run: the places are free again.
      vi.setSystemTime(Date.now() + 30_000 + 10_001)
      let settled = false
      const again = ledger.admit('tenant-b', bodyCharged(61)).finally(() => {
        settled = true
      })
      again.catch(() => {})
      await Promise.resolve()
      expect(settled).toBe(false)
      held.release()
      vi.advanceTimersByTime(100)
      const admitted = await again
      expect(ledger.reserved).toBe(admitted.bytes)
      admitted.release()
      expect(ledger.reserved).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('a refused request’s body', () => {
  /** A body of `chunks` 64 KiB chunks (endless when Infinity), counting what was pulled. */
  function counted(chunks: number) {
    const seen = { pulled: 0, cancelled: false, ended: false }
    const chunk = new Uint8Array(64 * 1024).fill(0x61)
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (seen.pulled >= chunks) {
          seen.ended = true
          return controller.close()
        }
        seen.pulled++
        controller.enqueue(chunk)
      },
      cancel() {
        seen.cancelled = true
      },
    })
    return { body, seen }
  }

  it('should be read to its end before the 503 goes out, so a client still uploading gets it', async () => {
    const env = isolate(80 * MB)
    const held = await admitted(env, bodyCharged(61))
    const { body, seen } = counted(48) // 3 MiB
    const handler = app(() => Response.json({}))
    const response = await handler.request(
      '/run',
      {
        method: 'POST',
        headers: { 'content-length': String(48 * 64 * 1024), 'x-tenant': 'b' },
        body,
        duplex: 'half',
      } as RequestInit,
      env,
    )
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/)
    expect([seen.pulled, seen.ended, seen.cancelled]).toEqual([48, true, false])
    await held.letGo()
  })

  it('should not be read past the route’s limit: an endless body is cut off', async () => {
    const { body, seen } = counted(Number.POSITIVE_INFINITY)
    const request = new Request('http://guard/run', {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit)
    await discardBody(request, { limit: 1 * MB })
    expect(seen.cancelled).toBe(true)
    expect(seen.pulled * 64 * 1024).toBeLessThanOrEqual(1 * MB + 2 * 64 * 1024)
  })
})

describe('a prompt the engine has', () => {
  /** A ledger of 80 MiB (72 for large requests) whose long prompts wait up to 10 s for a turn. */
  const ledger = () => new MemoryLedger(80 * MB, 10_000)
  /** A body charged 40 MiB: two do not fit together until one is with the engine. */
  const BODY = bodyCharged(40)

  it('should lower what it holds once settled and let a waiting prompt in', async () => {
    const l = ledger()
    const first = await l.admit('tenant-a', BODY)
    expect(first.bytes).toBe(l.cost(BODY))
    let second: Awaited<ReturnType<MemoryLedger['admit']>> | undefined
    const waiting = l.admit('tenant-b', BODY).then((r) => {
      second = r
    })
    await new Promise((r) => setTimeout(r, 60))
    expect(second).toBeUndefined()
    first.settle()
    expect(first.bytes).toBe(l.heldCost(BODY))
    expect(first.bytes).toBeLessThan((40 * MB) / 2)
    await waiting
    expect(l.reserved).toBe(first.bytes + l.cost(BODY))
    second!.release()
    first.release()
    expect(l.reserved).toBe(0)
    expect(l.reservedLarge).toBe(0)
  })

  it('should never raise a reservation by settling, nor after its release', async () => {
    const l = ledger()
    const small = await l.admit('tenant-a', 1000)
    const before = small.bytes
    small.settle()
    expect(small.bytes).toBe(l.heldCost(1000))
    expect(small.bytes).toBeLessThanOrEqual(before)
    small.settle()
    expect(small.bytes).toBe(l.heldCost(1000))
    const large = await l.admit('tenant-a', BODY)
    large.settle()
    const settled = large.bytes
    large.settle()
    expect(large.bytes).toBe(settled)
    large.release()
    large.settle()
    large.resume()
    small.release()
    expect(l.reserved).toBe(0)
  })

  it('should take its full charge back for a retry, or refuse the retry with 503 when it no longer fits', async () => {
    const l = ledger()
    const first = await l.admit('tenant-a', BODY)
    first.settle()
    first.resume()
    expect(first.bytes).toBe(l.cost(BODY))
    // Settled again, its freed memory taken by another prompt: the retry no longer fits.
    first.settle()
    const other = await l.admit('tenant-b', BODY)
    expect(() => first.resume()).toThrow(expect.objectContaining({ status: 503 }))
    // Refused, it keeps what it held, and gives exactly that back.
    expect(first.bytes).toBe(l.heldCost(BODY))
    first.release()
    other.release()
    expect(l.reserved).toBe(0)
    expect(l.reservedLarge).toBe(0)
  })

  it('should not let a body covered after settling slip in at the held charge', async () => {
    const l = ledger()
    const first = await l.admit('tenant-a', bodyCharged(10))
    first.settle()
    // A request that settles before its body is all read (it cannot in the Worker, whose guard reads
    // the body first) is still charged in full for what it reads after.
    first.cover(BODY)
    expect(first.bytes).toBe(l.cost(BODY))
    first.release()
    expect(l.reserved).toBe(0)
  })

  it('should charge a held answer on top of what a settled prompt keeps, and refuse one that does not fit', async () => {
    const l = ledger()
    const first = await l.admit('tenant-a', BODY)
    // Within the full charge, before the engine has the prompt: nothing to add.
    first.hold(MB)
    expect(first.bytes).toBe(l.cost(BODY))
    first.settle()
    const settled = first.bytes
    expect(settled).toBeGreaterThanOrEqual(l.heldCost(BODY) + MB)
    first.hold(4 * MB)
    expect(first.bytes).toBeGreaterThan(settled)
    expect(l.reserved).toBe(first.bytes)
    // Another prompt takes what is left; the answer can grow no further.
    const other = await l.admit('tenant-b', BODY)
    expect(() => first.hold(40 * MB)).toThrow(expect.objectContaining({ status: 503 }))
    first.release()
    other.release()
    expect(l.reserved).toBe(0)
    expect(l.reservedLarge).toBe(0)
  })

  it('should charge a small request’s long held answer as a large one, within the floor rules', async () => {
    const l = ledger()
    const chat = await l.admit('tenant-a', 2000)
    chat.hold(3 * MB)
    expect(chat.bytes).toBeGreaterThan(2 * MB)
    expect(l.reservedLarge).toBe(chat.bytes)
    chat.release()
    expect(l.reserved).toBe(0)
    expect(l.reservedLarge).toBe(0)
  })
})
