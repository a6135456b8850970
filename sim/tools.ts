/**
 * @module The simulated model's tool call: when a chat request offers callable tools and wants one —
 * `tool_choice` forces it (`required`, or a function by name), or, left to the model (`auto`), a user
 * message names the function — the answer calls it, with arguments its own JSON schema shapes. Drawn
 * from no random stream, so every figure a request without that call gets stays as it was.
 */

/** One tool call of an answer, in the chat-completions shape. */
export interface SimToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

/**
 * The call the model makes, or undefined: no function offered, `tool_choice: 'none'`, or left to the
 * model with no user message naming an offered function.
 *
 * @example
 * toolCallFor({ tools, tool_choice: 'required', messages }, 'call_sim-1')
 * // { id: 'call_sim-1', type: 'function', function: { name: 'lookup', arguments: '{}' } }
 */
export function toolCallFor(
  inputs: { tools?: unknown; tool_choice?: unknown; messages?: unknown },
  id: string,
): SimToolCall | undefined {
  const offered = functionsOf(inputs.tools)
  const choice = inputs.tool_choice
  let chosen: (typeof offered)[number] | undefined
  if (choice === 'none') return undefined
  if (choice === 'required') chosen = offered[0]
  else if (typeof choice === 'object' && choice !== null) {
    const name = (choice as { function?: { name?: unknown } }).function?.name
    chosen = offered.find((f) => f.name === name)
  } else {
    const asked = userText(inputs.messages)
    chosen = offered.find((f) => asked.includes(f.name))
  }
  if (!chosen) return undefined
  const args = JSON.stringify(argumentsFor(chosen.parameters))
  return { id, type: 'function', function: { name: chosen.name, arguments: args } }
}

/** The functions `tools` offers, with a name. */
function functionsOf(tools: unknown): { name: string; parameters: unknown }[] {
  if (!Array.isArray(tools)) return []
  return tools.flatMap((tool) => {
    const fn = (tool as { function?: { name?: unknown; parameters?: unknown } } | null)?.function
    return typeof fn?.name === 'string' && fn.name !== ''
      ? [{ name: fn.name, parameters: fn.parameters }]
      : []
  })
}

/** Every user message's text, joined. */
function userText(messages: unknown): string {
  if (!Array.isArray(messages)) return ''
  return messages
    .filter((m) => (m as { role?: unknown } | null)?.role === 'user')
    .map((m) => (m as { content?: unknown }).content)
    .map((c) => (typeof c === 'string' ? c : JSON.stringify(c ?? '')))
    .join('\n')
}

/** A value for each required property (or the first, when none is required), by its schema type. */
function argumentsFor(parameters: unknown): Record<string, unknown> {
  const schema = parameters as { properties?: unknown; required?: unknown } | undefined
  const properties =
    schema && typeof schema.properties === 'object' && schema.properties !== null
      ? (schema.properties as Record<string, { type?: unknown } | undefined>)
      : {}
  const names = Object.keys(properties)
  const required = Array.isArray(schema?.required)
    ? schema.required.filter((n): n is string => typeof n === 'string' && n in properties)
    : []
  const out: Record<string, unknown> = {}
  for (const name of required.length > 0 ? required : names.slice(0, 1)) {
    out[name] = sample(properties[name]?.type)
  }
  return out
}

function sample(type: unknown): unknown {
  if (type === 'number' || type === 'integer') return 1
  if (type === 'boolean') return true
  if (type === 'array') return []
  if (type === 'object') return {}
  return 'simulated'
}
