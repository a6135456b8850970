/**
 * @module The guard Worker in a workerd process whose V8 heap is capped as the
 * platform caps an isolate (`--max-heap-size`, which Miniflare passes to workerd from
 * `MINIFLARE_WORKERD_V8_FLAGS`), with the guard isolate's heap and ArrayBuffer bytes read over the
 * inspector — so a test sees the 128 MB limit a local `wrangler dev` never enforces.
 */

import { join } from 'node:path'
import { build } from 'esbuild'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { defaultTokenizerOnly, WORKER_BUNDLE } from '../../sim/bundle'
import type { SimConfig } from '../../sim/config'
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'

const ROOT = decodeURIComponent(new URL('../..', import.meta.url).pathname)
/** Inside the repository: workerd refuses module paths outside its root. */
const CACHE = join(ROOT, 'node_modules', '.cache', 'workers-ai-guard')

/** The guard isolate's memory at one instant: V8 heap and ArrayBuffer backing stores, bytes. */
export interface IsolateMemory {
  heap: number
  buffers: number
}

/** Calls the guard has made to the simulated engine that have not been answered yet. */
export interface UpstreamCalls {
  /** Calls now. */
  inFlight: number
  /** The most at once since the worker started. */
  most: number
}

/**
 * How the engine admits calls: until `calls` of them are in it together (once), each waits there, its
 * body read, at most `ms` — so how many the guard has in the engine at once is counted whatever the
 * machine's speed, not only while one call happens to outlast the guard's work on the next.
 */
export interface EngineGate {
  calls: number
  ms: number
}

/** A guard Worker in a heap-capped workerd. */
export interface CappedWorker {
  url: string
  /** The engine's side: calls in flight (a non-streamed call is in flight until its answer). */
  upstream: UpstreamCalls
  /** The guard isolate's memory now (after a full GC when `gc` is set), or undefined once it died. */
  memory(gc?: boolean): Promise<IsolateMemory | undefined>
  dispose(): Promise<void>
}

/** Resolves once `gate.calls` calls are in flight together (ever), or after `gate.ms`. */
function gated(upstream: UpstreamCalls, gate: EngineGate | undefined): () => Promise<void> {
  const waiting: (() => void)[] = []
  let open = gate === undefined
  return () => {
    if (open || !gate) return Promise.resolve()
    if (upstream.inFlight >= gate.calls) {
      open = true
      for (const resolve of waiting.splice(0)) resolve()
      return Promise.resolve()
    }
    return new Promise<void>((resolve) => {
      waiting.push(resolve)
      setTimeout(resolve, gate.ms)
    })
  }
}

async function bundle(name: string, entry: string): Promise<string> {
  const outfile = join(CACHE, `heap-capped-${name}.js`)
  await build({
    ...WORKER_BUNDLE,
    entryPoints: [join(ROOT, entry)],
    outfile,
    plugins: [defaultTokenizerOnly('test/support/heap-capped-worker.ts')],
  })
  return outfile
}

/**
 * Starts the guard Worker (`src/worker/index.ts`) with V8's heap capped at `heapMb` per isolate, its
 * `AI` binding a simulator configured with `sim` that runs in this Node process (./http-ai-worker.ts).
 *
 * @example
 * const worker = await startCappedWorker(128, { GUARD_SECRET: secret, TENANT_KEYS: keys }, { mode: 'fixed' })
 */
export async function startCappedWorker(
  heapMb: number,
  bindings: Record<string, string>,
  sim: Partial<SimConfig>,
  gate?: EngineGate,
): Promise<CappedWorker> {
  const [guard, httpAi] = await Promise.all([
    bundle('guard', 'src/worker/index.ts'),
    bundle('http-ai', 'test/support/http-ai-worker.ts'),
  ])
  const engine = simFetchHandler(new SimEngine(sim))
  const upstream: UpstreamCalls = { inFlight: 0, most: 0 }
  const admitted = gated(upstream, gate)
  const simulator = async (request: Request): Promise<Response> => {
    upstream.most = Math.max(upstream.most, ++upstream.inFlight)
    try {
      if (!gate) return await engine(request)
      // Read first, as an engine that has the request has: the guard's copy of it is then sent.
      const body = await request.arrayBuffer()
      await admitted()
      return await engine(
        new Request(request.url, { method: request.method, headers: request.headers, body }),
      )
    } finally {
      upstream.inFlight--
    }
  }
  const previous = process.env.MINIFLARE_WORKERD_V8_FLAGS
  process.env.MINIFLARE_WORKERD_V8_FLAGS = `--max-heap-size=${heapMb}`
  const inspectorPort = 20_000 + Math.floor(Math.random() * 20_000)
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      inspectorPort,
      // The guard logs a verdict line per request; only V8's dying words are printed.
      handleStructuredLogs: ({ message }: { message: string }) => {
        if (/heap limit|out of memory|fatal/i.test(message)) console.error(message.slice(0, 400))
      },
      workers: [
        {
          name: 'guard',
          modules: true,
          scriptPath: guard,
          compatibilityDate: '2026-11-01',
          bindings,
          serviceBindings: { AI: { name: 'http-ai', entrypoint: 'HttpAi' } },
        },
        {
          name: 'http-ai',
          modules: true,
          scriptPath: httpAi,
          compatibilityDate: '2026-11-01',
          serviceBindings: { SIM_HTTP: (request: Request) => simulator(request) },
        },
      ],
    }),
  )
  let url: URL
  try {
    url = await mf.ready
  } finally {
    if (previous === undefined) delete process.env.MINIFLARE_WORKERD_V8_FLAGS
    else process.env.MINIFLARE_WORKERD_V8_FLAGS = previous
  }
  const base = url.href.replace(/\/$/, '')
  // workerd answers a collection request only when the isolate next runs: a request wakes it.
  const wake = async () => void (await (await fetch(`${base}/health`)).arrayBuffer())
  const inspector = await connectInspector(inspectorPort, 'guard', wake)
  return {
    url: base,
    upstream,
    memory: (gc = false) => inspector.memory(gc),
    async dispose() {
      inspector.close()
      await mf.dispose()
    },
  }
}

interface Inspector {
  memory(gc: boolean): Promise<IsolateMemory | undefined>
  close(): void
}

/** How long an inspector call waits for the isolate before a request wakes it. */
const WAKE_MS = 100
/** How long an inspector call may take before it reads as no figure. */
const CALL_LIMIT_MS = 10_000

async function connectInspector(
  port: number,
  worker: string,
  wake: () => Promise<void>,
): Promise<Inspector> {
  const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    id: string
    title?: string
    webSocketDebuggerUrl: string
  }[]
  const target = list.find((t) => t.id.endsWith(worker) || t.title?.includes(worker)) ?? list[0]
  if (!target) throw new Error(`no inspector target for ${worker}`)
  const socket = new WebSocket(target.webSocketDebuggerUrl)
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true })
    socket.addEventListener('error', reject, { once: true })
  })
  let next = 1
  let dead = false
  const pending = new Map<number, (result: unknown) => void>()
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown }
    if (message.id !== undefined) pending.get(message.id)?.(message.result)
    pending.delete(message.id ?? -1)
  })
  socket.addEventListener('close', () => {
    dead = true
    for (const resolve of pending.values()) resolve(undefined)
    pending.clear()
  })
  // workerd handles an inspector message only when the isolate next runs: a call the idle isolate
  // has not answered within WAKE_MS is followed by a request that wakes it, again every WAKE_MS, and
  // one still unanswered after CALL_LIMIT_MS reads as no figure rather than hanging its caller.
  const call = (method: string): Promise<unknown> => {
    if (dead) return Promise.resolve(undefined)
    const id = next++
    return new Promise((resolve) => {
      const waking = setInterval(() => void wake().catch(() => {}), WAKE_MS)
      const limit = setTimeout(() => settle(undefined), CALL_LIMIT_MS)
      const settle = (result: unknown) => {
        clearInterval(waking)
        clearTimeout(limit)
        pending.delete(id)
        resolve(result)
      }
      pending.set(id, settle)
      socket.send(JSON.stringify({ id, method }))
    })
  }
  return {
    async memory(gc) {
      if (gc) await call('HeapProfiler.collectGarbage')
      const usage = (await call('Runtime.getHeapUsage')) as
        | { usedSize: number; backingStorageSize?: number }
        | undefined
      if (!usage) return undefined
      return { heap: usage.usedSize, buffers: usage.backingStorageSize ?? 0 }
    },
    close: () => socket.close(),
  }
}
