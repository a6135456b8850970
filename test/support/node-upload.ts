/**
 * @module A Node HTTP client that uploads as real clients do (its own connection, the body written as
 * the socket drains, still writing when an early answer comes) and records what it got, even an error
 * after an answer; and the sampled peak of a heap-capped guard isolate's memory while work runs. For
 * the slow tests that flood one workerd isolate with maximal prompts.
 */
import type { CappedWorker } from './heap-capped-worker'

/** The Node APIs used here (the project has no @types/node: its runtime code is Web-only). */
interface NodeResponse {
  statusCode?: number
  headers: Record<string, string | string[] | undefined>
  setEncoding(encoding: 'utf8'): void
  on(event: 'data', listener: (data: string) => void): void
  on(event: 'end' | 'error' | 'aborted', listener: (error?: Error) => void): void
}
interface NodeRequest {
  write(data: Uint8Array): boolean
  end(): void
  once(event: 'drain', listener: () => void): void
  on(event: 'error', listener: (error: Error & { code?: string }) => void): void
  on(event: 'response', listener: (response: NodeResponse) => void): void
}
const { request: httpRequest } = (await import('node:http' as string)) as {
  request(options: {
    method: string
    hostname: string
    port: number
    path: string
    headers: Record<string, string>
    agent: false
  }): NodeRequest
}

/** What one try got: an HTTP answer, or the client's error when none came. */
export interface Try {
  status: number
  retryAfter: number | undefined
  text: string
  /** Body bytes the client had written when the answer's head arrived. */
  sentAtAnswer: number
  /** The client's error (EPIPE, ECONNRESET…), even after an answer. */
  error: string | undefined
  /** ms from the request's start to its answer's head (-1: none came). */
  headMs: number
}

/**
 * One POST over its own connection, the body written 64 KiB at a time as the socket drains (or one
 * chunk every `chunkEveryMs`) — as an HTTP client uploads it, still writing when an early answer comes.
 */
export function post(url: string, key: string, body: Uint8Array, chunkEveryMs = 0): Promise<Try> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    let sent = 0
    const result: Try = {
      status: 0,
      retryAfter: undefined,
      text: '',
      sentAtAnswer: -1,
      error: undefined,
      headMs: -1,
    }
    const began = performance.now()
    let settled = false
    const settle = () => {
      if (settled) return
      settled = true
      resolve(result)
    }
    const req = httpRequest({
      method: 'POST',
      hostname,
      port: Number(port),
      path: '/v1/chat/completions',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': String(body.byteLength),
      },
      agent: false,
    })
    req.on('error', (error) => {
      result.error = error.code ?? error.message
      // An error after a whole answer is still reported; one without an answer ends the try.
      setTimeout(settle, 50)
    })
    req.on('response', (res) => {
      result.status = res.statusCode ?? 0
      result.sentAtAnswer = sent
      result.headMs = Math.round(performance.now() - began)
      const retry = Number(res.headers['retry-after'])
      result.retryAfter = Number.isFinite(retry) ? retry : undefined
      res.setEncoding('utf8')
      res.on('data', (d) => {
        result.text += d
      })
      res.on('error', (error) => {
        result.error ??= error?.message ?? 'response error'
      })
      res.on('aborted', () => {
        result.error ??= 'aborted'
      })
      // A moment after the end, so a write error the answer raced is seen too.
      res.on('end', () => setTimeout(settle, 20))
    })
    const write = () => {
      while (sent < body.byteLength) {
        const chunk = body.subarray(sent, sent + 64 * 1024)
        sent += chunk.byteLength
        const flushed = req.write(chunk)
        if (chunkEveryMs > 0) return void setTimeout(write, chunkEveryMs)
        if (!flushed) return void req.once('drain', write)
      }
      req.end()
    }
    write()
  })
}

/**
 * Sampled peak of the guard isolate's heap + ArrayBuffers while `work` runs, every `sampleMs`. The
 * isolate's memory can be sampled only between its tasks: a lower bound.
 */
export async function peakDuring<T>(
  worker: CappedWorker,
  work: Promise<T>,
  sampleMs = 20,
): Promise<[T, number]> {
  let peak = 0
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      const now = await worker.memory()
      if (!now) break
      peak = Math.max(peak, now.heap + now.buffers)
      await new Promise((r) => setTimeout(r, sampleMs))
    }
  })()
  const result = await work
  sampling = false
  await sampler
  return [result, peak]
}

/** Every try of every client: answered with an HTTP status, never a client error; 503s told when. */
