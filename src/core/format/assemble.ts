/**
 * @module A whole answer assembled from a verified stream, in the upstream's own non-stream shape.
 *
 * Why: a whole answer's latency includes its decode, which can hide a missing prefill entirely (a
 * 500-token answer decoded at 50 tokens/s takes 10 s, longer than any honest prefill). So for prompts
 * long enough for timing to judge, the guard asks the upstream for a stream, times its first token,
 * verifies it like any stream, and returns the object the client asked for.
 */

import { GuardError } from '../errors'
import type { Usage } from './frames'
import { parseFrame } from './frames'
import { type SseEvent, sseDecoder } from './sse'

interface ToolCall {
  id?: string
  type?: string
  name?: string
  arguments: string
}

/**
 * Reads a chat-completions or legacy SSE stream to its end and returns the equivalent whole answer:
 * `{ id, object: 'chat.completion', created, model, choices: [{ index, message, finish_reason }], usage }`
 * or `{ response, tool_calls?, usage? }`. An error of the stream (a quarantine) rejects.
 *
 * @example
 * const answer = await assembleAnswer(guardedStream)
 */
export async function assembleAnswer(stream: ReadableStream<Uint8Array>): Promise<unknown> {
  let head: Record<string, unknown> | undefined
  let format: 'chat' | 'legacy' | undefined
  let reasoning: string | undefined
  let content: string | undefined
  let finishReason: string | null = null
  let usage: Usage | undefined
  const tools = new Map<number, ToolCall>()
  const extra: Record<string, string> = {}
  const sink = new WritableStream<SseEvent>({
    write(event) {
      const frame = parseFrame(event)
      if (frame.done) return
      if (frame.usage) usage = frame.usage
      if (!frame.format) return
      format ??= frame.format
      head ??= frame.json
      if (frame.texts.reasoning !== undefined) reasoning = (reasoning ?? '') + frame.texts.reasoning
      if (frame.texts.content !== undefined) content = (content ?? '') + frame.texts.content
      if (frame.finishReason) finishReason = frame.finishReason
      for (const [channel, text] of Object.entries(frame.texts)) {
        // Other delta fields (vLLM's `reasoning`, `refusal`) continue across chunks like content.
        const name = /^field:choices\/0\/delta\/([^/]+)$/.exec(channel)?.[1]
        if (name && text !== undefined) extra[name] = (extra[name] ?? '') + text
      }
      readToolCalls(frame.json, frame.format, tools)
    },
  })
  await stream.pipeThrough(sseDecoder()).pipeTo(sink)
  if (!format || !head) throw new GuardError('upstream_error', 'The upstream stream had no answer.')
  const calls = [...tools.entries()].sort(([a], [b]) => a - b).map(([, call]) => call)
  if (format === 'legacy') {
    return {
      response: content ?? '',
      ...(calls.length > 0
        ? { tool_calls: calls.map((c) => ({ name: c.name, arguments: c.arguments })) }
        : {}),
      ...(usage ? { usage } : {}),
    }
  }
  const message: Record<string, unknown> = { role: 'assistant', content: content ?? null, ...extra }
  if (reasoning !== undefined) message.reasoning_content = reasoning
  if (calls.length > 0) {
    message.tool_calls = calls.map((c, index) => ({
      id: c.id ?? `call_${index}`,
      type: c.type ?? 'function',
      function: { name: c.name, arguments: c.arguments },
    }))
  }
  return {
    id: head.id,
    object: 'chat.completion',
    created: head.created,
    model: head.model,
    choices: [{ index: 0, message, finish_reason: finishReason }],
    ...(usage ? { usage } : {}),
  }
}

/** Tool-call pieces of one chunk: ids and names arrive once, arguments in fragments. */
function readToolCalls(
  json: Record<string, unknown> | undefined,
  format: 'chat' | 'legacy',
  tools: Map<number, ToolCall>,
): void {
  const source =
    format === 'chat'
      ? ((json?.choices as { delta?: { tool_calls?: unknown } }[] | undefined)?.[0]?.delta
          ?.tool_calls ?? undefined)
      : json?.tool_calls
  if (!Array.isArray(source)) return
  source.forEach((raw, position) => {
    if (raw === null || typeof raw !== 'object') return
    const call = raw as Record<string, unknown>
    const index = typeof call.index === 'number' ? call.index : position
    const fn = (call.function ?? call) as Record<string, unknown>
    const entry = tools.get(index) ?? { arguments: '' }
    if (typeof call.id === 'string') entry.id = call.id
    if (typeof call.type === 'string') entry.type = call.type
    if (typeof fn.name === 'string') entry.name = fn.name
    const args = fn.arguments
    if (typeof args === 'string') entry.arguments += args
    else if (args !== undefined && args !== null) entry.arguments += JSON.stringify(args)
    tools.set(index, entry)
  })
}
