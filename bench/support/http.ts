/**
 * @module Loopback HTTP for the bench: a fetch handler served from `node:http`, a timed client that
 * reads every byte, and a fixed-concurrency load generator. Nothing here leaves 127.0.0.1.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

/** A running loopback server. */
export interface Served {
  url: string
  port: number
  close(): Promise<void>
}

/**
 * Serves a Web fetch handler on 127.0.0.1 (an ephemeral port unless `port` is given). Bodies stream
 * both ways with backpressure, so SSE reaches the client event by event.
 *
 * @example
 * const sim = await serve(simFetchHandler(new SimEngine()))
 * await fetch(`${sim.url}/sim/stats`)
 */
export async function serve(
  handler: (request: Request) => Promise<Response> | Response,
  port = 0,
): Promise<Served> {
  const server = createServer((req, res) => {
    respond(handler, req, res).catch((error: unknown) => {
      if (!res.destroyed) {
        res.writeHead(500, { 'content-type': 'text/plain' })
        res.end(String(error))
      }
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const address = server.address()
  const bound = typeof address === 'object' && address !== null ? address.port : port
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

async function respond(
  handler: (request: Request) => Promise<Response> | Response,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Uint8Array[] = []
  for await (const chunk of req) chunks.push(chunk)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value)
    else if (Array.isArray(value)) headers.set(name, value.join(', '))
  }
  const method = req.method ?? 'GET'
  const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, {
    method,
    headers,
    ...(method === 'GET' || method === 'HEAD' ? {} : { body: concat(chunks) }),
  })
  const response = await handler(request)
  const out: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    out[name] = value
  })
  res.writeHead(response.status, out)
  if (!response.body) return res.end()
  const reader = response.body.getReader()
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    if (!res.write(value)) await new Promise<void>((resolve) => res.once('drain', resolve))
  }
  res.end()
}

function concat(chunks: Uint8Array[]): Uint8Array {
  let length = 0
  for (const c of chunks) length += c.length
  const out = new Uint8Array(length)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}

/** One request as a client saw it. */
export interface Timed {
  status: number
  /** From sending to the response headers. */
  headersMs: number
  /** From sending to the first body byte. */
  firstByteMs: number
  /** From sending to the last body byte. */
  totalMs: number
  bytes: number
  /** The body, when asked for. */
  text?: string
}

/**
 * Sends one request and reads its whole body, timing headers, first byte and last byte.
 *
 * @example
 * const t = await timedFetch(`${url}/v1/chat/completions`, { method: 'POST', body })
 */
export async function timedFetch(url: string, init: RequestInit, keepText = false): Promise<Timed> {
  const start = performance.now()
  const res = await fetch(url, init)
  const headersMs = performance.now() - start
  let firstByteMs = headersMs
  let bytes = 0
  const parts: Uint8Array[] = []
  if (res.body) {
    const reader = res.body.getReader()
    let first = true
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      if (first) {
        firstByteMs = performance.now() - start
        first = false
      }
      bytes += value.length
      if (keepText) parts.push(value)
    }
  }
  const totalMs = performance.now() - start
  const timed: Timed = { status: res.status, headersMs, firstByteMs, totalMs, bytes }
  if (keepText) timed.text = new TextDecoder().decode(concat(parts))
  return timed
}

/** What a fixed-concurrency run achieved. */
export interface LoadResult {
  requests: number
  concurrency: number
  wallMs: number
  requestsPerSecond: number
  /** Responses with a status other than 200. */
  errors: number
  latencies: number[]
}

/**
 * Sends `count` requests with at most `concurrency` in flight (each worker starts its next request
 * when its last body has been read) and reports requests per second over the wall time.
 *
 * @example
 * const r = await load(() => timedFetch(url, init), 200, 8)
 */
export async function load(
  send: (i: number) => Promise<Timed>,
  count: number,
  concurrency: number,
): Promise<LoadResult> {
  let next = 0
  let errors = 0
  const latencies: number[] = []
  const start = performance.now()
  const worker = async () => {
    while (next < count) {
      const i = next++
      const t = await send(i)
      if (t.status !== 200) errors++
      latencies.push(t.totalMs)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const wallMs = performance.now() - start
  return {
    requests: count,
    concurrency,
    wallMs,
    requestsPerSecond: (count / wallMs) * 1000,
    errors,
    latencies,
  }
}
