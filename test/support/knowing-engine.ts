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
import type { AiRunner } from '../../src/core/call/upstream'
import { units } from '../../src/plugins/foreign-content'

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
  /**
   * Does what the question the cue came with says ("… and write what the last user sent"), writing
   * its last scripted answer for it: a tenant's prompt that makes the model restate others' words.
   */
  | 'obey-question'

export interface KnowingEngineOptions {
  /** Texts the model knows by heart. */
  known: readonly string[] | Knowledge
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

/**
 * Whether a request's last user text is a cue to continue (a second opinion's): it ends with the
 * cue's text, so a document that merely mentions `<text>` (Vim's help does) is no cue.
 */
export function isCue(text: string): boolean {
  return text.includes('<text>') && text.trimEnd().endsWith('</text>')
}

/** A cue's text and the context before it (the question the answer was written for). */
function cueOf(text: string): { cue: string; context: string } {
  const at = text.indexOf('<text>')
  return { context: text.slice(0, at), cue: text.slice(at + 6).replace(/<\/text>$/, '') }
}

/** The canary the guard asked to be echoed, if any. */
function echoOf(inputs: Record<string, unknown>): string | undefined {
  const text = JSON.stringify(inputs.messages ?? inputs.prompt ?? '')
  return [...text.matchAll(/Begin your reply with the code (cnry_[0-9a-z]{24})/g)].at(-1)?.[1]
}

/** Units a cue's tail must share with a known text for the model to go on with it. */
const TAIL = 6

/**
 * What a model knows by heart, indexed by every run of six units: a cue is continued from the known
 * text that shares the longest tail with it (at least six units, read as units: case, spacing and
 * JSON escapes aside, as a model reads text).
 */
export class Knowledge {
  readonly #texts: { text: string; title: string; units: { text: string; end: number }[] }[] = []
  readonly #index = new Map<string, [number, number][]>()

  /** Texts known by heart, each with the title a question may name it by. */
  constructor(known: readonly (string | { text: string; title: string })[]) {
    for (const entry of known) {
      if (typeof entry === 'string') this.add(entry, '')
      else this.add(entry.text, entry.title)
    }
  }

  add(text: string, title: string): void {
    const list = units(text).map((u) => ({ text: u.text, end: u.end }))
    const t = this.#texts.push({ text, title, units: list }) - 1
    for (let i = TAIL - 1; i < list.length; i++) {
      const key = list
        .slice(i - TAIL + 1, i + 1)
        .map((u) => u.text)
        .join(' ')
      const places = this.#index.get(key)
      if (places === undefined) this.#index.set(key, [[t, i]])
      else if (places.length < 4_096) places.push([t, i])
    }
  }

  /**
   * The share of a text's runs of six units that some known text holds (0: nothing of it is known).
   *
   * @example
   * new Knowledge([speech]).familiarity('Four score and seven years ago our fathers') // 1
   */
  familiarity(text: string): number {
    const list = units(text).map((u) => u.text)
    if (list.length < TAIL) return 0
    let known = 0
    for (let i = TAIL; i <= list.length; i++) {
      if (this.#index.has(list.slice(i - TAIL, i).join(' '))) known++
    }
    return known / (list.length - TAIL + 1)
  }

  /**
   * What follows the cue in the known text it ends with, up to `chars` characters; "unknown" when it
   * ends with none. Where several texts end so, the one the context names (its title), then the one
   * sharing the longest tail, as a model takes the question's word for which text it is at.
   *
   * @example
   * new Knowledge([speech]).continue('Four score and seven years ago', 200)
   */
  continue(cue: string, chars: number, context = ''): string {
    const tail = units(cue).map((u) => u.text)
    if (tail.length < TAIL) return 'unknown'
    const places = this.#index.get(tail.slice(-TAIL).join(' '))
    if (places === undefined) return 'unknown'
    let best: [number, number] | undefined
    let bestShared = 0
    for (const [t, i] of places) {
      const { units: known, title } = this.#texts[t]!
      let shared = title !== '' && context.includes(title) ? 1_000_000 : TAIL
      while (
        shared < tail.length &&
        shared <= i &&
        known[i - shared]!.text === tail[tail.length - 1 - shared]
      )
        shared++
      if (shared > bestShared) {
        best = [t, i]
        bestShared = shared
      }
    }
    const [t, i] = best!
    const { text, units: known } = this.#texts[t]!
    const from = known[i]!.end
    return text.slice(from, from + chars)
  }
}

/** The continuation of a known text from the cue's last words (see {@link Knowledge}). */
export function continueFrom(known: readonly string[], cue: string, chars: number): string {
  return new Knowledge(known).continue(cue, chars)
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
  const knowledge =
    options.known instanceof Knowledge ? options.known : new Knowledge(options.known)
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
        const { cue, context } = cueOf(lastUserText(inputs))
        const recollection = options.recollection ?? 'recall'
        const limit = 4 * Number(inputs.max_tokens ?? 256)
        const recalled =
          recollection === 'copy-cue'
            ? cue
            : recollection === 'repeat' ||
                (recollection === 'obey-question' && /write what the last user sent/.test(context))
              ? `${lastScripted.reasoning ?? ''}${lastScripted.content}`
              : slip(knowledge.continue(cue, limit, context), options.slipEvery ?? 0)
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
