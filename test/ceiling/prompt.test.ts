import { describe, expect, it } from 'vitest'
import { promptPieces, templateOverhead } from '../../src/core/ceiling/prompt'
import { GuardError } from '../../src/core/errors'

function rejection(inputs: Record<string, unknown>): GuardError {
  try {
    promptPieces(inputs)
  } catch (error) {
    if (error instanceof GuardError) return error
    throw error
  }
  throw new Error('promptPieces accepted the input')
}

describe('prompt pieces', () => {
  it('should take role and text of string-content messages', () => {
    const pieces = promptPieces({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
    })
    expect(pieces).toEqual({
      texts: ['system', 'Be brief.', 'user', 'Hello'],
      messages: 2,
      tools: 0,
      nonTextParts: 0,
    })
  })

  it('should take text parts and charge image and audio parts as non-text', () => {
    const pieces = promptPieces({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
            { type: 'text', text: 'Answer in Norwegian.' },
          ],
        },
      ],
    })
    expect(pieces.texts).toEqual(['user', 'What is in this picture?', 'Answer in Norwegian.'])
    expect(pieces.nonTextParts).toBe(2)
    // The base64 payload is not text the model reads as tokens.
    expect(pieces.texts.join('')).not.toContain('AAAA')
  })

  it('should take assistant tool calls, tool results, names and reasoning sent back', () => {
    const toolCalls = [
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'weather', arguments: '{"city":"Oslo"}' },
      },
    ]
    const pieces = promptPieces({
      messages: [
        { role: 'user', content: 'Weather in Oslo?', name: 'kari' },
        {
          role: 'assistant',
          content: null,
          tool_calls: toolCalls,
          reasoning_content: 'Use the tool.',
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":-3}' },
      ],
    })
    expect(pieces.texts).toEqual([
      'user',
      'kari',
      'Weather in Oslo?',
      'assistant',
      'Use the tool.',
      JSON.stringify(toolCalls),
      'tool',
      'call_1',
      '{"temp":-3}',
    ])
    expect(pieces.messages).toBe(3)
  })

  it('should serialize tools, functions and the response-format schema as JSON', () => {
    const tool = { type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }
    const fn = { name: 'legacy', parameters: { type: 'object' } }
    const format = { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }
    const pieces = promptPieces({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [tool],
      functions: [fn],
      response_format: format,
    })
    expect(pieces.texts).toEqual([
      'user',
      'hi',
      JSON.stringify(tool),
      JSON.stringify(fn),
      JSON.stringify(format),
    ])
    expect(pieces.tools).toBe(2)
  })

  it('should take a legacy prompt as one message', () => {
    expect(promptPieces({ prompt: 'Tell me a story' })).toEqual({
      texts: ['Tell me a story'],
      messages: 1,
      tools: 0,
      nonTextParts: 0,
    })
  })

  it('should keep special-token text as ordinary text', () => {
    const pieces = promptPieces({ messages: [{ role: 'user', content: 'a <|endoftext|> b' }] })
    expect(pieces.texts).toEqual(['user', 'a <|endoftext|> b'])
  })

  const invalid: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['messages not an array', { messages: 'hi' }, 'messages', /messages must be an array/],
    ['a message that is not an object', { messages: ['hi'] }, 'messages[0]', /must be an object/],
    ['a message without a role', { messages: [{ content: 'hi' }] }, 'messages[0].role', /role/],
    ['a numeric role', { messages: [{ role: 1, content: 'x' }] }, 'messages[0].role', /string/],
    [
      'numeric content',
      { messages: [{ role: 'user', content: 42 }] },
      'messages[0].content',
      /string, an array of content parts, or null/,
    ],
    [
      'object content',
      { messages: [{ role: 'user', content: { text: 'hi' } }] },
      'messages[0].content',
      /string, an array/,
    ],
    [
      'a part without a type',
      { messages: [{ role: 'user', content: [{ text: 'hi' }] }] },
      'messages[0].content[0]',
      /string "type"/,
    ],
    [
      'a text part without text',
      { messages: [{ role: 'user', content: [{ type: 'text', text: 7 }] }] },
      'messages[0].content[0].text',
      /must be a string/,
    ],
    [
      'tool_calls not an array',
      { messages: [{ role: 'assistant', tool_calls: {} }] },
      'messages[0].tool_calls',
      /must be an array/,
    ],
    [
      'a numeric name',
      { messages: [{ role: 'user', name: 3, content: 'x' }] },
      'messages[0].name',
      /string/,
    ],
    ['no messages and no prompt', {}, 'messages', /no messages and no prompt/],
    ['an empty messages array', { messages: [] }, 'messages', /no messages and no prompt/],
    ['a non-string prompt', { prompt: ['hi'] }, 'prompt', /prompt must be a string/],
    [
      'tools not an array',
      { prompt: 'x', tools: { name: 'a' } },
      'tools',
      /tools must be an array/,
    ],
    ['functions not an array', { prompt: 'x', functions: 'f' }, 'functions', /must be an array/],
    ['a tool JSON cannot carry', { prompt: 'x', tools: [{ n: 1n }] }, 'tools[0]', /JSON/],
  ]
  for (const [name, inputs, param, message] of invalid) {
    it(`should reject ${name} as invalid_request on ${param}`, () => {
      const error = rejection(inputs)
      expect(error.code).toBe('invalid_request')
      expect(error.status).toBe(400)
      expect(error.param).toBe(param)
      expect(error.message).toMatch(message)
    })
  }
})

// The template's figures, as src/core/ceiling/prompt.ts documents them (docs/how-it-decides.md: image
// and audio parts are charged 1,024 tokens each): the contract these tests pin.
const PRIMING = 3 // the assistant header appended once
const PER_MESSAGE = 4 // role markers and separators around each message
const PER_TOOL = 8 // the wrapper around each tool's JSON
const PER_NON_TEXT_PART = 1_024 // a flat figure per image, audio or other non-text part

describe('template overhead', () => {
  it('should charge priming, each message, each tool and each non-text part', () => {
    const pieces = { texts: [], messages: 3, tools: 2, nonTextParts: 1 }
    expect(templateOverhead(pieces)).toBe(
      PRIMING + 3 * PER_MESSAGE + 2 * PER_TOOL + PER_NON_TEXT_PART,
    )
  })

  it('should charge only priming and the message for a bare prompt', () => {
    expect(templateOverhead(promptPieces({ prompt: 'x' }))).toBe(PRIMING + PER_MESSAGE)
  })
})
