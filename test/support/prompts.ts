/**
 * @module Deterministic prompts of a given size, each tenant's text recognisable in any answer.
 */
import { GuardError } from '../../src/errors'

/** About 12 tokens (o200k and cl100k alike) per line. */
const LINE = (tenant: string, i: number) =>
  `${tenant} ledger entry ${i}: the quarterly figure stays private to ${tenant}.\n`

/**
 * A document of roughly `tokens` tokens whose every line names `tenant`, so a leaked fragment of it is
 * attributable by content alone.
 *
 * @example
 * document('SECRET-A', 300_000)
 */
export function document(tenant: string, tokens: number): string {
  const lines: string[] = []
  const perLine = 16
  for (let i = 0; i < Math.ceil(tokens / perLine); i++) lines.push(LINE(tenant, i))
  return lines.join('')
}

/** A one-message chat request. */
export function chat(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messages: [{ role: 'user', content: text }], ...extra }
}

/** Counts calls to an upstream. */
export function counted<T extends { run: (...args: never[]) => Promise<unknown> }>(
  upstream: T,
): T & { calls: number } {
  const wrapper = {
    calls: 0,
    run: (...args: Parameters<T['run']>) => {
      wrapper.calls++
      return upstream.run(...args)
    },
  }
  return wrapper as unknown as T & { calls: number }
}

/** The whole body of a stream as text. */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text()
}

/** The concatenated texts (reasoning + content) of an SSE body, for content assertions. */
export function sseText(body: string): { reasoning: string; content: string; events: unknown[] } {
  let reasoning = ''
  let content = ''
  const events: unknown[] = []
  for (const block of body.split('\n\n')) {
    const data = block
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n')
    if (!data || data === '[DONE]') continue
    let json: Record<string, unknown>
    try {
      json = JSON.parse(data) as Record<string, unknown>
    } catch {
      continue
    }
    events.push(json)
    const choices = json.choices as { delta?: Record<string, unknown> }[] | undefined
    const delta = choices?.[0]?.delta
    if (typeof delta?.reasoning_content === 'string') reasoning += delta.reasoning_content
    if (typeof delta?.content === 'string') content += delta.content
    if (typeof json.response === 'string') content += json.response
  }
  return { reasoning, content, events }
}

/** The GuardError a call rejects with (fails the test if it resolves or throws something else). */
export async function rejection(promise: Promise<unknown>): Promise<GuardError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof GuardError) return error
    throw error
  }
  throw new Error('expected the call to be refused, but it resolved')
}
