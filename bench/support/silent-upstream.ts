/**
 * @module An OpenAI-compatible upstream that holds its answer for a while, as the guard holds a
 * stream for its verdict: with no byte at all (the guard without heartbeat: its headers leave with the
 * first verified byte), with SSE headers and then silence, or with `: held` comments while silent.
 * Every request is counted per case, so a client that resends is seen. And `wrangler dev` running a
 * Worker that streams such an upstream through. Nothing here leaves 127.0.0.1.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { errorBody } from '../../src/core/errors'
import { quarantineError } from '../../src/core/quarantine/withhold'
import { ROOT } from '../lib'

/**
 * What the upstream sends before its answer.
 * - `nothing`: no status, no headers, no byte until the answer (the guard holding without heartbeat).
 * - `headers`: a 200 with SSE headers at once, then no byte until the answer.
 * - `beats`: headers at once, then a `: held` comment every `beatMs` until the answer.
 * - `beats-then-error`: as `beats`, then the guard's quarantine error event instead of an answer (a
 *   stream withheld after a heartbeat made it a 200).
 * - `quarantine-status`: as `nothing`, then the guard's quarantine response (502, `x-should-retry:
 *   false`) instead of an answer: a stream withheld with no heartbeat.
 */
export type SilentMode = 'nothing' | 'headers' | 'beats' | 'beats-then-error' | 'quarantine-status'

/** One case: its own path prefix `/<id>/`, so its requests are counted apart. */
export interface SilentCase {
  id: string
  mode: SilentMode
  silenceMs: number
  /** Between `: held` comments (`beats` modes). */
  beatMs: number
}

/** One request the upstream received for a case, timed from the case's start. */
export interface SeenRequest {
  atMs: number
  /** When the client (or the proxy between) closed it before the answer was sent. */
  closedAtMs?: number
  answered: boolean
  beats: number
}

/** The running upstream. */
export interface SilentUpstream {
  url: string
  /** Registers a case; its clock starts now. */
  add(spec: SilentCase): void
  seen(id: string): SeenRequest[]
  close(): Promise<void>
}

/** The answer's events: one content chunk, the finish, `[DONE]`. */
export const ANSWER_TEXT = 'ok'

const SSE = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }

function answerEvents(): string {
  const base = {
    id: 'chatcmpl-silent',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'silent',
  }
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: ANSWER_TEXT } }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
  ]
  return `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`
}

/** The guard's own error event for a stream withheld after it began (src/worker/openai.ts). */
function quarantineEvent(): string {
  return `data: ${JSON.stringify(errorBody(quarantineError('bench-silent-stream')))}\n\n`
}

/**
 * Starts the upstream on an ephemeral loopback port. Requests: `POST /<case id>/…` (any path under it,
 * so `baseURL: <url>/<id>/v1` serves `/chat/completions`); anything else gets 404.
 *
 * @example
 * const up = await startSilentUpstream()
 * up.add({ id: 'a', mode: 'headers', silenceMs: 30_000, beatMs: 10_000 })
 * // new OpenAI({ baseURL: `${up.url}/a/v1`, apiKey: 'x' })
 */
export async function startSilentUpstream(): Promise<SilentUpstream> {
  const cases = new Map<string, { spec: SilentCase; startedAt: number; seen: SeenRequest[] }>()
  const utf8 = new TextEncoder()
  const server = createServer((req, res) => {
    req.resume()
    const entry = cases.get((req.url ?? '').split('/')[1] ?? '')
    if (entry === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' })
      res.end('no such case')
      return
    }
    const { spec, startedAt } = entry
    const clock = () => Math.round(performance.now() - startedAt)
    const seen: SeenRequest = { atMs: clock(), answered: false, beats: 0 }
    entry.seen.push(seen)
    let beat: ReturnType<typeof setInterval> | undefined
    const finish = setTimeout(() => {
      if (beat !== undefined) clearInterval(beat)
      if (spec.mode === 'quarantine-status') {
        void sendResponse(res, quarantineError('bench-silent-stream').getResponse()).then(() => {
          seen.answered = true
        })
        return
      }
      if (spec.mode === 'nothing') res.writeHead(200, SSE)
      res.end(utf8.encode(spec.mode === 'beats-then-error' ? quarantineEvent() : answerEvents()))
      seen.answered = true
    }, spec.silenceMs)
    res.on('close', () => {
      clearTimeout(finish)
      if (beat !== undefined) clearInterval(beat)
      if (!seen.answered) seen.closedAtMs = clock()
    })
    if (spec.mode === 'nothing' || spec.mode === 'quarantine-status') return
    res.writeHead(200, SSE)
    // Node sends headers with the first body byte unless told: `headers` means headers now.
    res.flushHeaders()
    if (spec.mode === 'headers') return
    beat = setInterval(() => {
      res.write(utf8.encode(': held\n\n'))
      seen.beats++
    }, spec.beatMs)
  })
  // Node's server would drop a request it has not fully received after 300 s: not what is measured.
  server.requestTimeout = 0
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    add(spec) {
      cases.set(spec.id, { spec, startedAt: performance.now(), seen: [] })
    },
    seen: (id) => cases.get(id)?.seen ?? [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** Sends a Web response (status, headers, whole body) on a Node one. */
async function sendResponse(res: ServerResponse, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer())
  res.writeHead(response.status, Object.fromEntries(response.headers))
  res.end(body)
}

/** A Worker that streams its upstream's answer through as it comes: status, content type, body. */
const PROXY_WORKER = `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const body = request.method === 'POST' ? await request.text() : undefined
    const upstream = await fetch(env.UPSTREAM + url.pathname, {
      method: request.method,
      headers: { 'content-type': request.headers.get('content-type') ?? 'application/json' },
      body,
    })
    const headers = new Headers()
    for (const name of ['content-type', 'cache-control']) {
      const value = upstream.headers.get(name)
      if (value !== null) headers.set(name, value)
    }
    return new Response(upstream.body, { status: upstream.status, headers })
  },
}
`

/** A running `wrangler dev`. */
export interface WranglerProxy {
  url: string
  version: string
  stop(): Promise<void>
}

/**
 * Runs the repository's wrangler (`wrangler dev`, local mode) on a proxy Worker in a temporary folder,
 * in a process group of its own (stopped by its id, with the workerd it started). Resolves once the
 * Worker answers.
 *
 * @example
 * const dev = await startWranglerProxy(up.url)
 * await fetch(`${dev.url}/a/v1/chat/completions`, { method: 'POST', body: '{}' })
 * await dev.stop()
 */
export async function startWranglerProxy(upstream: string): Promise<WranglerProxy> {
  const dir = await mkdtemp(join(tmpdir(), 'silent-wrangler-'))
  await writeFile(join(dir, 'worker.js'), PROXY_WORKER)
  await writeFile(
    join(dir, 'wrangler.toml'),
    'name = "silent-proxy"\nmain = "worker.js"\ncompatibility_date = "2026-11-01"\n',
  )
  const [port, inspector] = [await freePort(), await freePort()]
  const wrangler = join(ROOT, 'node_modules', '.bin', 'wrangler')
  const env: Record<string, string | undefined> = {
    ...process.env,
    WRANGLER_REGISTRY_PATH: join(dir, 'registry'),
    WRANGLER_SEND_METRICS: 'false',
    CI: '1',
  }
  const child = spawn(
    wrangler,
    [
      'dev',
      ...['--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector)],
      '--show-interactive-dev-session=false',
      ...['--var', `UPSTREAM:${upstream}`],
    ],
    { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  )
  let log = ''
  const collect = (chunk: Uint8Array) => {
    log = (log + new TextDecoder().decode(chunk)).slice(-20_000)
  }
  child.stdout.on('data', collect)
  child.stderr?.on('data', collect)
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const stop = async () => {
    const pid = child.pid
    if (pid !== undefined && child.exitCode === null) {
      // The group of the process this bench started: wrangler and its workerd, nothing else.
      process.kill(-pid, 'SIGTERM')
      const timer = setTimeout(() => process.kill(-pid, 'SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    }
    await rm(dir, { recursive: true, force: true })
  }
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited:\n${log}`)
    try {
      await (await fetch(`${url}/ready`)).arrayBuffer()
      break
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`wrangler dev did not come up:\n${log}`)
    }
    await new Promise((r) => setTimeout(r, 250))
  }
  const version = (/wrangler (\d+\.\d+\.\d+)/.exec(log) ?? [])[1] ?? 'unknown'
  return { url, version, stop }
}

/** A free loopback port (the OS's pick, released at once). */
async function freePort(): Promise<number> {
  const server = createServer(() => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return typeof address === 'object' && address !== null ? address.port : 0
}
