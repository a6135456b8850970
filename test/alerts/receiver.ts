/**
 * @module A webhook receiver for the Node tests: a `node:http` server on 127.0.0.1 that records each
 * request and answers it as the test says — at once with a status, or held open until the test
 * releases it. Node only (workerd never loads it: the file is no test of its own).
 */

/** One request as received. */
export interface Received {
  path: string
  headers: Record<string, string>
  body: string
  /** Whether the request is still open: not answered, and its connection not closed by the sender. */
  open(): boolean
  /** Answers a held request. */
  respond(status: number, headers?: Record<string, string>): void
}

/** What to do with a request: a status now, or `hold` (the test calls `respond` later). */
export type Policy = (request: Received, index: number) => number | 'hold'

/** A running receiver. */
export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  base: string
  requests: Received[]
  /** Resolves with the `n`th request on `path` (counting from 1), once it has arrived whole. */
  arrival(path: string, n?: number): Promise<Received>
  close(): Promise<void>
}

interface NodeRequest {
  url?: string
  headers: Record<string, string | string[] | undefined>
  on(event: 'data', listener: (chunk: { toString(): string }) => void): void
  on(event: 'end', listener: () => void): void
}
interface NodeResponse {
  writableEnded: boolean
  writeHead(status: number, headers?: Record<string, string>): void
  end(body?: string): void
  on(event: 'close', listener: () => void): void
}
interface NodeServer {
  listen(port: number, host: string, listener: () => void): void
  address(): { port: number } | string | null
  close(listener: () => void): void
  closeAllConnections(): void
}
type Http = { createServer(handler: (req: NodeRequest, res: NodeResponse) => void): NodeServer }

/**
 * Starts a receiver answering per `policy` (default 200 to everything).
 *
 * @example
 * const rx = await startReceiver((_, i) => (i < 2 ? 500 : 200))
 */
export async function startReceiver(policy: Policy = () => 200): Promise<Receiver> {
  const http = (await import(/* @vite-ignore */ `node:${'http'}`)) as Http
  const requests: Received[] = []
  const waiters: { path: string; n: number; done: (r: Received) => void }[] = []
  const settle = () => {
    for (const w of [...waiters]) {
      const hit = requests.filter((r) => r.path === w.path)[w.n - 1]
      if (hit) {
        waiters.splice(waiters.indexOf(w), 1)
        w.done(hit)
      }
    }
  }
  const server = http.createServer((req, res) => {
    let body = ''
    let closed = false
    res.on('close', () => {
      closed = true
    })
    req.on('data', (chunk) => {
      body += chunk.toString()
    })
    req.on('end', () => {
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v
      const received: Received = {
        path: req.url ?? '/',
        headers,
        body,
        open: () => !closed && !res.writableEnded,
        respond: (status, extra = {}) => {
          if (res.writableEnded || closed) return
          res.writeHead(status, { 'content-type': 'text/plain', ...extra })
          res.end(status < 300 ? 'ok' : 'no')
        },
      }
      const index = requests.filter((r) => r.path === received.path).length
      requests.push(received)
      const decision = policy(received, index)
      if (decision !== 'hold') received.respond(decision)
      settle()
    })
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    arrival: (path, n = 1) =>
      new Promise((done) => {
        waiters.push({ path, n, done })
        settle()
      }),
    close: () =>
      new Promise((done) => {
        server.closeAllConnections()
        server.close(() => done())
      }),
  }
}
