/**
 * @module What a client receives from a runner (guarded or not), read the way a client would, and a
 * recorder of what the engine itself answered before any guard judged it.
 */
import { GuardError } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { guardInfo } from '../../src/core/guard'
import { MODEL } from './prompts'

/** One request's delivery: status, the raw body the client read, the guard's error if any. */
export interface Delivered {
  status: number
  /** Whole answers: the JSON; streams: every SSE byte received before the end or the error. */
  body: string
  error?: GuardError
  /**
   * A stream that failed after its status with something other than a guard error (a bug, or the raw
   * engine's own failure): its message. The bytes read before it are in `body`.
   */
  failure?: string
  attempts: number
  stream: boolean
}

/**
 * Runs one request and reads everything the client would: every byte of a stream until it ends or
 * errors (bytes released before a mid-stream quarantine count), or the whole answer.
 *
 * @example
 * const d = await deliver(guard.runner(upstream, 'tenant-b'), chat(text, { stream: true }))
 */
export async function deliver(
  runner: AiRunner,
  inputs: Record<string, unknown>,
): Promise<Delivered> {
  const stream = inputs.stream === true
  try {
    const out = await runner.run(MODEL, inputs)
    const attempts = guardInfo(out)?.attempts ?? 1
    if (!(out instanceof ReadableStream)) {
      return { status: 200, body: JSON.stringify(out), attempts, stream }
    }
    let body = ''
    const decoder = new TextDecoder()
    const reader = (out as ReadableStream<Uint8Array>).getReader()
    try {
      while (true) {
        const { done, value } = await reader.read()
        if (done) break
        body += decoder.decode(value, { stream: true })
      }
    } catch (error) {
      // The bytes read before the error stay in the body: a client has already shown them.
      return {
        status: 200,
        body,
        attempts,
        stream,
        ...(error instanceof GuardError ? { error } : { failure: String(error) }),
      }
    }
    return { status: 200, body, attempts, stream }
  } catch (error) {
    if (error instanceof GuardError) {
      return { status: error.status, body: '', error, attempts: 1, stream }
    }
    // The raw engine throws its own errors (AiError 5021 …): the unguarded client gets no answer.
    return { status: 500, body: '', attempts: 1, stream }
  }
}

/**
 * The reasoning and content texts of an SSE body, joined: a marker split across events still shows.
 *
 * @example
 * sseTexts('data: {"choices":[{"delta":{"content":"hi"}}]}\n\n') // 'hi'
 */
export function sseTexts(body: string): string {
  let text = ''
  for (const line of body.split('\n')) {
    if (!line.startsWith('data:')) continue
    const data = line.slice(5).trim()
    if (data === '' || data === '[DONE]') continue
    try {
      const json = JSON.parse(data) as {
        choices?: { delta?: { reasoning_content?: unknown; content?: unknown } }[]
        response?: unknown
      }
      const delta = json.choices?.[0]?.delta
      if (typeof delta?.reasoning_content === 'string') text += delta.reasoning_content
      if (typeof delta?.content === 'string') text += delta.content
      if (typeof json.response === 'string') text += json.response
    } catch {
      // A partial event at a cut: its raw bytes are still searched by the callers.
    }
  }
  return text
}

/** Reasoning, then content, of a whole answer (chat completion or legacy `{ response }`). */
export function wholeTexts(answer: unknown): string {
  if (typeof answer !== 'object' || answer === null) return ''
  const o = answer as {
    choices?: { message?: { reasoning_content?: unknown; content?: unknown } }[]
    response?: unknown
  }
  const message = o.choices?.[0]?.message
  const parts = [message?.reasoning_content, message?.content, o.response]
  return parts.filter((p): p is string => typeof p === 'string').join('\n')
}

/**
 * The texts a client received, as readable text: a whole answer's reasoning and content, a stream's
 * deltas joined — plus the raw body, so a partial event cut by a quarantine is not missed.
 *
 * @example
 * meter.longestRun(receivedTexts(d).join('\n'))
 */
export function receivedTexts(d: Delivered): string[] {
  if (d.body === '') return []
  if (!d.stream) {
    try {
      return [wholeTexts(JSON.parse(d.body))]
    } catch {
      return [d.body]
    }
  }
  return [sseTexts(d.body), d.body]
}

/**
 * Wraps an upstream so that every attempt's full answer text (reasoning, then content) is recorded
 * as the engine produced it, whatever a guard later releases: a stream is teed and its copy read to
 * the end even when the guard cancels its own branch.
 *
 * @example
 * const rec = recordAnswers(engine.binding('gateway'))
 * await deliver(guard.runner(rec.runner, 'tenant-b'), inputs)
 * const answers = await rec.answers()
 */
export function recordAnswers(upstream: AiRunner): {
  runner: AiRunner
  answers: () => Promise<string[]>
} {
  const recorded: Promise<string>[] = []
  const runner: AiRunner = {
    run: async (model, inputs, options) => {
      const out = await upstream.run(model, inputs, options)
      if (!(out instanceof ReadableStream)) {
        recorded.push(Promise.resolve(wholeTexts(out)))
        return out
      }
      const [mine, copy] = (out as ReadableStream<Uint8Array>).tee()
      recorded.push(new Response(copy).text().then(sseTexts, () => ''))
      return mine
    },
  }
  return { runner, answers: () => Promise.all(recorded) }
}

/**
 * The answer text a chat client keeps for its next turn: the content only (reasoning is shown, not
 * sent back), of a whole answer or of a stream's deltas.
 *
 * @example
 * messages.push({ role: 'assistant', content: contentOf(d) })
 */
export function contentOf(d: Delivered): string {
  if (d.body === '') return ''
  if (!d.stream) {
    try {
      const o = JSON.parse(d.body) as { choices?: { message?: { content?: unknown } }[] }
      const content = o.choices?.[0]?.message?.content
      return typeof content === 'string' ? content : ''
    } catch {
      return ''
    }
  }
  let text = ''
  for (const line of d.body.split('\n')) {
    if (!line.startsWith('data:')) continue
    try {
      const json = JSON.parse(line.slice(5).trim()) as {
        choices?: { delta?: { content?: unknown } }[]
      }
      const content = json.choices?.[0]?.delta?.content
      if (typeof content === 'string') text += content
    } catch {
      // [DONE] or a partial event.
    }
  }
  return text
}
