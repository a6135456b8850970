/**
 * @module The isolate's memory ledger: what requests in flight reserve, within one budget, and a short
 * fair queue for large requests — tenants take turns at freed memory, so one tenant's many long prompts
 * cannot keep another tenant's out.
 */
import { GuardError } from '../core'

/**
 * Bytes (V8 heap + ArrayBuffers) one more maximal prompt in flight adds per byte of its body, at most,
 * measured in a workerd isolate capped at 128 MB as the rise of the sampled peak from 1 to 2 and from
 * 2 to 4 concurrent prompts (bench/memory-workerd.ts, bench/results/memory-admission.json): medians
 * English 6.3, Chinese 6.7; the worst pairing 10.4 (Chinese), so 11 leaves 6% over it. The text, its
 * parsed and canary-marked copies, the tokenizer's pieces and the print (4 bytes a distinct shingle, 8
 * a fingerprint). What the isolate holds whatever runs (its tables, the garbage V8 has not collected
 * yet) is the budget's headroom, not a request's charge. Charged before anything is built from the body.
 */
const BYTES_PER_BODY_BYTE = 11

/** What any request holds whatever its body (Hono context, guard plan, response): measured under 1 MB. */
const REQUEST_BASE_BYTES = 1024 * 1024

/**
 * Bytes per body byte a maximal prompt still holds once the engine has it and the guard's work on it is
 * done (its print, its count), until its answer: what stays alive after a full GC in a workerd isolate
 * capped at 128 MB (bench/memory-live.ts, two prompts; bench/results/memory-admission.json `held`):
 * English 9.18 MiB a prompt, Chinese 7.78 — of which the text memo's facts of the prompt, which stay
 * after the request and already come out of the budget as the memo grows, are 4.4 and 4.66. Without
 * them, 1.6 per body byte in both scripts; 3 is nearly twice that, and covers English even with them.
 */
const HELD_BYTES_PER_BODY_BYTE = 3

/**
 * Bytes per byte of a streamed answer held until its verdict (up to `stream.maxHeldBytes`, 8 MiB by
 * default), charged on top of what the request keeps: measured 1.34–1.35 in a workerd isolate capped at
 * 128 MB, 2 and 4 streams held to the bound at once (bench/memory-held.ts, the highest of GC'd samples
 * over idle; bench/results/memory-admission.json `heldAnswer`). 2 is half again over it.
 */
const ANSWER_BYTES_PER_HELD_BYTE = 2

/**
 * The default budget: the platform's 128 MB per isolate less what an isolate holds with no request in
 * flight once its tables are loaded (o200k's tables, the family bound, the fingerprint table, prefix
 * records: 36–44 MB measured) and headroom for the garbage V8 has not collected yet (about 9 MB more
 * than the requests' own share, measured). The text memo, which fills with traffic, and the fingerprint
 * table's second generation, made at its first rotation, are left out of it as they grow (see
 * {@link MemoryLedger}).
 */
const DEFAULT_MEMORY_BUDGET_BYTES = 80 * 1024 * 1024

/**
 * Reservations at most this large are small: ordinary chat requests (bodies up to ~50 KB). They are never
 * refused while only small requests are in flight, and large ones may never take the last
 * {@link SMALL_FLOOR_BYTES} of the budget, so ordinary traffic keeps flowing beside long prompts.
 */
const SMALL_REQUEST_BYTES = 2 * 1024 * 1024

/** The part of the budget only small requests may use. */
const SMALL_FLOOR_BYTES = 8 * 1024 * 1024

/** Seconds a refused client is told to wait: a maximal prompt is answered in a few seconds. */
const RETRY_AFTER_SECONDS = 2

/**
 * How long a large request waits for its turn before its 503: about two tenants' full queues of
 * maximal prompts (3–4 s each in workerd). A waiting request holds a connection and its headers,
 * never its body (nothing of it is read yet).
 */
const DEFAULT_QUEUE_WAIT_MS = 30_000

/** Large requests one tenant may have waiting; past it, its requests are refused at once. */
const MAX_WAITING_PER_TENANT = 8

/** Large requests all tenants may have waiting; a tenant with fewer waiting displaces the most waiting. */
const MAX_WAITING = 64

/**
 * How often a waiting request looks, on its own timer, whether its turn has come. In workerd a request
 * may not settle a promise another request is awaiting: when the awaiting request is gone (its client
 * hung up), settling it throws "Cannot perform I/O on behalf of a different request" into the request
 * that freed the memory, and the turn's bytes stay reserved for good. So the request that frees
 * memory only marks the next waiter's turn; the waiter takes it, in its own request, within this long.
 */
const TURN_POLL_MS = 25

/**
 * A turn not taken within this long after it was given is taken back: the request that waited for it
 * is gone (its timers stopped with it). Far longer than {@link TURN_POLL_MS} and than the longest
 * stretch one maximal prompt keeps the isolate busy (3–4 s), so a waiter that is still there is never
 * mistaken for gone; one that is gone holds its bytes this long at most. Likewise a waiter still
 * queued this long after its own wait ended, which its timer would have refused, is dropped.
 */
const TURN_LEASE_MS = 10_000

/** One request's share of the ledger. `release` is idempotent: every exit path may call it. */
export interface Reservation {
  /** Bytes reserved now. */
  readonly bytes: number
  /** Raises the reservation to cover a body of `bodyBytes` (seen so far); throws 503 over budget. */
  cover(bodyBytes: number): void
  /**
   * The engine has the request and the guard's work on its prompt is done: lowers the reservation to
   * what the request holds until its answer ({@link HELD_BYTES_PER_BODY_BYTE} of the body covered), and
   * hands what it frees to the next turn. Never raises.
   */
  settle(): void
  /**
   * Raises a settled reservation back to its body's full charge before the request builds and sends
   * its prompt again (a retry); throws 503 when that no longer fits. Nothing else takes the place.
   */
  resume(): void
  /**
   * Raises the reservation to cover a streamed answer of `heldBytes` held until its verdict, on top of
   * what the request keeps of its prompt; throws 503 when that does not fit (the answer is withheld).
   */
  hold(heldBytes: number): void
  release(): void
}

/** What one reservation holds now. */
interface Held {
  tenant: string
  bytes: number
  /** Counted as a large request (in `reservedLarge`, a turn taken). */
  large: boolean
  open: boolean
}

/**
 * A large request waiting for its turn. Other requests only change its fields; the waiting request
 * reads them on its own timer (see {@link TURN_POLL_MS}).
 */
interface Waiter {
  tenant: string
  bytes: number
  /** When its wait is over (Date.now()): refused then, by its own timer. */
  deadline: number
  /** When its turn was given (its bytes reserved, its turn taken) by whichever request freed memory. */
  grantedAt?: number
  /** Refused by another request (displaced), or its turn taken back: it answers 503. */
  refused?: boolean
}

/**
 * The isolate's ledger of bytes reserved by requests in flight. Only the operator's budget bounds it:
 * nothing a request sends changes the budget, only what that request is charged, and no tenant's
 * requests take memory while another tenant waits for its turn.
 *
 * @example
 * const ledger = new MemoryLedger(80 * 1024 * 1024)
 * const r = await ledger.admit('tenant-a', Number(request.headers.get('content-length') ?? 0))
 * try { … } finally { r.release() }
 */
export class MemoryLedger {
  readonly budget: number
  /** Bytes reserved by requests in flight. */
  reserved = 0
  /** Bytes reserved by requests over {@link SMALL_REQUEST_BYTES}. */
  reservedLarge = 0
  /** Waiting large requests per tenant, oldest first. */
  readonly #queues = new Map<string, Waiter[]>()
  #waiting = 0
  /** Waiters given their turn and not yet there to take it. */
  readonly #granted = new Set<Waiter>()
  /**
   * Per tenant with large requests in flight or waiting: how many are in flight, and when it was last
   * let in (a count of admissions). The waiting tenant with the fewest in flight, then the one let in
   * longest ago, has the next turn.
   */
  readonly #turns = new Map<string, { inFlight: number; last: number }>()
  #admissions = 0
  /** ms a large request may wait for its turn. */
  readonly #waitMs: number
  /** Bytes the isolate keeps between requests that grow with traffic (memo, table): not for requests. */
  readonly #held: () => number

  /**
   * `held`: bytes the isolate keeps between requests beyond what it holds idle (the text memo, which
   * fills with traffic up to its own budget, and the fingerprint table's second generation); they come
   * out of the budget as they grow.
   */
  constructor(
    budget = DEFAULT_MEMORY_BUDGET_BYTES,
    waitMs = DEFAULT_QUEUE_WAIT_MS,
    held: () => number = () => 0,
  ) {
    if (!Number.isFinite(budget) || budget < SMALL_FLOOR_BYTES + SMALL_REQUEST_BYTES) {
      throw new Error(
        `GUARD_MEMORY_BUDGET_BYTES must be at least ${SMALL_FLOOR_BYTES + SMALL_REQUEST_BYTES}`,
      )
    }
    if (!Number.isFinite(waitMs) || waitMs < 0) {
      throw new Error('GUARD_ADMISSION_WAIT_MS must be a number of milliseconds, 0 or more')
    }
    this.budget = budget
    this.#waitMs = waitMs
    this.#held = held
  }

  /** What requests may reserve now: the budget less what the isolate keeps between requests. */
  get #available(): number {
    // Never below what one large request and the floor need: a long prompt is then served alone.
    return Math.max(this.budget - this.#held(), SMALL_FLOOR_BYTES + SMALL_REQUEST_BYTES)
  }

  /** What a body of `bodyBytes` costs to serve, at most, capped at what large requests may hold. */
  cost(bodyBytes: number): number {
    // A body whose estimate is over the cap (a 14 MB fully escaped prompt is admissible; escapes cost
    // ~4 bytes per byte, not 20) runs alone, so its retryable refusal is a true one.
    const full = REQUEST_BASE_BYTES + BYTES_PER_BODY_BYTE * Math.max(0, bodyBytes)
    return Math.min(full, this.#available - SMALL_FLOOR_BYTES)
  }

  /** What a request with a body of `bodyBytes` holds once the engine has it (never over {@link cost}). */
  heldCost(bodyBytes: number): number {
    const held = REQUEST_BASE_BYTES + HELD_BYTES_PER_BODY_BYTE * Math.max(0, bodyBytes)
    return Math.min(held, this.cost(bodyBytes))
  }

  /**
   * Reserves for `tenant`'s body of `bodyBytes` (0 when unknown yet). A small request is admitted or
   * refused at once; a large one that does not fit now, or would jump other tenants' turns, waits in
   * its tenant's queue up to the ledger's wait (none when it is 0). Rejects with 503 (`Retry-After`)
   * when refused.
   */
  async admit(tenant: string, bodyBytes: number): Promise<Reservation> {
    this.#takeBack()
    const bytes = this.cost(bodyBytes)
    if (bytes <= SMALL_REQUEST_BYTES || (this.#waiting === 0 && this.#fits(bytes, true))) {
      const reservation = this.#reservation(tenant, 0)
      reservation.cover(bodyBytes)
      return reservation
    }
    await this.#wait(tenant, bytes)
    // Granted: its bytes were reserved and its turn taken when its turn came, so nothing arriving
    // since took them.
    return this.#reservation(tenant, bytes)
  }

  /** A reservation of `tenant` already holding `held` bytes (large when over the small size). */
  #reservation(tenant: string, held: number): Reservation {
    const r: Held = { tenant, bytes: held, large: held > SMALL_REQUEST_BYTES, open: true }
    // The most body bytes covered, and this attempt's answer held until its verdict: what is kept
    // once the engine has the prompt.
    let body = 0
    let answer = 0
    const kept = () => this.heldCost(body) + ANSWER_BYTES_PER_HELD_BYTE * answer
    return {
      get bytes() {
        return r.bytes
      },
      cover: (bodyBytes) => {
        body = Math.max(body, bodyBytes)
        const wanted = this.cost(bodyBytes)
        // Growing while another tenant waits would take its turn: a chunked body is no way round.
        const growsLarge = wanted > SMALL_REQUEST_BYTES && wanted > r.bytes
        if (r.open && growsLarge && this.#othersWait(tenant)) throw overBudget()
        this.#grow(r, wanted)
      },
      settle: () => {
        const wanted = Math.min(r.bytes, kept())
        if (!r.open || wanted >= r.bytes) return
        // Still a long prompt in flight for the turns (`large` kept): only its bytes are lowered.
        this.#move(r, wanted, r.large)
        this.#grant()
      },
      resume: () => {
        // A new attempt (the last one's held answer dropped) takes its own memory back, not a new
        // place: waiting tenants keep their turn order, but it must fit.
        answer = 0
        this.#grow(r, this.cost(body))
      },
      hold: (heldBytes) => {
        answer = Math.max(answer, heldBytes)
        this.#grow(r, kept())
      },
      release: () => {
        if (!r.open) return
        r.open = false
        this.reserved -= r.bytes
        if (r.large) {
          this.reservedLarge -= r.bytes
          this.#leave(tenant)
        }
        this.#grant()
      },
    }
  }

  /** Raises `r` to `wanted` bytes when that is more; 503 when it does not fit. */
  #grow(r: Held, wanted: number): void {
    if (!r.open || wanted <= r.bytes) return
    const nowLarge = r.large || wanted > SMALL_REQUEST_BYTES
    if (!this.#fits(wanted - r.bytes, nowLarge)) throw overBudget()
    this.#move(r, wanted, nowLarge)
  }

  /** Moves `r` to `wanted` bytes (up or down), keeping the large tally and turns in step. */
  #move(r: Held, wanted: number, nowLarge: boolean): void {
    if (nowLarge && !r.large) this.#takeTurn(r.tenant)
    this.reserved += wanted - r.bytes
    if (nowLarge) this.reservedLarge += wanted - (r.large ? r.bytes : 0)
    r.bytes = wanted
    r.large = nowLarge
  }

  /** Whether `more` bytes fit, for a request that is (or becomes) large when `large`. */
  #fits(more: number, large: boolean): boolean {
    // The floor: small requests are refused only when large ones hold memory too, and large ones
    // never take the last SMALL_FLOOR_BYTES.
    const available = this.#available
    if (!large) return this.reservedLarge === 0 || this.reserved + more <= available
    return this.reserved + more <= available - SMALL_FLOOR_BYTES
  }

  /** A large request of `tenant` let in: it now has one more in flight, and its turn is spent. */
  #takeTurn(tenant: string): void {
    const turn = this.#turns.get(tenant) ?? { inFlight: 0, last: 0 }
    turn.inFlight++
    turn.last = ++this.#admissions
    this.#turns.set(tenant, turn)
  }

  /** A large request of `tenant` done; a tenant with nothing in flight or waiting is forgotten. */
  #leave(tenant: string): void {
    const turn = this.#turns.get(tenant)
    if (!turn) return
    turn.inFlight--
    if (turn.inFlight <= 0 && !this.#queues.has(tenant)) this.#turns.delete(tenant)
  }

  #othersWait(tenant: string): boolean {
    return this.#waiting > (this.#queues.get(tenant)?.length ?? 0)
  }

  /**
   * Resolves when the request's turn has come and its bytes fit; rejects with 503 otherwise. Only this
   * request's own timer settles the promise (see {@link TURN_POLL_MS}).
   */
  #wait(tenant: string, bytes: number): Promise<void> {
    const queue = this.#queues.get(tenant) ?? []
    if (this.#waitMs === 0 || queue.length >= MAX_WAITING_PER_TENANT) {
      return Promise.reject(overBudget())
    }
    if (this.#waiting >= MAX_WAITING && !this.#displaceFor(queue.length)) {
      return Promise.reject(overBudget())
    }
    const waiter: Waiter = { tenant, bytes, deadline: Date.now() + this.#waitMs }
    if (!this.#queues.has(tenant)) this.#queues.set(tenant, queue)
    queue.push(waiter)
    this.#waiting++
    this.#grant()
    return new Promise<void>((resolve, reject) => {
      const look = () => {
        if (waiter.refused) return reject(overBudget())
        if (waiter.grantedAt !== undefined) {
          this.#granted.delete(waiter)
          return resolve()
        }
        if (Date.now() >= waiter.deadline) {
          this.#remove(waiter)
          reject(overBudget())
          // The next turn may be one that fits.
          return this.#grant()
        }
        setTimeout(look, Math.min(TURN_POLL_MS, Math.max(1, waiter.deadline - Date.now())))
      }
      look()
    })
  }

  /** Refuses the newest waiter of the tenant with the most waiting, if it has more than `fewer`. */
  #displaceFor(fewer: number): boolean {
    let longest: Waiter[] | undefined
    for (const queue of this.#queues.values()) {
      if (!longest || queue.length > longest.length) longest = queue
    }
    const newest = longest?.at(-1)
    if (!longest || !newest || longest.length <= fewer + 1) return false
    this.#remove(newest)
    newest.refused = true
    return true
  }

  /**
   * Takes back what waiters that are gone hold: a turn given and not taken within
   * {@link TURN_LEASE_MS} (its bytes and its place in flight), and a place in a queue kept that long
   * past the wait's end. Run before every decision, so a gone request's bytes go to the next in turn.
   */
  #takeBack(): void {
    const now = Date.now()
    for (const waiter of this.#granted) {
      if (now - waiter.grantedAt! <= TURN_LEASE_MS) continue
      this.#granted.delete(waiter)
      waiter.refused = true
      this.reserved -= waiter.bytes
      this.reservedLarge -= waiter.bytes
      this.#leave(waiter.tenant)
    }
    for (const queue of [...this.#queues.values()]) {
      for (const waiter of queue.filter((w) => now - w.deadline > TURN_LEASE_MS)) {
        this.#remove(waiter)
        waiter.refused = true
      }
    }
  }

  #remove(waiter: Waiter): boolean {
    const queue = this.#queues.get(waiter.tenant)
    const at = queue?.indexOf(waiter) ?? -1
    if (!queue || at < 0) return false
    queue.splice(at, 1)
    this.#waiting--
    if (queue.length === 0) {
      this.#queues.delete(waiter.tenant)
      if (!this.#turns.get(waiter.tenant)?.inFlight) this.#turns.delete(waiter.tenant)
    }
    return true
  }

  /**
   * Hands freed memory to waiting requests, a turn at a time: the waiting tenant with the fewest large
   * requests in flight, then the one let in longest ago (a newcomer first), gets its oldest request in. A turn whose request does not fit yet is kept,
   * never skipped for a smaller one, so a long prompt is not starved by shorter ones.
   */
  #grant(): void {
    this.#takeBack()
    for (;;) {
      const head = this.#nextTurn()
      if (!head || !this.#fits(head.bytes, true)) return
      // Its turn taken before it leaves the queue, so its tenant is not forgotten in between.
      this.#takeTurn(head.tenant)
      this.#remove(head)
      // Reserved now, so no request arriving before the waiter runs can take its bytes.
      this.reserved += head.bytes
      this.reservedLarge += head.bytes
      head.grantedAt = Date.now()
      this.#granted.add(head)
    }
  }

  /**
   * The oldest waiting request of the waiting tenant with the fewest large requests in flight, and of
   * those the one let in longest ago (ties: the first to wait). Fewest in flight first: a tenant whose
   * burst was let in at once while the isolate was free has its turns again only once the others
   * hold as many.
   */
  #nextTurn(): Waiter | undefined {
    let next: Waiter | undefined
    let nextInFlight = Number.POSITIVE_INFINITY
    let nextLast = Number.POSITIVE_INFINITY
    for (const [tenant, queue] of this.#queues) {
      const turn = this.#turns.get(tenant)
      const inFlight = turn?.inFlight ?? 0
      const last = turn?.last ?? 0
      if (inFlight < nextInFlight || (inFlight === nextInFlight && last < nextLast)) {
        next = queue[0]
        nextInFlight = inFlight
        nextLast = last
      }
    }
    return next
  }
}

function overBudget(): GuardError {
  return new GuardError(
    'guard_unavailable',
    'This isolate is serving as many long prompts as its memory allows; retry shortly.',
    { retryAfterSeconds: RETRY_AFTER_SECONDS },
  )
}
