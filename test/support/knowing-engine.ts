/**
 * @module A scripted engine that knows texts by heart, for the second opinion's tests and the
 * held-apart evaluation: it answers ordinary requests from a script, and a request whose prompt ends
 * with a fragment of a text it knows (a cue) by continuing that text, verbatim, from there — as a model
 * continues what it memorised. It echoes the guard's directive like a model that follows it, takes a
 * plausible prefill on the virtual clock, and streams or answers whole as asked. Its adversarial
 * variants are what a second opinion must not trust: copying the cue, and answering the same whatever
 * it is asked (stale reads that repeat).
 */
import type { VirtualClock } from '../../sim/clock'
import type { AiRunner } from '../../src/call/upstream'
import { units } from '../../src/fingerprint'

const MODEL = '@cf/zai-org/glm-5.3'
const utf8 = new TextEncoder()

/** An answer's channels, as the engine writes them (the echo is added by the engine). */
export interface Written {
  reasoning?: string
  content: string
}

/** How the engine answers what its script does not. */
export type Recollection =
  /** Continues a text it knows from the cue's last words; "unknown" otherwise. */
  | 'recall'
  /** Writes the cue back (a model copying from its prompt). */
  | 'copy-cue'
  /** Writes its last scripted answer again, whatever it is asked (stale reads that repeat). */
  | 'repeat'

export interface KnowingEngineOptions {
  /** Texts the model knows by heart. */
  known: readonly string[]
  /** The scripted answer of an ordinary request; undefined: the request is answered from memory. */
  script?: (inputs: Record<string, unknown>) => Written | undefined
  clock?: VirtualClock
  /** @default 'recall' */
  recollection?: Recollection
  /**
   * Words of a continuation the engine gets wrong, one in this many (0: verbatim): a model's recall
   * of a text is not always word for word. @default 0
   */
  slipEvery?: number
  /** Something written into every continuation (another request's canary, for a poisoned engine). */
  inject?: () => string | undefined
}

/** The engine, with every request it was sent. */
export interface KnowingEngine extends AiRunner {
  readonly requests: Record<string, unknown>[]
}

/** The visible text of a request's last user message, without the guard's echo directive. */
export function lastUserText(inputs: Record<string, unknown>): string {
  const messages = (inputs.messages ?? []) as { role: string; content?: unknown }[]
  const last = [...messages].reverse().find((m) => m.role === 'user')
  const text = typeof last?.content === 'string' ? last.content : ''
  // The tenant's prefix marker first (cache isolation), the echo directive last.
  return text
    .replace(/^cnry_[0-9a-z]{24} /, '')
    .replace(/\s*(?:Note the code|Begin your reply with the code) cnry_[\s\S]*$/, '')
}

/** The canary the guard asked to be echoed, if any. */
function echoOf(inputs: Record<string, unknown>): string | undefined {
  const text = JSON.stringify(inputs.messages ?? inputs.prompt ?? '')
  return [...text.matchAll(/Begin your reply with the code (cnry_[0-9a-z]{24})/g)].at(-1)?.[1]
}

/**
 * The continuation of a known text from the cue's last words: the longest tail of the cue (at least
 * six units) found verbatim in a known text, then what follows it there.
 */
export function continueFrom(known: readonly string[], cue: string, chars: number): string {
  const list = units(cue)
  for (let take = Math.min(14, list.length); take >= 6; take--) {
    const tail = cue.slice(list[list.length - take]!.start, list.at(-1)!.end)
    for (const text of known) {
      const at = text.indexOf(tail)
      if (at >= 0) return text.slice(at + tail.length, at + tail.length + chars)
    }
  }
  return 'unknown'
}

/** Every `every`-th word of `text` replaced by another: a recall that is not word for word. */
function slip(text: string, every: number): string {
  if (every <= 0) return text
  let i = 0
  return text.replace(/\p{L}+/gu, (word) => (++i % every === 0 ? `${word}x` : word))
}

/**
 * The engine.
 *
 * @example
 * const engine = knowingEngine({ known: [GETTYSBURG], script: () => ({ content: 'Hello.' }) })
 * const ai = guard.wrap(engine, { tenant: 'b' })
 */
export function knowingEngine(options: KnowingEngineOptions): KnowingEngine {
  const requests: Record<string, unknown>[] = []
  let lastScripted: Written = { content: 'unknown' }
  return {
    requests,
    run: async (_model, inputs) => {
      requests.push(inputs)
      const prompt = JSON.stringify(inputs.messages ?? inputs.prompt ?? '')
      options.clock?.advance(150 + Math.ceil(prompt.length / 4 / 20))
      const scripted = options.script?.(inputs)
      let written: Written
      if (scripted) {
        written = scripted
        lastScripted = scripted
      } else {
        const cue = lastUserText(inputs).replace(/^<text>|<\/text>$/g, '')
        const recollection = options.recollection ?? 'recall'
        const limit = 4 * Number(inputs.max_tokens ?? 256)
        const recalled =
          recollection === 'copy-cue'
            ? cue
            : recollection === 'repeat'
              ? `${lastScripted.reasoning ?? ''}${lastScripted.content}`
              : slip(continueFrom(options.known, cue, limit), options.slipEvery ?? 0)
        written = {
          reasoning: 'I am to continue the text.',
          content: `${recalled} ${options.inject?.() ?? ''}`,
        }
      }
      const echo = echoOf(inputs)
      const content = echo ? `${echo}\n${written.content}` : written.content
      return inputs.stream === true
        ? sseStream(written.reasoning ?? '', content, options.clock)
        : completion(written.reasoning ?? '', content)
    },
  }
}

function completion(reasoning: string, content: string): Record<string, unknown> {
  return {
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: MODEL,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', reasoning_content: reasoning, content },
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
  }
}

function chunk(delta: Record<string, unknown>): string {
  const event = { id: 'c', object: 'chat.completion.chunk', created: 1, model: MODEL }
  return `data: ${JSON.stringify({ ...event, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`
}

/** Pieces of 3–24 characters, as a model's tokens come. */
export function pieces(text: string, seed: number): string[] {
  const out: string[] = []
  let x = seed
  for (let i = 0; i < text.length; ) {
    x = (x * 48_271) % 2_147_483_647
    const n = 3 + (x % 22)
    out.push(text.slice(i, i + n))
    i += n
  }
  return out
}

function sseStream(
  reasoning: string,
  content: string,
  clock: VirtualClock | undefined,
): ReadableStream<Uint8Array> {
  const events: string[] = []
  for (const p of pieces(reasoning, 7)) events.push(chunk({ reasoning_content: p }))
  for (const p of pieces(content, 11)) events.push(chunk({ content: p }))
  events.push('data: [DONE]\n\n')
  let i = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      clock?.advance(20)
      if (i < events.length) controller.enqueue(utf8.encode(events[i++]!))
      else controller.close()
    },
  })
}
