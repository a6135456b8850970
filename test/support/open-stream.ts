/**
 * @module A streaming upstream the test writes event by event and may leave open, and a reader that
 * stops once the client has received what it waits for: for what a stream releases before it ends.
 */
import type { AiRunner } from '../../src/core/call/upstream'
import { directiveCanary, sseText } from './prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const utf8 = new TextEncoder()

/** One chat-format SSE event carrying `delta`. */
export function chatChunk(delta: Record<string, unknown>): string {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`
}

/** An upstream whose stream stays open until `close`; `send` adds events to it meanwhile. */
export interface OpenStream extends AiRunner {
  send(events: string[]): void
  /** Sends the given last events, then ends the stream. */
  close(last?: string[]): void
}

/**
 * `events(own)` are sent at once, `own` being the directive's canary (the prompt's last `cnry_`
 * token: its first is the tenant's prefix marker).
 *
 * @example
 * const upstream = openStream((own) => [chatChunk({ content: `${own}\n` })])
 */
export function openStream(
  events: (own: string, inputs: Record<string, unknown>) => string[],
): OpenStream {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined
  const send = (list: string[]) => {
    for (const event of list) controller?.enqueue(utf8.encode(event))
  }
  return {
    send,
    close: (last = []) => {
      send(last)
      controller?.close()
    },
    run: async (_model, inputs) => {
      const own = directiveCanary(inputs)
      return new ReadableStream<Uint8Array>({
        start(c) {
          controller = c
          send(events(own, inputs))
        },
      })
    },
  }
}

/**
 * Reads the client's stream until `done` holds for what it received so far (or the stream ends);
 * returns the raw SSE text.
 *
 * @example
 * const got = await readUntil(reader, (seen) => seen.content.includes('w38 '))
 */
export async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  done: (seen: { reasoning: string; content: string }) => boolean,
): Promise<string> {
  let got = ''
  const decoder = new TextDecoder()
  while (!done(sseText(got))) {
    const next = await reader.read()
    if (next.done) break
    got += decoder.decode(next.value, { stream: true })
  }
  return got
}

/**
 * Reads the client's stream to its end: the reasoning and content text it received, and the error
 * that ended it, if one did. `first` is a read already begun on `reader`.
 *
 * @example
 * const { text, error } = await drainText(out.getReader())
 */
export async function drainText(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: Promise<ReadableStreamReadResult<Uint8Array>> = reader.read(),
): Promise<{ text: string; error?: unknown }> {
  let raw = ''
  const decoder = new TextDecoder()
  const received = () => {
    const { reasoning, content } = sseText(raw)
    return reasoning + content
  }
  try {
    for (let next = await first; !next.done; next = await reader.read()) {
      raw += decoder.decode(next.value, { stream: true })
    }
  } catch (error) {
    return { text: received(), error }
  }
  return { text: received() }
}
