/**
 * @module The simulated model's chat template: messages, legacy prompt and tools rendered to one text.
 */

/** What the template accepts (the Workers AI chat input shape); unknown fields are ignored. */
export interface SimChatInputs {
  messages?: unknown
  prompt?: unknown
  tools?: unknown
  [key: string]: unknown
}

/** An input the binding refuses (Workers AI answers these with error 5006). */
export class TemplateError extends Error {}

/**
 * Renders the request as the text the model's KV cache will hold:
 * `<|system|>\n…\n<|user|>\n…\n<|assistant|>\n`, tools as JSON in a system block.
 *
 * @example
 * renderPrompt({ messages: [{ role: 'user', content: 'hi' }] }) // '<|user|>\nhi\n<|assistant|>\n'
 */
export function renderPrompt(inputs: SimChatInputs): string {
  const parts: string[] = []
  if (inputs.tools !== undefined) {
    if (!Array.isArray(inputs.tools)) throw new TemplateError('tools must be an array')
    parts.push(`<|system|>\nYou can call these tools (JSON):\n${JSON.stringify(inputs.tools)}\n`)
  }
  if (inputs.messages !== undefined) {
    if (!Array.isArray(inputs.messages) || inputs.messages.length === 0) {
      throw new TemplateError('messages must be a non-empty array')
    }
    for (const message of inputs.messages) parts.push(renderMessage(message))
  } else if (typeof inputs.prompt === 'string') {
    parts.push(`<|user|>\n${inputs.prompt}\n`)
  } else {
    throw new TemplateError('Type mismatch: one of messages or prompt is required')
  }
  parts.push('<|assistant|>\n')
  return parts.join('')
}

function renderMessage(message: unknown): string {
  if (typeof message !== 'object' || message === null) {
    throw new TemplateError('each message must be an object')
  }
  const { role, content, tool_calls: toolCalls } = message as Record<string, unknown>
  if (typeof role !== 'string' || role.length === 0) {
    throw new TemplateError('each message needs a role')
  }
  let text: string
  if (typeof content === 'string') text = content
  else if (Array.isArray(content)) text = content.map(renderPart).join('\n')
  else if (content === null || content === undefined) text = ''
  else throw new TemplateError('message content must be a string or an array of parts')
  if (toolCalls !== undefined) text += `${text ? '\n' : ''}${JSON.stringify(toolCalls)}`
  return `<|${role}|>\n${text}\n`
}

function renderPart(part: unknown): string {
  if (typeof part !== 'object' || part === null) {
    throw new TemplateError('content parts must be objects')
  }
  const { type, text } = part as Record<string, unknown>
  if (type === 'text') {
    if (typeof text !== 'string') throw new TemplateError('text parts need a string text')
    return text
  }
  return `[${typeof type === 'string' ? type : 'part'}]`
}
