import { describe, expect, it } from 'vitest'
import type { SimEngine } from '../../sim/engine'
import { chatText, quickEngine as engine, GLM, LLAMA, readSse, userMessage } from './helpers'

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'lookup_order',
      description: 'Finds an order.',
      parameters: {
        type: 'object',
        properties: {
          order_id: { type: 'string' },
          limit: { type: 'integer' },
          verbose: { type: 'boolean' },
        },
        required: ['order_id', 'limit'],
      },
    },
  },
]

/** The chat answer's message and finish, whole. */
async function whole(sim: SimEngine, extra: Record<string, unknown>) {
  const out = (await sim.binding('a').run(GLM, userMessage('Where is order 7?', extra))) as {
    choices: { message: Record<string, unknown>; finish_reason: string }[]
  }
  return out.choices[0]!
}

describe('tool calls', () => {
  it('should call the tool a request forces, arguments shaped by its schema, whole and streamed', async () => {
    const { message, finish_reason } = await whole(engine({ seed: 7 }), {
      tools: TOOLS,
      tool_choice: 'required',
    })
    expect(finish_reason).toBe('tool_calls')
    const calls = message.tool_calls as {
      id: string
      type: string
      function: { name: string; arguments: string }
    }[]
    expect(calls).toHaveLength(1)
    expect(calls[0]!.type).toBe('function')
    expect(calls[0]!.function.name).toBe('lookup_order')
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ order_id: 'simulated', limit: 1 })
    const streamed = await readSse(
      await engine({ seed: 7 })
        .binding('a')
        .run(
          GLM,
          userMessage('Where is order 7?', { tools: TOOLS, tool_choice: 'required', stream: true }),
        ),
    )
    expect(streamed.finishReason).toBe('tool_calls')
    const deltas = (streamed.events as { choices?: unknown }[]).flatMap(
      (e) =>
        ((e.choices as { delta: { tool_calls?: unknown[] } }[] | undefined)?.[0]?.delta
          .tool_calls ?? []) as {
          index: number
          id: string
          function: { name: string; arguments: string }
        }[],
    )
    expect(deltas).toEqual([{ index: 0, ...calls[0] }])
    // Whole and streamed, the same text beside the call.
    expect(streamed.content).toBe(message.content)
  })

  it('should call a tool left to the model when the user names it, or the one named in tool_choice', async () => {
    const sim = engine({ seed: 7 })
    const named = (await sim
      .binding('a')
      .run(GLM, userMessage('Please use lookup_order for order 7.', { tools: TOOLS }))) as {
      choices: { message: { tool_calls?: { function: { name: string } }[] } }[]
    }
    expect(named.choices[0]!.message.tool_calls?.[0]?.function.name).toBe('lookup_order')
    const forced = await whole(engine({ seed: 7 }), {
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'lookup_order' } },
    })
    expect(forced.finish_reason).toBe('tool_calls')
  })

  // Must not fire: without tools, none callable, none wanted (auto, unnamed) or refused (none).
  it('should leave an answer that calls no tool exactly as it was', async () => {
    for (const extra of [
      {},
      { tools: [] },
      { tools: [{ type: 'function', function: {} }], tool_choice: 'required' },
      { tools: TOOLS },
      { tools: TOOLS, tool_choice: 'auto' },
      { tools: TOOLS, tool_choice: 'none' },
    ]) {
      const { message, finish_reason } = await whole(engine({ seed: 7 }), extra)
      expect(message.tool_calls, JSON.stringify(extra)).toBeUndefined()
      expect(finish_reason).not.toBe('tool_calls')
    }
    // The whole replay of test/sim/wire.test.ts ('determinism') and every seeded figure of the other
    // simulator tests run without tools: they hold the rest.
    const plain = await whole(engine({ seed: 7 }), {})
    expect(chatText({ choices: [plain] }).content.length).toBeGreaterThan(0)
  })

  it('should give a legacy model no tool call', async () => {
    const out = (await engine()
      .binding('a')
      .run(LLAMA, userMessage('hi', { tools: TOOLS }))) as Record<string, unknown>
    expect(out.response).toBeTypeOf('string')
    expect(out.tool_calls).toBeUndefined()
  })
})
