/**
 * @module Shared checks of the reliability suite: OpenAI-style error bodies, captured console output,
 * secret and canary scans — pure Web APIs, so the Node bench can use them too.
 */
import { CANARY_PATTERN } from '../../src'
import { type CanaryKey, inspectCanary } from '../../src/core/canary'

/** An OpenAI-style error body as every surface must send it. */
export interface OpenAiError {
  error: { message: string; type: string; code: string; param: string | null; incident_id?: string }
}

/**
 * Why `body` is not an OpenAI-style error body (`undefined` when it is one): an object `error` with a
 * non-empty string `message`, string `type` and `code`, `param` a string or null.
 *
 * @example
 * expect(errorShapeProblem(await res.text())).toBeUndefined()
 */
export function errorShapeProblem(body: string): string | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return `not JSON: ${body.slice(0, 120)}`
  }
  const error = (parsed as { error?: unknown } | null)?.error
  if (error === null || typeof error !== 'object') return 'no "error" object'
  const e = error as Record<string, unknown>
  if (typeof e.message !== 'string' || e.message === '') return 'no error.message'
  if (typeof e.type !== 'string') return 'no error.type'
  if (typeof e.code !== 'string') return 'no error.code'
  if (e.param !== null && typeof e.param !== 'string')
    return 'error.param is neither string nor null'
  return undefined
}

/**
 * Parses an error body, failing loudly if it is not OpenAI-style.
 *
 * @example
 * const { error } = openAiError(await res.text())
 */
export function openAiError(body: string): OpenAiError {
  const problem = errorShapeProblem(body)
  if (problem) throw new Error(`not an OpenAI-style error body (${problem}): ${body.slice(0, 200)}`)
  return JSON.parse(body) as OpenAiError
}

type ConsoleMethod = 'log' | 'info' | 'warn' | 'error' | 'debug'

/** Console output captured while a test runs; `restore()` puts the real console back. */
export interface Captured {
  lines: string[]
  text(): string
  restore(): void
}

/**
 * Replaces console.log/info/warn/error/debug with recorders (nothing is printed), so a test can scan
 * every line the guard wrote for secrets and canaries.
 *
 * @example
 * const logs = captureConsole()
 * try { await run() } finally { logs.restore() }
 * expect(logs.text()).not.toContain(SECRET)
 */
export function captureConsole(): Captured {
  const lines: string[] = []
  const methods: ConsoleMethod[] = ['log', 'info', 'warn', 'error', 'debug']
  const saved = methods.map((m) => [m, console[m]] as const)
  for (const m of methods) {
    console[m] = (...args: unknown[]) => {
      lines.push(
        args
          .map((a) => (typeof a === 'string' ? a : a instanceof Error ? String(a) : safe(a)))
          .join(' '),
      )
    }
  }
  return {
    lines,
    text: () => lines.join('\n'),
    restore: () => {
      for (const [m, fn] of saved) console[m] = fn
    },
  }
}

function safe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * Which of `secrets` (by name) occur in `text`.
 *
 * @example
 * expect(secretsIn(body, { GUARD_SECRET: env.GUARD_SECRET })).toEqual([])
 */
export function secretsIn(text: string, secrets: Record<string, string>): string[] {
  return Object.entries(secrets)
    .filter(([, value]) => value !== '' && text.includes(value))
    .map(([name]) => name)
}

/**
 * Every canary-shaped token in `text` that verifies under `key` (a real canary of ours): none may ever
 * reach a client, a log or a stored record.
 *
 * @example
 * expect(await liveCanaries(key, body)).toEqual([])
 */
export async function liveCanaries(key: CanaryKey, text: string): Promise<string[]> {
  const live: string[] = []
  for (const [token] of text.matchAll(new RegExp(CANARY_PATTERN.source, 'gi'))) {
    if ((await inspectCanary(key, token)).ours) live.push(token)
  }
  return live
}

/** A canary look-alike: the right shape (`cnry_` + 24 base32 chars), no valid MAC. */
export const FORGED = 'cnry_7k2m9q4r8t1v6w3x5z0a2b4c'
