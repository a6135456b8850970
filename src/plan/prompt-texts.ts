/**
 * @module The texts of a request that the foreign-content check remembers: what a tenant sent, not
 * what a model said.
 *
 * Assistant turns are left out on purpose: they are model output, which the same model may produce
 * again, word for word, for another tenant asking the same question; remembering them would make an
 * honest answer look like a leak. Everything a tenant supplies — system prompts, user turns, tool
 * results, a legacy `prompt` — is remembered, each text on its own (no shingle spans two messages).
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
