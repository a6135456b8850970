/**
 * @module The simulated model's tool call: when a chat request offers callable tools, the answer calls
 * the first one, with arguments its own JSON schema shapes. Drawn from no random stream, so every
 * figure a request without tools gets (seeded timings, splits, quotes) stays as it was.
 */

/** One tool call of an answer, in the chat-completions shape. */
export interface SimToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

/**
 * The call the model makes to the first function in `tools`, or undefined when the request offers
 * none (no `tools`, an empty list, or no function with a name).
 *
 * @example
 * toolCallFor([{ type: 'function', function: { name: 'lookup' } }], 'call_sim-1')
 * // { id: 'call_sim-1', type: 'function', function: { name: 'lookup', arguments: '{}' } }
 */
export function toolCallFor(tools: unknown, id: string): SimToolCall | undefined {
  if (!Array.isArray(tools)) return undefined
  for (const tool of tools) {
    const fn = (tool as { type?: unknown; function?: unknown } | null)?.function as
      | { name?: unknown; parameters?: unknown }
      | undefined
    if (typeof fn?.name !== 'string' || fn.name === '') continue
    return {
      id,
      type: 'function',
      function: { name: fn.name, arguments: JSON.stringify(argumentsFor(fn.parameters)) },
    }
  }
  return undefined
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
