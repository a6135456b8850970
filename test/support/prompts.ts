/**
 * @module Deterministic prompts of a given size, each tenant's text recognisable in any answer.
 */
import { GuardError } from '../../src/core/errors'

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

/**
 * The canary the guard asked a request to echo, read from the inputs it sent upstream: the last
 * `cnry_` token of the prompt (the first is the tenant's prefix marker).
 *
 * @example
 * run: async (_model, inputs) => answerEchoing(directiveCanary(inputs))
 */
export function directiveCanary(inputs: Record<string, unknown>): string {
  const match = [...JSON.stringify(inputs).matchAll(/cnry_[0-9a-z]{24}/g)].at(-1)
  if (!match) throw new Error('no canary was injected')
  return match[0]
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

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have ' +
  'an had they you were their one all we can her has there been if more when will would who so no ' +
  'report figure quarter plan team market customer review budget growth office product service ' +
  'meeting month year result summary question answer policy people system program project between'
).split(' ')

/**
 * Ordinary English prose of about `tokens` o200k tokens (common words, sentences, paragraphs): text
 * every tokenizer of the generation splits alike, for "English keeps its usable context" checks.
 *
 * @example
 * english(50_000)
 */
export function english(tokens: number, seed = 1): string {
  let x = seed * 7_919 + 13
  const next = (n: number) => {
    x = (x * 48_271) % 2_147_483_647
    return x % n
  }
  const sentences: string[] = []
  let count = 0
  while (count < tokens) {
    const length = 8 + next(12)
    const words: string[] = []
    for (let i = 0; i < length; i++) words.push(WORDS[next(WORDS.length)]!)
    words[0] = words[0]!.charAt(0).toUpperCase() + words[0]!.slice(1)
    sentences.push(`${words.join(' ')}.${next(6) === 0 ? '\n\n' : ' '}`)
    count += length + 1
  }
  return sentences.join('')
}
