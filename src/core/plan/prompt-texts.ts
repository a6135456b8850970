/**
 * @module The texts of a request that the foreign-content check remembers: what a tenant sent, not
 * what a model said.
 *
 * Assistant turns are left out on purpose: they are model output, which the same model may produce
 * again, word for word, for another tenant asking the same question; remembering them would make an
 * honest answer look like a leak. Everything a tenant supplies — system prompts, user turns, tool
 * results, a legacy `prompt` — is remembered, each text on its own (no shingle spans two messages).
 * The assistant turns still count as the request's own text (an answer that restates its own earlier
 * tool-call arguments quotes nobody else): {@link assistantTexts}.
 */

/**
 * The remembered texts of a request's inputs (already validated by the ceiling's reading).
 *
 * @example
 * promptTexts({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] })
 * // ['Be brief.', 'Hi']
 */
export function promptTexts(inputs: Record<string, unknown>): string[] {
  const texts: string[] = []
  if (Array.isArray(inputs.messages)) {
    for (const message of inputs.messages as unknown[]) {
      if (typeof message !== 'object' || message === null) continue
      const { role, content } = message as { role?: unknown; content?: unknown }
      if (role === 'assistant') continue
      if (typeof content === 'string') texts.push(content)
      else if (Array.isArray(content)) {
        for (const part of content as unknown[]) {
          const text = (part as { text?: unknown } | null)?.text
          if (typeof text === 'string') texts.push(text)
        }
      }
    }
  }
  if (typeof inputs.prompt === 'string') texts.push(inputs.prompt)
  return texts.filter((text) => text !== '')
}

/**
 * The texts of a request's assistant turns — their content and their tool calls' arguments (OpenAI's
 * `function.arguments` and Workers AI's `arguments`, a string or an object) — which an answer may
 * restate as its own text, though they are never remembered as the tenant's.
 *
 * @example
 * assistantTexts({ messages: [{ role: 'assistant', content: '', tool_calls: [{ function: { name: 'f', arguments: '{"q":1}' } }] }] })
 * // ['{"q":1}']
 */
export function assistantTexts(inputs: Record<string, unknown>): string[] {
  const texts: string[] = []
  if (!Array.isArray(inputs.messages)) return texts
  for (const message of inputs.messages as unknown[]) {
    if (typeof message !== 'object' || message === null) continue
    const { role, content, tool_calls } = message as Record<string, unknown>
    if (role !== 'assistant') continue
    if (typeof content === 'string') texts.push(content)
    else if (Array.isArray(content)) {
      for (const part of content as unknown[]) {
        const text = (part as { text?: unknown } | null)?.text
        if (typeof text === 'string') texts.push(text)
      }
    }
    if (!Array.isArray(tool_calls)) continue
    for (const call of tool_calls as unknown[]) {
      if (typeof call !== 'object' || call === null) continue
      const fn = (call as { function?: unknown }).function
      const args =
        typeof fn === 'object' && fn !== null
          ? (fn as { arguments?: unknown }).arguments
          : (call as { arguments?: unknown }).arguments
      if (typeof args === 'string') texts.push(args)
      else if (typeof args === 'object' && args !== null) texts.push(JSON.stringify(args))
    }
  }
  return texts.filter((text) => text !== '')
}
