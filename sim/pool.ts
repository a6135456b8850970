/**
 * @module The paged KV pool: one Uint32Array shared by every request, pages never zeroed.
 *
 * This is the memory the incident leaked: pages come from a LIFO free list (hot pages first, like a
 * real allocator), are freed without being cleared, and the prefix cache keeps finished prompts in them.
 */
import { AI_ERROR, SimAiError } from './errors'
import { hashPage } from './random'

/** A slot no request has ever written; decode skips it (fresh GPU memory contributes nothing). */
export const EMPTY_SLOT = 0xffffffff

/**
 * Who last wrote into a page: the request (ordinal), its account and its session affinity. Kept per page so
 * a request that reads stale pages can say whose data it read (a page is credited to its last writer even
 * when that writer covered only part of it).
 */
export interface PageWriter {
  ordinal: number
  account: string
  affinity: string | null
}

/** Occupancy figures for stats. */
export interface PoolStats {
  totalPages: number
  pageSize: number
  /** On the free list (stale content, reusable at once). */
  freePages: number
  /** Held by running requests. */
  usedPages: number
  /** Kept by the prefix cache (including pages a running request also holds). */
  cachedPages: number
  /** Cached and not held: reclaimable by eviction. */
  evictablePages: number
  /** Requests queued for pages. */
  waiting: number
}

/** A prefix-cache hit: pages now held by the caller, and the chain key after the last one. */
export interface PrefixMatch {
  pages: number[]
  keys: number[]
}

interface Waiter {
  count: number
  resolve: (pages: number[]) => void
  reject: (error: Error) => void
  timer: ReturnType<typeof setTimeout> | undefined
}

const CAPACITY = 'Capacity temporarily exceeded, please try again.'

/**
 * A pool of `floor(poolTokens / pageSize)` pages with a LIFO free list, a per-account prefix cache
 * evicted LRU (leaves first), and a FIFO queue of requests waiting for pages.
 *
 * @example
 * const pool = new KvPool(4096, 64)
 * const pages = await pool.acquire(3, 1000)
 * pool.write(pages[0]!, 0, tokens, 0, 64, { ordinal: 0, account: 'a', affinity: null })
 * pool.release(pages, [])
 */
export class KvPool {
  readonly pageSize: number
  readonly totalPages: number
  /** Token ids, page after page; never cleared between requests. */
  readonly data: Uint32Array
  private readonly free: number[] = []
  private readonly refs: Int32Array
  private readonly keyOfPage: Float64Array
  /** Last writer of each page (undefined: never written); one shared object per request, so cheap. */
  private readonly writers: (PageWriter | undefined)[]
  private readonly cache = new Map<number, number>()
  /** Cached pages, least recently used first. */
  private readonly lru = new Map<number, true>()
  private readonly waiters: Waiter[] = []
  private closed = false

  constructor(poolTokens: number, pageSize: number) {
    this.pageSize = pageSize
    this.totalPages = Math.floor(poolTokens / pageSize)
    this.data = new Uint32Array(this.totalPages * pageSize).fill(EMPTY_SLOT)
    this.refs = new Int32Array(this.totalPages)
    this.keyOfPage = new Float64Array(this.totalPages).fill(Number.NaN)
    this.writers = new Array<PageWriter | undefined>(this.totalPages).fill(undefined)
    for (let p = this.totalPages - 1; p >= 0; p--) this.free.push(p)
  }

  /**
   * Longest cached page-aligned prefix of `tokens` under `root` (at most `maxPages` pages). Every hit
   * is compared token by token, so a hash collision can never serve another prompt's pages.
   */
  matchPrefix(root: number, tokens: ArrayLike<number>, maxPages: number): PrefixMatch {
    const ps = this.pageSize
    const pages: number[] = []
    const keys: number[] = []
    let parent = root
    for (let i = 0; i < maxPages; i++) {
      const key = hashPage(parent, tokens, i * ps, (i + 1) * ps)
      const page = this.cache.get(key)
      if (page === undefined || !this.samePage(page, tokens, i * ps)) break
      this.refs[page] = (this.refs[page] ?? 0) + 1
      pages.push(page)
      keys.push(key)
      parent = key
    }
    return { pages, keys }
  }

  /**
   * `count` pages for a new request: free pages first (most recently freed on top), then evicted
   * cache pages; waits FIFO up to `timeoutMs`, then fails with the binding's capacity error.
   */
  acquire(count: number, timeoutMs: number): Promise<number[]> {
    if (count > this.totalPages) return Promise.reject(capacityError())
    if (this.waiters.length === 0) {
      const pages = this.take(count)
      if (pages) return Promise.resolve(pages)
    }
    return new Promise<number[]>((resolve, reject) => {
      const waiter: Waiter = { count, resolve, reject, timer: undefined }
      waiter.timer = setTimeout(() => {
        const at = this.waiters.indexOf(waiter)
        if (at >= 0) this.waiters.splice(at, 1)
        reject(capacityError())
        this.wake()
      }, timeoutMs)
      this.waiters.push(waiter)
    })
  }

  /** Up to `count` pages from the free list only, without waiting (for generated tokens). */
  takeFree(count: number): number[] {
    if (this.waiters.length > 0) return []
    const pages: number[] = []
    while (pages.length < count && this.free.length > 0) pages.push(this.grab(this.free.pop()!))
    return pages
  }

  /** Writes `tokens[from, to)` into `page` starting at slot `slot`, on behalf of `writer`. */
  write(
    page: number,
    slot: number,
    tokens: ArrayLike<number>,
    from: number,
    to: number,
    writer: PageWriter,
  ): void {
    const base = page * this.pageSize + slot
    for (let i = from; i < to; i++) this.data[base + i - from] = tokens[i] ?? EMPTY_SLOT
    if (to > from) this.writers[page] = writer
  }

  /** The request that last wrote into `page`, or undefined if none ever did. */
  writerOf(page: number): PageWriter | undefined {
    return this.writers[page]
  }

  /**
   * Registers fully written pages under their chain keys (`entries` in chain order), then drops the
   * caller's hold on `pages`: cached pages stay cached, the rest go back on the free list uncleared.
   */
  release(pages: readonly number[], entries: readonly { page: number; key: number }[]): void {
    if (this.closed) return
    for (const { page, key } of entries) {
      if (!this.cache.has(key) && Number.isNaN(this.keyOfPage[page] ?? 0)) {
        this.cache.set(key, page)
        this.keyOfPage[page] = key
      }
    }
    // Touch the chain leaf-first so eviction (oldest first) takes leaves before their parents.
    for (let i = entries.length - 1; i >= 0; i--) {
      const page = entries[i]!.page
      if (!Number.isNaN(this.keyOfPage[page] ?? Number.NaN)) {
        this.lru.delete(page)
        this.lru.set(page, true)
      }
    }
    for (const page of pages) {
      const left = (this.refs[page] ?? 1) - 1
      this.refs[page] = left
      if (left === 0 && Number.isNaN(this.keyOfPage[page] ?? Number.NaN)) this.free.push(page)
    }
    this.wake()
  }

  /** Fails every queued request (the engine is being reset) and ignores later releases. */
  close(): void {
    this.closed = true
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer ?? null)
      waiter.reject(capacityError())
    }
  }

  /** Current occupancy. */
  stats(): PoolStats {
    let evictable = 0
    let used = 0
    for (const page of this.lru.keys()) if (this.refs[page] === 0) evictable++
    for (let p = 0; p < this.totalPages; p++) if ((this.refs[p] ?? 0) > 0) used++
    return {
      totalPages: this.totalPages,
      pageSize: this.pageSize,
      freePages: this.free.length,
      usedPages: used,
      cachedPages: this.cache.size,
      evictablePages: evictable,
      waiting: this.waiters.length,
    }
  }

  private samePage(page: number, tokens: ArrayLike<number>, from: number): boolean {
    const base = page * this.pageSize
    for (let i = 0; i < this.pageSize; i++)
      if (this.data[base + i] !== tokens[from + i]) return false
    return true
  }

  private take(count: number): number[] | undefined {
    if (this.free.length < count) {
      let evictable = 0
      for (const page of this.lru.keys()) {
        if (this.refs[page] === 0 && ++evictable + this.free.length >= count) break
      }
      if (this.free.length + evictable < count) return undefined
    }
    const pages: number[] = []
    while (pages.length < count && this.free.length > 0) pages.push(this.grab(this.free.pop()!))
    if (pages.length < count) {
      for (const page of this.lru.keys()) {
        if (this.refs[page] !== 0) continue
        this.evict(page)
        pages.push(this.grab(page))
        if (pages.length === count) break
      }
    }
    return pages
  }

  /** Evicted pages keep their content: the cache forgets them, the memory does not. */
  private evict(page: number): void {
    this.lru.delete(page)
    this.cache.delete(this.keyOfPage[page]!)
    this.keyOfPage[page] = Number.NaN
  }

  private grab(page: number): number {
    this.refs[page] = 1
    return page
  }

  private wake(): void {
    while (this.waiters.length > 0) {
      const head = this.waiters[0]!
      const pages = this.take(head.count)
      if (!pages) return
      this.waiters.shift()
      clearTimeout(head.timer ?? null)
      head.resolve(pages)
    }
  }
}

function capacityError(): SimAiError {
  return new SimAiError(AI_ERROR.capacity, CAPACITY)
}
