/**
 * @module One measurement request: random filler in a script (nothing of anyone's data), a fixed
 * question, and the guard's own echo directive for a fresh canary, placed exactly as the guard places
 * it (`injectCanary`).
 */

import {
  CANARY_ALPHABET,
  CANARY_BODY_LENGTH,
  CANARY_PREFIX,
  countTokens,
  injectCanary,
} from '../../core'
import type { Rng } from '../probe/random'
import type { Cell, Script } from './directive-settings'

/** What one request sends and what its answer is read against. */
export interface DirectiveRequest {
  /** The user message: filler, question, the guard's directive last. */
  prompt: string
  /** This request's canary. */
  canary: string
  /** Extra body fields: `response_format` (JSON mode) or `tools`. */
  extra: Record<string, unknown>
  stream: boolean
  /** o200k tokens of the whole prompt. */
  promptTokens: number
}

/** The question after the filler, in the filler's language (ours: no user text is ever sent). */
const QUESTIONS: Record<Script, string> = {
  latn: 'Which word appears most often in the text above? Answer in one or two sentences.',
  cyrl: 'Какое слово чаще всего встречается в тексте выше? Ответьте одним-двумя предложениями.',
  hans: '上面的文字中哪个词出现得最多？请用一两句话回答。',
}

const JSON_ASK = 'Answer as one JSON object with a member "answer".'

/** A tool the model may call: offered, never needed. */
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'lookup_word',
      description: 'Looks a word up in a dictionary.',
      parameters: {
        type: 'object',
        properties: { word: { type: 'string' } },
        required: ['word'],
      },
    },
  },
]

const LETTERS: Record<Exclude<Script, 'hans'>, string> = {
  latn: 'abcdefghijklmnopqrstuvwxyz',
  cyrl: 'абвгдежзийклмнопрстуфхцчшщъыьэюя',
}

/** One random word of the script: 2–9 letters, or 1–3 Han characters of the common block. */
function word(script: Script, rng: Rng): string {
  if (script === 'hans') {
    let out = ''
    for (let n = rng.int(1, 3); n > 0; n--) out += String.fromCharCode(rng.int(0x4e00, 0x9fa5))
    return out
  }
  return rng.chars(LETTERS[script], rng.int(2, 9))
}

/** Sentences of random words until `chars` characters, a paragraph every five sentences. */
function filler(script: Script, chars: number, rng: Rng): string {
  const parts: string[] = []
  let size = 0
  for (let sentence = 0; size < chars; sentence++) {
    const words: string[] = []
    for (let n = rng.int(8, 16); n > 0; n--) words.push(word(script, rng))
    const text =
      script === 'hans'
        ? `${words.join('')}。`
        : `${words.join(' ').replace(/^./, (c) => c.toUpperCase())}. `
    const end = sentence % 5 === 4 ? '\n\n' : ''
    parts.push(text + end)
    size += text.length + end.length
  }
  return parts.join('').trim()
}

/**
 * A canary of the guard's shape (`cnry_` and 24 base32 characters) from `rng`: the measurement needs
 * the shape a model sees, not the guard's signature.
 */
function canaryFrom(rng: Rng): string {
  return CANARY_PREFIX + rng.chars(CANARY_ALPHABET, CANARY_BODY_LENGTH)
}

/**
 * The request of one sample of `cell`: filler of about `cell.length` o200k tokens, the question, and
 * the guard's directive for a fresh canary (the JSON-mode directive in JSON mode, the cell's wording
 * otherwise).
 *
 * @example
 * const request = await buildRequest({ length: 200, format: 'plain', delivery: 'stream', script: 'latn', wording: 'note-first' }, rng)
 */
export async function buildRequest(cell: Cell, rng: Rng): Promise<DirectiveRequest> {
  const sample = filler(cell.script, 4_000, rng)
  const charsPerToken = sample.length / Math.max(1, await countTokens([sample]))
  const text = filler(cell.script, Math.ceil(cell.length * charsPerToken), rng)
  const question =
    cell.format === 'json' ? `${QUESTIONS[cell.script]} ${JSON_ASK}` : QUESTIONS[cell.script]
  const canary = canaryFrom(rng)
  const inputs = injectCanary(
    { messages: [{ role: 'user', content: `${text}\n\n${question}` }] },
    canary,
    cell.format === 'json' ? 'json' : 'text',
    cell.wording ?? 'reply-first',
  )
  const [message] = inputs.messages as { content: string }[]
  const prompt = message?.content ?? ''
  const extra: Record<string, unknown> =
    cell.format === 'json'
      ? { response_format: { type: 'json_object' } }
      : cell.format === 'tools'
        ? { tools: TOOLS, tool_choice: 'auto' }
        : {}
  // Sampling as the deployment serves its users (the context probe pins temperature 0).
  extra.temperature = undefined
  return {
    prompt,
    canary,
    extra,
    stream: cell.delivery === 'stream',
    promptTokens: await countTokens([prompt]),
  }
}
