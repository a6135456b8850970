import { describe, expect, it } from 'vitest'
import { GuardError } from '../../src/core/errors'
import {
  type Channel,
  cutEvent,
  type Frame,
  parseFrame,
  readTexts,
  replaceTexts,
} from '../../src/core/format/frames'
import type { SseEvent } from '../../src/core/format/sse'

/** The event the release writes for `frame` with `texts` (every case here says something). */
function withTexts(frame: Frame, texts: Partial<Record<Channel, string>>): SseEvent {
  const event = cutEvent(frame, texts)
  if (event === undefined) throw new Error('the written event was blank')
  return event
}

/** Whether the release leaves `event` out once its texts are cut: it says nothing. */
function isBlankEvent(event: SseEvent): boolean {
  return cutEvent(parseFrame(event), {}) === undefined
}

const CHAT_CHUNK = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1767225600,
  model: '@cf/zai-org/glm-5.3',
  system_fingerprint: 'fp',
  choices: [
    {
      index: 0,
      delta: {
        role: 'assistant',
        reasoning_content: 'thinking',
        content: 'Hello',
        tool_calls: [
          { index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"a"' } },
          { index: 2, function: { arguments: ':1}' } },
        ],
      },
      finish_reason: null,
    },
  ],
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
}

const LEGACY = { response: 'Hel', p: 'abcdef', usage: { prompt_tokens: 3 } }

function chatEvent(json: unknown = CHAT_CHUNK) {
  return { data: JSON.stringify(json), id: '5' }
}

describe('parseFrame', () => {
  it('should read every channel of a chat chunk', () => {
    const frame = parseFrame(chatEvent())
    expect(frame.done).toBe(false)
    expect(frame.format).toBe('chat')
    expect(frame.texts).toEqual({
      reasoning: 'thinking',
      content: 'Hello',
      'tool:0': '{"a"',
      'tool:2': ':1}',
      // Every other model-written string is a channel too (ids, roles and types are metadata).
      'field:choices/0/delta/tool_calls/0/function/name': 'f',
    })
    expect(frame.finishReason).toBeNull()
    expect(frame.usage).toEqual({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 })
  })

  it('should read a legacy event', () => {
    const frame = parseFrame({ data: JSON.stringify(LEGACY) })
    expect(frame.format).toBe('legacy')
    expect(frame.texts).toEqual({ content: 'Hel', 'field:p': 'abcdef' })
    expect(frame.usage).toEqual({ prompt_tokens: 3 })
    expect(frame.finishReason).toBeUndefined()
  })

  it('should recognise [DONE] and carry no texts', () => {
    const frame = parseFrame({ data: '[DONE]' })
    expect(frame).toEqual({ event: { data: '[DONE]' }, done: true, texts: {} })
  })

  it('should read a usage-only chat chunk (empty choices) with no texts', () => {
    const frame = parseFrame({ data: JSON.stringify({ choices: [], usage: { total_tokens: 4 } }) })
    expect(frame.format).toBe('chat')
    expect(frame.texts).toEqual({})
    expect(frame.usage).toEqual({ total_tokens: 4 })
  })

  it('should read an unknown object shape without format, its strings as field channels', () => {
    const frame = parseFrame({ data: '{"status":"ok","id":"x","n":1}' })
    expect(frame.format).toBeUndefined()
    expect(frame.texts).toEqual({ 'field:status': 'ok' })
  })

  it('should read reasoning under another name (vLLM delta.reasoning) and a refusal as channels', () => {
    const frame = parseFrame({
      data: JSON.stringify({ choices: [{ index: 0, delta: { reasoning: 'r', refusal: 'no' } }] }),
    })
    expect(frame.texts).toEqual({
      'field:choices/0/delta/reasoning': 'r',
      'field:choices/0/delta/refusal': 'no',
    })
    const rewritten = withTexts(frame, { 'field:choices/0/delta/reasoning': 'R' })
    expect(JSON.parse(rewritten.data).choices[0].delta).toEqual({ reasoning: 'R', refusal: 'no' })
  })

  it('should throw upstream_error on non-JSON data without quoting it', () => {
    const secret = 'another tenant prompt cnry_0000000000000000000000000'
    try {
      parseFrame({ data: secret })
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(GuardError)
      expect((e as GuardError).code).toBe('upstream_error')
      expect((e as GuardError).message).not.toContain('tenant')
      expect((e as GuardError).message).not.toContain('cnry_')
    }
  })

  it('should throw upstream_error on JSON that is not an object, and on several choices', () => {
    for (const data of ['[1,2]', '42', 'null', '"text"']) {
      expect(() => parseFrame({ data })).toThrow(GuardError)
    }
    const two = { choices: [{ delta: { content: 'a' } }, { delta: { content: 'b' } }] }
    expect(() => parseFrame({ data: JSON.stringify(two) })).toThrow(/more than one choice/)
  })
})

describe('withTexts', () => {
  it('should replace only the given chat channels and keep every other field', () => {
    const frame = parseFrame(chatEvent())
    const event = withTexts(frame, { content: 'Hi', 'tool:2': '' })
    expect(event.id).toBe('5')
    const json = JSON.parse(event.data)
    const expected = structuredClone(CHAT_CHUNK)
    expected.choices[0]!.delta.content = 'Hi'
    expected.choices[0]!.delta.tool_calls[1]!.function.arguments = ''
    expect(json).toEqual(expected)
    expect(parseFrame(event).texts).toEqual({
      reasoning: 'thinking',
      content: 'Hi',
      'tool:0': '{"a"',
      'tool:2': '',
      'field:choices/0/delta/tool_calls/0/function/name': 'f',
    })
  })

  it('should not mutate the frame it rewrites', () => {
    const frame = parseFrame(chatEvent())
    withTexts(frame, { content: 'changed', reasoning: '' })
    expect(frame.json).toEqual(CHAT_CHUNK)
    expect(frame.texts.content).toBe('Hello')
  })

  it('should round-trip its own texts unchanged', () => {
    for (const event of [chatEvent(), { data: JSON.stringify(LEGACY) }]) {
      const frame = parseFrame(event)
      expect(JSON.parse(withTexts(frame, frame.texts).data)).toEqual(JSON.parse(event.data))
      expect(JSON.parse(withTexts(frame, {}).data)).toEqual(JSON.parse(event.data))
    }
  })

  it('should add a channel a chat chunk did not carry', () => {
    const chunk = { id: 'c', choices: [{ index: 0, delta: { reasoning_content: 'r' } }] }
    const event = withTexts(parseFrame({ data: JSON.stringify(chunk) }), {
      content: 'x',
      'tool:1': '{}',
    })
    expect(parseFrame(event).texts).toEqual({ reasoning: 'r', content: 'x', 'tool:1': '{}' })
  })

  it('should replace a legacy response and keep padding and usage', () => {
    const event = withTexts(parseFrame({ data: JSON.stringify(LEGACY) }), { content: '' })
    expect(JSON.parse(event.data)).toEqual({ ...LEGACY, response: '' })
  })

  it('should refuse text for a legacy reasoning channel and for [DONE]', () => {
    const legacy = parseFrame({ data: JSON.stringify(LEGACY) })
    expect(() => withTexts(legacy, { reasoning: 'x' })).toThrow(/reasoning/)
    const done = parseFrame({ data: '[DONE]' })
    expect(() => withTexts(done, { content: 'x' })).toThrow()
    expect(withTexts(done, {})).toEqual({ data: '[DONE]' })
  })
})

const CHAT_OUTPUT = {
  id: 'chatcmpl-2',
  object: 'chat.completion',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'answer',
        reasoning_content: 'why',
        tool_calls: [
          { id: 't0', type: 'function', function: { name: 'f', arguments: '{"q":1}' } },
          { id: 't1', type: 'function', function: { name: 'g', arguments: { k: 'v' } } },
        ],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 5, completion_tokens: 7 },
}

const LEGACY_OUTPUT = {
  response: { city: 'Paris' },
  tool_calls: [{ name: 'f', arguments: '{"x":2}' }],
  usage: { prompt_tokens: 1 },
}

describe('readTexts', () => {
  it('should read every text of a chat answer, structured arguments as JSON text', () => {
    expect(readTexts(CHAT_OUTPUT)).toEqual({
      format: 'chat',
      texts: {
        content: 'answer',
        reasoning: 'why',
        'tool:0': '{"q":1}',
        'tool:1': '{"k":"v"}',
        'field:choices/0/message/tool_calls/0/function/name': 'f',
        'field:choices/0/message/tool_calls/1/function/name': 'g',
      },
      usage: { prompt_tokens: 5, completion_tokens: 7 },
      finishReason: 'tool_calls',
    })
  })

  it('should read a legacy answer, a JSON-mode response as JSON text', () => {
    expect(readTexts({ response: 'Hi' })).toEqual({ format: 'legacy', texts: { content: 'Hi' } })
    expect(readTexts(LEGACY_OUTPUT).texts).toEqual({
      content: '{"city":"Paris"}',
      'tool:0': '{"x":2}',
      'field:tool_calls/0/name': 'f',
    })
  })

  it('should throw upstream_error on unknown shapes', () => {
    for (const output of [null, 'text', [1], { result: 'x' }, { choices: 'no' }]) {
      expect(() => readTexts(output)).toThrow(GuardError)
    }
  })
})

describe('replaceTexts', () => {
  it('should replace chat texts in a deep copy', () => {
    const original = structuredClone(CHAT_OUTPUT)
    const out = replaceTexts(original, {
      content: 'clean',
      'tool:1': '{"k":"w"}',
    }) as typeof CHAT_OUTPUT
    expect(original).toEqual(CHAT_OUTPUT)
    expect(out.choices[0]!.message.content).toBe('clean')
    expect(out.choices[0]!.message.reasoning_content).toBe('why')
    expect(out.choices[0]!.message.tool_calls[1]!.function.arguments).toEqual({ k: 'w' })
    expect(out.id).toBe('chatcmpl-2')
    expect(readTexts(out).texts['tool:0']).toBe('{"q":1}')
  })

  it('should replace legacy texts and keep their types', () => {
    const out = replaceTexts(LEGACY_OUTPUT, {
      content: '{"city":"Oslo"}',
      'tool:0': '{}',
    }) as Record<string, unknown>
    expect(out).toEqual({
      response: { city: 'Oslo' },
      tool_calls: [{ name: 'f', arguments: '{}' }],
      usage: { prompt_tokens: 1 },
    })
    expect(LEGACY_OUTPUT.response).toEqual({ city: 'Paris' })
  })

  it('should round-trip read then replace to an equal answer', () => {
    for (const output of [CHAT_OUTPUT, LEGACY_OUTPUT, { response: 'Hi', p: 'x' }]) {
      expect(replaceTexts(output, readTexts(output).texts)).toEqual(output)
    }
  })

  it('should fail closed when a structured field stops being JSON, and on unknown shapes', () => {
    expect(() => replaceTexts(LEGACY_OUTPUT, { content: '{"city":' })).toThrow(GuardError)
    expect(() => replaceTexts({ result: 'x' }, { content: '' })).toThrow(GuardError)
  })
})

describe('isBlankEvent', () => {
  const chunk = (choice: object, extra: object = {}) => ({
    data: JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [choice], ...extra }),
  })

  it('should call a chunk blank when its delta holds only emptied texts', () => {
    expect(isBlankEvent(chunk({ index: 0, delta: { content: '' }, finish_reason: null }))).toBe(
      true,
    )
    expect(isBlankEvent(chunk({ index: 0, delta: { reasoning_content: '', content: '' } }))).toBe(
      true,
    )
    expect(isBlankEvent({ data: '{"response":""}' })).toBe(true)
  })

  it('should keep a chunk that carries a role, a finish reason, usage or anything else', () => {
    const kept = [
      chunk({ index: 0, delta: { role: 'assistant', content: '' } }),
      chunk({ index: 0, delta: { content: '' }, finish_reason: 'stop' }),
      chunk({ index: 0, delta: { content: '' } }, { usage: { prompt_tokens: 1 } }),
      chunk({ index: 0, delta: { content: 'a' } }),
      chunk({ index: 0, delta: { content: '', tool_calls: [] } }),
      { data: '{"response":"","usage":{"prompt_tokens":1}}' },
      { data: '{"response":""}', id: '7' },
      { data: '[DONE]' },
    ]
    for (const event of kept) expect(isBlankEvent(event)).toBe(false)
  })
})
