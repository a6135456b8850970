/**
 * @module Benchmark: what clients and `wrangler dev` do with a long silent stream — the
 * guard holding a streamed answer for its verdict. A local upstream (bench/support/silent-upstream.ts)
 * holds a chat completion for S seconds with no byte at all (the guard without heartbeat), with SSE
 * headers then silence, or with `: held` comments every 10 s; the `openai` client and the AI SDK
 * (`streamText` over `@ai-sdk/openai-compatible`) read it with their default options, and a plain
 * `node:http` client (no timeout of its own) reads it through a Worker under the repository's
 * `wrangler dev`. Per case: answered, or which error after how long, and how many requests the
 * upstream received (a client that resends is seen). Every case runs at once: the full run takes
 * about the longest silence plus its margin (~6.5 min).
 */
import { readFile } from 'node:fs/promises'
import { request } from 'node:http'
import { join } from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { streamText } from 'ai'
import OpenAI from 'openai'
import { machineInfo, ROOT, reproduce, type Suite, type SuiteOptions, writeResult } from '../lib'
import {
  ANSWER_TEXT,
  type SeenRequest,
  type SilentMode,
  startSilentUpstream,
  startWranglerProxy,
} from '../support/silent-upstream'

type Client = 'openai' | 'ai-sdk' | 'wrangler-dev'

/** How one case ended, as the client saw it. */
interface Outcome {
  result: 'answered' | 'error' | 'capped'
  /** From the client's request to its answer, its error or the bench's cap. */
  seconds: number
  /** The error, with the codes of its causes (e.g. `UND_ERR_HEADERS_TIMEOUT`). */
  error?: string
  /** `wrangler-dev` only: the status the proxy answered with. */
  status?: number
}

interface Row extends Outcome {
  client: Client
  mode: SilentMode
  silenceS: number
  beatS: number | null
  requests: number
  /** When each request reached the upstream, and when it was closed unanswered (s from the start). */
  seen: Array<{ atS: number; closedAtS: number | null; beats: number }>
}

/** Cases: every client, mode and silence; the error event after beats once per client. */
function plan(quick: boolean): Array<{ mode: SilentMode; silenceS: number }> {
  const silences = quick ? [2, 5] : [30, 90, 150, 330]
  const modes: SilentMode[] = ['nothing', 'headers', 'beats']
  return [
    ...modes.flatMap((mode) => silences.map((silenceS) => ({ mode, silenceS }))),
    { mode: 'beats-then-error', silenceS: silences[0] ?? 2 },
    // Short: what counts is how often a client resends a 502, each resend held again.
    { mode: 'quarantine-status', silenceS: quick ? 1 : 5 },
  ]
}

const CLIENTS: Client[] = ['openai', 'ai-sdk', 'wrangler-dev']

async function run({ quick }: SuiteOptions): Promise<void> {
  const started = performance.now()
  const beatS = quick ? 1 : 10
  /** Past the silence: time for an answer, or for a resent request to show. */
  const marginS = quick ? 10 : 45
  const upstream = await startSilentUpstream()
  const dev = await startWranglerProxy(upstream.url)
  const versions = {
    node: process.version as string,
    openai: await versionOf('openai'),
    ai: await versionOf('ai'),
    '@ai-sdk/openai-compatible': await versionOf('@ai-sdk/openai-compatible'),
    wrangler: await versionOf('wrangler'),
  }
  const longest = Math.max(...plan(quick).map((c) => c.silenceS))
  console.log(`  ${JSON.stringify(versions)}; cases run at once, up to ${longest} s + ${marginS} s`)
  try {
    const cases = CLIENTS.flatMap((client) =>
      plan(quick).map(({ mode, silenceS }) => ({ client, mode, silenceS })),
    )
    const rows = await Promise.all(
      cases.map(async ({ client, mode, silenceS }): Promise<Row> => {
        const id = `${client}-${mode}-${silenceS}`
        upstream.add({ id, mode, silenceMs: silenceS * 1000, beatMs: beatS * 1000 })
        const base = `${client === 'wrangler-dev' ? dev.url : upstream.url}/${id}/v1`
        const outcome = await READERS[client](base, (silenceS + marginS) * 1000)
        // A capped request's close reaches the upstream a moment after the client let go.
        if (outcome.result === 'capped') await new Promise((r) => setTimeout(r, 1_000))
        const seen = upstream.seen(id)
        return {
          client,
          mode,
          silenceS,
          beatS: mode.startsWith('beats') ? beatS : null,
          ...outcome,
          requests: seen.length,
          seen: seen.map(toSeconds),
        }
      }),
    )
    console.log(table(rows))
    const path = await writeResult(quick ? 'silent-stream-quick' : 'silent-stream', {
      machine: machineInfo(),
      versions,
      beatS,
      marginS,
      rows,
      reproduce: reproduce('silent-stream', quick, started),
    })
    console.log(`  → ${path}`)
  } finally {
    await dev.stop()
    await upstream.close()
  }
}

function toSeconds(seen: SeenRequest): Row['seen'][number] {
  return {
    atS: round(seen.atMs / 1000),
    closedAtS: seen.closedAtMs === undefined ? null : round(seen.closedAtMs / 1000),
    beats: seen.beats,
  }
}

/** Reads one streamed chat completion from `base`, aborted by the bench after `capMs`. */
type Reader = (base: string, capMs: number) => Promise<Outcome>

const READERS: Record<Client, Reader> = {
  /** `openai`, default options (its 10-minute timeout, 2 retries); the cap is the bench's signal. */
  async openai(base, capMs) {
    const start = performance.now()
    const cap = AbortSignal.timeout(capMs)
    try {
      const client = new OpenAI({ apiKey: 'silent', baseURL: base })
      const stream = await client.chat.completions.create(
        { model: 'silent', messages: [{ role: 'user', content: 'hi' }], stream: true },
        { signal: cap },
      )
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ''
      return ended(start, text)
    } catch (error) {
      return failed(start, error, cap)
    }
  },

  /** AI SDK `streamText`, default options (2 retries); errors arrive as stream parts. */
  async 'ai-sdk'(base, capMs) {
    const start = performance.now()
    const cap = AbortSignal.timeout(capMs)
    try {
      const provider = createOpenAICompatible({ name: 'silent', baseURL: base, apiKey: 'silent' })
      const result = streamText({
        model: provider.chatModel('silent'),
        prompt: 'hi',
        abortSignal: cap,
        // Its default logs the error to the console; the row records it instead.
        onError: () => {},
      })
      let text = ''
      let error: unknown
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') text += part.text
        else if (part.type === 'error') error = part.error
        else if (part.type === 'abort') error = cap.reason
      }
      return error === undefined ? ended(start, text) : failed(start, error, cap)
    } catch (error) {
      return failed(start, error, cap)
    }
  },

  /** `node:http`, which has no timeout of its own: what is measured is `wrangler dev`'s. */
  'wrangler-dev'(base, capMs) {
    const start = performance.now()
    return new Promise<Outcome>((resolve) => {
      let status: number | undefined
      let body = ''
      let capped = false
      const req = request(
        `${base}/chat/completions`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          status = res.statusCode
          const decoder = new TextDecoder()
          res.on('data', (chunk) => {
            body += decoder.decode(chunk, { stream: true })
          })
          res.on('end', () => {
            clearTimeout(timer)
            const text = textOf(body)
            const outcome = capped
              ? { result: 'capped' as const, seconds: since(start) }
              : status === 200 && text === ANSWER_TEXT
                ? ended(start, text)
                : {
                    result: 'error' as const,
                    seconds: since(start),
                    error: `status ${status}: ${errorOf(body) ?? (body.slice(0, 120) || 'empty body')}`,
                  }
            resolve({ ...outcome, ...(status === undefined ? {} : { status }) })
          })
          res.on('error', (error) => {
            clearTimeout(timer)
            resolve({ ...failed(start, error, undefined, capped), ...(status ? { status } : {}) })
          })
        },
      )
      req.on('error', (error) => {
        clearTimeout(timer)
        resolve({ ...failed(start, error, undefined, capped), ...(status ? { status } : {}) })
      })
      const timer = setTimeout(() => {
        capped = true
        req.destroy(new Error('capped by the bench'))
      }, capMs)
      req.end(
        JSON.stringify({
          model: 'silent',
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
        }),
      )
    })
  },
}

/** A stream that ended: answered if it carried the answer, else an error naming what came. */
function ended(start: number, text: string): Outcome {
  return text === ANSWER_TEXT
    ? { result: 'answered', seconds: since(start) }
    : { result: 'error', seconds: since(start), error: `ended with ${JSON.stringify(text)}` }
}

function failed(start: number, error: unknown, cap?: AbortSignal, capped = false): Outcome {
  if (capped || cap?.aborted) return { result: 'capped', seconds: since(start) }
  return { result: 'error', seconds: since(start), error: describe(error) }
}

/** `Name: message` and the names or codes of its causes, outermost first. */
function describe(error: unknown): string {
  const parts: string[] = []
  let at: unknown = error
  for (let depth = 0; depth < 4 && at !== undefined && at !== null; depth++) {
    if (typeof at !== 'object') {
      parts.push(String(at))
      break
    }
    const e = at as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown }
    const code = typeof e.code === 'string' ? ` [${e.code}]` : ''
    const message = typeof e.message === 'string' ? e.message.slice(0, 160) : ''
    parts.push(`${String(e.name ?? 'Error')}${code}: ${message}`)
    at = e.cause
  }
  return parts.join(' ← ')
}

/** The content of the chat chunks in an SSE body. */
function textOf(body: string): string {
  let text = ''
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: {')) continue
    const event = JSON.parse(line.slice(6)) as {
      choices?: Array<{ delta?: { content?: string } }>
    }
    text += event.choices?.[0]?.delta?.content ?? ''
  }
  return text
}

/** The message of an OpenAI-style error event or body, if the body carries one. */
function errorOf(body: string): string | undefined {
  const match = /"error":\{"message":"([^"]{0,120})/.exec(body)
  return match?.[1]
}

function since(start: number): number {
  return round((performance.now() - start) / 1000)
}

function round(seconds: number): number {
  return Math.round(seconds * 10) / 10
}

async function versionOf(name: string): Promise<string> {
  const json = await readFile(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')
  return (JSON.parse(json) as { version: string }).version
}

/** One line per case: client, mode, silence, what happened, requests the upstream received. */
function table(rows: readonly Row[]): string {
  const lines = [
    '| client | mode | silence | result | after | requests (sent → closed unanswered) | error |',
    '|---|---|---:|---|---:|---|---|',
  ]
  for (const r of rows) {
    const seen = r.seen
      .map((q) => `${q.atS} s${q.closedAtS === null ? '' : ` → ${q.closedAtS} s`}`)
      .join('; ')
    lines.push(
      `| ${r.client} | ${r.mode} | ${r.silenceS} s | ${r.result} | ${r.seconds} s | ${r.requests}: ${seen} | ${r.error?.slice(0, 140) ?? ''} |`,
    )
  }
  return lines.join('\n')
}

const suite: Suite = { name: 'silent-stream', run }
export default suite
